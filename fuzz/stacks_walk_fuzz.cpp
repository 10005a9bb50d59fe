// The stack reader over memory and files that are anything (stacks/): what
// it reads of another process is that process's to write, so no bytes may
// crash it, loop it or make it read past its bounds.
// Input: a mode byte, then
//   mode % 8 < 7: a synthetic CPython 3.(8 + mode % 8) process (two threads,
//     stacks/image: every layout, 3.8 to 3.14) with records written over
//     it: a 2-byte offset into the image (big-endian, modulo its size), a
//     length byte, that many bytes. The walk must end within its limits,
//     whatever it then finds.
//   mode % 8 == 7: the rest as an ELF file (.PyRuntime's place, symbols, an
//     interpreter's description), as the text of /proc/PID/maps, as line
//     tables of all three formats, and as a location table whose spans pick
//     a callee out of the same bytes read as source.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "dp/stacks/call_site.hpp"
#include "dp/stacks/line_table.hpp"
#include "dp/stacks/python_walk.hpp"
#include "dp/stacks/runtime_address.hpp"
#include "synthetic_python.hpp"

namespace {

using namespace dp::stacks;

const image::SyntheticPython& process(unsigned minor) {
  static const std::vector<image::SyntheticThread> threads = {
      {100, {{"sleeper", "/w/hang.py", 7, 12}, {"<module>", "/w/hang.py", 1, 14}}},
      {101,
       {{"Condition.wait", "/usr/lib/python3/threading.py", 320, 359},
        {"blocked", "/w/hang.py", 3, 5}}},
  };
  static const std::vector<image::SyntheticPython> images = [] {
    std::vector<image::SyntheticPython> out;
    for (unsigned m = 8; m <= 14; ++m) out.push_back(image::build_synthetic_python(m, threads));
    return out;
  }();
  return images.at(minor - 8);
}

void check(bool ok) {
  if (!ok) std::abort();  // a bound the walk promised was not kept
}

void walk_over(unsigned minor, const uint8_t* data, size_t size) {
  image::SyntheticPython p = process(minor);
  const size_t image_size = p.image.bytes().size();
  for (size_t at = 0; at + 3 <= size;) {
    const size_t offset = (static_cast<size_t>(data[at]) << 8 | data[at + 1]) % image_size;
    const size_t n = std::min<size_t>({data[at + 2], size - at - 3, image_size - offset});
    p.image.put(p.image.base() + offset, std::as_bytes(std::span<const uint8_t>(data + at + 3, n)));
    at += 3 + n;
  }
  WalkLimits limits;
  limits.max_threads = 8;
  limits.max_frames = 16;
  limits.max_string = 64;
  limits.max_line_table = 4096;
  limits.max_bytes = 256 * 1024;
  limits.max_reads = 4000;
  const ProcessStacks s = walk_python(p.image, p.process, limits);
  check(s.bytes_read <= limits.max_bytes && s.reads <= limits.max_reads);
  check(s.threads.size() <= limits.max_threads);
  for (const auto& t : s.threads) {
    check(t.frames.size() <= limits.max_frames);
    for (const auto& f : t.frames) {
      check(f.function.size() <= limits.max_string + 3 && f.file.size() <= limits.max_string + 3);
    }
  }
  check(!s.no_python || s.threads.empty());
}

void parse_files(const uint8_t* data, size_t size) {
  const auto file = [&](uint64_t offset, std::span<std::byte> out) {
    if (offset > size || out.size() > size - offset) return false;
    std::memcpy(out.data(), data + offset, out.size());
    return true;
  };
  (void)find_elf_section(file, ".PyRuntime");
  (void)find_elf_symbol(file, "_PyRuntime");
  (void)describe_interpreter(file);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // As a location table, each unit's span; as source, a call's callee.
  const std::span<const uint8_t> table(data, size);
  for (int64_t byte = -2; byte < 128; ++byte) {
    (void)line_for_lnotab(table, 1, byte);
    (void)line_for_pairs(table, 1, byte);
  }
  check(!callee_of_line(text, 8) || text.find('(') != text.npos);
  for (uint64_t unit = 0; unit < 64; ++unit) {
    if (auto span = span_for_instruction(table, 1, unit)) {
      auto callee = callee_of(text, *span);
      check(!callee ||
            (!callee->empty() && callee->size() <= 200 && text.find(*callee) != text.npos));
    }
  }
  const auto maps = parse_maps(text, 64);
  check(maps.size() <= 64);
  check(python_mappings(maps).size() <= maps.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 8 == 7) {
    parse_files(data + 1, size - 1);
  } else {
    walk_over(8 + data[0] % 8, data + 1, size - 1);
  }
  return 0;
}
