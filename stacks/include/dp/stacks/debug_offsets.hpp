// CPython's _Py_DebugOffsets: the structure 3.13 and later put at the start
// of _PyRuntime so a reader outside the process can find its threads and
// frames. The structure itself changes between minor versions (3.14 added
// fields in the middle), so each known version has a table of where its
// fields sit (kLayouts); the values in it are the process's own offsets, and
// only those are followed. Checked before anything is followed: the cookie,
// a known version, not free-threaded, and every offset inside its struct.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include "dp/stacks/python_layout.hpp"
#include "dp/stacks/stacks.hpp"

namespace dp::stacks {

inline constexpr char kDebugCookie[8] = {'x', 'd', 'e', 'b', 'u', 'g', 'p', 'y'};
// Enough of _PyRuntime to read the cookie and the version.
inline constexpr size_t kDebugHeaderBytes = 16;

// Where each field the walk needs sits in one version's _Py_DebugOffsets
// (byte offsets into it), from CPython's Include/internal/pycore_debug_offsets.h
// of that version and checked against the bytes of Debian's 3.13.5 and 3.14.x
// (tests/fixtures/stacks).
struct DebugLayout {
  unsigned minor;  // 13 for 3.13
  size_t total;    // sizeof(_Py_DebugOffsets)
  size_t free_threaded;
  size_t runtime_size, interpreters_head;
  size_t interp_size, interp_next, threads_head;
  size_t thread_size, thread_next, current_frame, native_thread_id;
  size_t frame_size, frame_previous, frame_executable, frame_instr_ptr, frame_owner;
  size_t code_size, code_filename, code_qualname, code_linetable, code_firstlineno, code_adaptive;
  size_t object_ob_type;
  size_t type_size, type_tp_name;
  size_t bytes_ob_size, bytes_ob_sval;
  size_t unicode_state, unicode_length, unicode_ascii_size;
};
const DebugLayout* layout_for_version(uint64_t version);

// The Python version a header announces, e.g. "3.14.0rc2"; empty without the cookie.
std::string python_version_text(uint64_t version);

// The first kDebugHeaderBytes of _PyRuntime start with the cookie: a Python
// 3.13 or later, which publishes its offsets.
bool has_debug_cookie(std::span<const std::byte> header);

// From the first kDebugHeaderBytes of _PyRuntime: the layout to read next,
// or why there is none (no cookie: a Python before 3.13; an unknown version).
std::variant<const DebugLayout*, NoStacks> check_debug_header(std::span<const std::byte> header);

// From the layout->total bytes at the start of _PyRuntime: the offsets the
// process published, as the walk follows them.
std::variant<PythonLayout, NoStacks> parse_debug_offsets(const DebugLayout& layout,
                                                         std::span<const std::byte> raw);

}  // namespace dp::stacks
