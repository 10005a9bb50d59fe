// Where _PyRuntime lives in a process: the `.PyRuntime` section (CPython
// 3.11+ puts the runtime state there so outside readers find it) of the
// python executable or libpython that the process maps, from /proc/PID/maps
// and the file's ELF headers. Both parsers are pure and bounded: the maps
// text is given, the file is read through a callback, and every count and
// size an ELF header announces is checked before it is used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dp/result.hpp"

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

}  // namespace dp::stacks
