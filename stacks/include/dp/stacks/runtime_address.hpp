// Where _PyRuntime lives in a process, and which Python it is, from the
// python executable or libpython that the process maps (/proc/PID/maps) and
// that file's ELF tables, never from running anything: the `_PyRuntime`
// symbol every distribution build exports (3.8+), else the `.PyRuntime`
// section 3.11+ keep it in; the version from `Py_Version` (3.11+), else from
// the API each minor version added (Py_NewRef in 3.10, PyFrame_GetCode in
// 3.9, PyCode_NewWithPosOnlyArgs in 3.8); a debug build by
// `_Py_NegativeRefcount`, which only Py_DEBUG builds define. The parsers are
// pure and bounded: the maps text is given, the file is read through a
// callback, and every count and size an ELF header announces is checked
// before it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dp/result.hpp"
#include "dp/stacks/recent_values.hpp"
#include "dp/stacks/stacks.hpp"

namespace dp::stacks {

struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  uint64_t dev_major = 0, dev_minor = 0,
           inode = 0;  // of the mapped file, to check a file opened by path
  std::string path;    // as the kernel prints it; " (deleted)" kept
};

// /proc/PID/maps's lines, at most `max_lines`; lines that do not parse are skipped.
std::vector<Mapping> parse_maps(std::string_view text, size_t max_lines);

// The mappings of file offset 0 whose file name holds "python" (python3.13,
// libpython3.14.so.1.0), each file once: where a .PyRuntime section may be.
std::vector<Mapping> python_mappings(const std::vector<Mapping>& maps);

// Reads `out.size()` bytes of a file at `offset`: all, or false.
using FileReader = std::function<bool(uint64_t offset, std::span<std::byte> out)>;

struct SectionPlace {
  uint64_t address = 0;  // sh_addr: where the section is when loaded at the file's own base
  uint64_t size = 0;
  uint64_t load_base = 0;  // the first PT_LOAD's p_vaddr, aligned down to its p_align
};

// The section named `name` (".PyRuntime") of a 64-bit little-endian ELF
// file. not_found: no such section; protocol: not an ELF file this reader
// takes, or headers that do not hold together.
Result<SectionPlace> find_elf_section(const FileReader& file, std::string_view name);

// The section's address in a process that maps the file's offset 0 at `map_start`.
inline uint64_t loaded_address(const SectionPlace& s, uint64_t map_start) {
  return map_start + (s.address - s.load_base);
}

// The address of a symbol the file defines in its dynamic symbol table
// (.dynsym, looked up through .gnu.hash as the dynamic linker does, or read
// whole where the file has no such table), at the file's own base.
// not_found: no such defined symbol; protocol: headers that do not hold together.
Result<uint64_t> find_elf_symbol(const FileReader& file, std::string_view name);

// What an interpreter's file says of itself, addresses at its own base.
struct InterpreterFile {
  uint64_t runtime = 0;      // _PyRuntime
  uint64_t py_version = 0;   // Py_Version (3.11+); 0: the file has none
  unsigned minor = 0;        // without Py_Version: 10, 9 or 8 by the API it adds; 0: none known
  bool debug_build = false;  // defines _Py_NegativeRefcount: Py_DEBUG
  uint64_t load_base = 0;    // as SectionPlace's
};
// not_found: no _PyRuntime (neither the symbol nor the section): a build
// without symbols, or not an interpreter at all.
Result<InterpreterFile> describe_interpreter(const FileReader& file);

// Where an interpreter is in a process, and what its file said of it, at
// the addresses it is loaded at: what the walk (python_walk.hpp) starts from.
struct PythonProcess {
  uint64_t runtime = 0;      // _PyRuntime
  uint64_t py_version = 0;   // Py_Version (3.11+); 0: the file has none
  unsigned minor = 0;        // without Py_Version: the minor version its API tells; 0: unknown
  bool debug_build = false;  // a Py_DEBUG build
  // The process's pid: its main thread's kernel tid, by which 3.8-3.10's
  // threads find where libc keeps a thread's tid (they store only its
  // pthread_t). 0: their tids stay unknown.
  int pid = 0;
};

// A mapping's file, the very file the process maps: its reader (empty: it
// cannot be opened as that file) and what identifies its content (device,
// inode, size, change time: an InterpreterCache's key; empty: none).
struct MappedFile {
  FileReader read;
  std::string identity;
};
using MappedFileOpener = std::function<MappedFile(const Mapping&)>;

// What describe_interpreter said of files by their identity: a node agent
// reads the same interpreter again and again, and its ELF tables cost about
// twenty reads each time.
using InterpreterCache = RecentValues<Result<InterpreterFile>, 16>;

// The interpreter of a process from its /proc/PID/maps text: the first
// python mapping whose file is an interpreter, or why there is none
// (not_python, unreadable, no_runtime, inconsistent). pid is left 0.
std::variant<PythonProcess, NoStacks> find_interpreter(std::string_view maps,
                                                       const MappedFileOpener& open,
                                                       InterpreterCache* cache = nullptr);

}  // namespace dp::stacks
