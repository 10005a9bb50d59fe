#include "dp/stacks/debug_offsets.hpp"

#include <algorithm>
#include <cstring>

namespace dp::stacks {
namespace {

// Field positions inside _Py_DebugOffsets; the order is DebugLayout's.
constexpr DebugLayout kLayouts[] = {
    {13,  584, 16,  24,  40,  48,  64,  72,  152, 168, 184, 200, 224, 232, 240, 248,
     264, 272, 280, 296, 304, 312, 344, 360, 368, 376, 520, 528, 544, 552, 560},
    {14,  760, 16,  24,  40,  48,  64,  72,  176, 192, 208, 224, 248, 256, 264, 272,
     288, 312, 320, 336, 344, 352, 384, 408, 416, 424, 600, 608, 624, 632, 640},
};

// Caps on the sizes a process may announce: far above CPython's own (a
// thread state is under 1 KiB, an interpreter state under 256 KiB), so only
// garbage fails them, and every struct the walk copies stays small.
constexpr uint64_t kMaxRuntime = 16 << 20, kMaxInterp = 4 << 20, kMaxThread = 64 << 10,
                   kMaxFrame = 4096, kMaxCode = 64 << 10, kMaxType = 8192, kMaxHeader = 256;

uint64_t u64_at(std::span<const std::byte> raw, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, raw.data() + at, sizeof v);
  return v;
}

unsigned release_level(uint64_t version) { return (version >> 4) & 0xf; }

// `width` bytes at `offset` lie inside a struct of `size` bytes.
bool inside(uint64_t offset, uint64_t width, uint64_t size) {
  return offset <= size && width <= size - offset;
}

bool sizes_hold(const PythonLayout& o) {
  return o.runtime.size <= kMaxRuntime && o.interp.size <= kMaxInterp &&
         o.thread.size <= kMaxThread && o.frame.size <= kMaxFrame && o.code.size <= kMaxCode &&
         o.type.size <= kMaxType;
}

bool fields_inside(const PythonLayout& o) {
  return inside(o.runtime.interpreters_head, 8, o.runtime.size) &&
         inside(o.interp.next, 8, o.interp.size) &&
         inside(o.interp.threads_head, 8, o.interp.size) &&
         inside(o.thread.next, 8, o.thread.size) &&
         inside(o.thread.current_frame, 8, o.thread.size) &&
         inside(o.thread.native_thread_id, 8, o.thread.size) &&
         inside(o.frame.previous, 8, o.frame.size) && inside(o.frame.executable, 8, o.frame.size) &&
         inside(o.frame.instr_ptr, 8, o.frame.size) && inside(o.frame.owner, 1, o.frame.size) &&
         inside(o.code.filename, 8, o.code.size) && inside(o.code.qualname, 8, o.code.size) &&
         inside(o.code.linetable, 8, o.code.size) && inside(o.code.firstlineno, 4, o.code.size) &&
         inside(o.code.code_adaptive, 0, o.code.size) &&
         inside(o.object.ob_type, 8,
                std::min({o.code.size, o.bytes.ob_sval, o.unicode.ascii_size})) &&
         inside(o.type.tp_name, 8, o.type.size) && inside(o.bytes.ob_size, 8, o.bytes.ob_sval) &&
         o.bytes.ob_sval <= kMaxHeader && inside(o.unicode.state, 4, o.unicode.ascii_size) &&
         inside(o.unicode.length, 8, o.unicode.ascii_size) && o.unicode.ascii_size <= kMaxHeader;
}

}  // namespace

const char* no_python_name(NoPython why) {
  switch (why) {
    case NoPython::not_allowed: return "not_allowed";
    case NoPython::gone: return "gone";
    case NoPython::unreadable: return "unreadable";
    case NoPython::not_python: return "not_python";
    case NoPython::no_runtime: return "no_runtime";
    case NoPython::unsupported_python: return "unsupported_python";
    case NoPython::debug_build: return "debug_build";
    case NoPython::free_threaded: return "free_threaded";
    case NoPython::inconsistent: return "inconsistent";
    case NoPython::over_budget: return "over_budget";
    case NoPython::over_time: return "over_time";
  }
  return "?";
}

const DebugLayout* layout_for_version(uint64_t version) {
  if ((version >> 24) != 3) return nullptr;
  // Alphas and betas moved fields between releases; a candidate has the final layout.
  if (release_level(version) < 0xc) return nullptr;
  const unsigned minor = (version >> 16) & 0xff;
  for (const auto& l : kLayouts) {
    if (l.minor == minor) return &l;
  }
  return nullptr;
}

std::string python_version_text(uint64_t version) {
  std::string s = std::to_string(version >> 24) + "." + std::to_string((version >> 16) & 0xff) +
                  "." + std::to_string((version >> 8) & 0xff);
  const unsigned level = release_level(version);
  if (level == 0xf) return s;
  s += level == 0xa ? "a" : level == 0xb ? "b" : "rc";
  return s + std::to_string(version & 0xf);
}

bool has_debug_cookie(std::span<const std::byte> header) {
  return header.size() >= kDebugHeaderBytes &&
         std::memcmp(header.data(), kDebugCookie, sizeof kDebugCookie) == 0;
}

std::variant<const DebugLayout*, NoStacks> check_debug_header(std::span<const std::byte> header) {
  if (!has_debug_cookie(header)) {
    return NoStacks{NoPython::unsupported_python,
                    "_PyRuntime has no debug offsets (a Python before 3.13 publishes none)"};
  }
  const uint64_t version = u64_at(header, 8);
  if (const DebugLayout* l = layout_for_version(version)) return l;
  return NoStacks{NoPython::unsupported_python,
                  "Python " + python_version_text(version) +
                      ": this reader knows the debug offsets of 3.13 and 3.14 releases"};
}

std::variant<PythonLayout, NoStacks> parse_debug_offsets(const DebugLayout& l,
                                                         std::span<const std::byte> raw) {
  auto header = check_debug_header(raw);
  if (auto* none = std::get_if<NoStacks>(&header)) return *none;
  if (raw.size() < l.total) return NoStacks{NoPython::inconsistent, "debug offsets cut short"};
  if (u64_at(raw, l.free_threaded) != 0) {
    return NoStacks{NoPython::free_threaded,
                    "a free-threaded Python: its frames' code pointers are not read yet"};
  }
  auto at = [&](size_t field) { return u64_at(raw, field); };
  PythonLayout o;
  o.version = at(8);
  // 3.13: owners thread, generator, frame object, C stack; 3.14 adds the
  // interpreter's own before the C stack's. Neither kind is a Python function.
  o.owner_max = 4;
  o.first_skipped_owner = 3;
  o.runtime = {at(l.runtime_size), at(l.interpreters_head)};
  o.interp = {at(l.interp_size), at(l.interp_next), at(l.threads_head)};
  o.thread = {at(l.thread_size), at(l.thread_next), at(l.current_frame), at(l.native_thread_id), 0};
  o.frame = {at(l.frame_size), at(l.frame_previous), at(l.frame_executable), at(l.frame_instr_ptr),
             at(l.frame_owner)};
  o.code = {at(l.code_size),      at(l.code_filename),    at(l.code_qualname),
            at(l.code_linetable), at(l.code_firstlineno), at(l.code_adaptive)};
  o.object = {at(l.object_ob_type)};
  o.type = {at(l.type_size), at(l.type_tp_name)};
  o.bytes = {at(l.bytes_ob_size), at(l.bytes_ob_sval)};
  // The compact header's two words past PyASCIIObject (utf8_length, utf8) are
  // not published; 3.12 gave them their place for good.
  o.unicode = {at(l.unicode_state), at(l.unicode_length), at(l.unicode_ascii_size), 16};
  if (!sizes_hold(o) || !fields_inside(o)) {
    return NoStacks{NoPython::inconsistent, "Python " + python_version_text(o.version) +
                                                ": its debug offsets point outside their structs"};
  }
  return o;
}

}  // namespace dp::stacks
