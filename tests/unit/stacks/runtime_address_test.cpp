// Finding _PyRuntime: /proc/PID/maps lines as the kernel writes them, ELF
// headers of real files (this test's own binary, an installed python) and
// of garbage.
#include "dp/stacks/runtime_address.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <random>

#include "dp/unique_fd.hpp"

namespace dp::stacks {
namespace {

FileReader bytes_reader(const std::vector<std::byte>& bytes) {
  return [&bytes](uint64_t at, std::span<std::byte> out) {
    if (at > bytes.size() || out.size() > bytes.size() - at) return false;
    if (!out.empty()) std::memcpy(out.data(), bytes.data() + at, out.size());
    return true;
  };
}

std::vector<std::byte> file_bytes(const std::string& path, size_t max) {
  std::vector<std::byte> out(max);
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  const ssize_t n = fd ? ::read(fd.get(), out.data(), max) : -1;
  out.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return out;
}

TEST(RuntimeAddress, MapsLinesAndWhereAPythonMayBe) {
  const auto maps = parse_maps(
      "00400000-0041f000 r--p 00000000 08:01 1234                       /usr/bin/python3.13\n"
      "00420000-0073f000 r-xp 00020000 08:01 1234                       /usr/bin/python3.13\n"
      "0213c000-0215d000 rw-p 00000000 00:00 0                          [heap]\n"
      "7f10c0000000-7f10c0021000 rw-p 00000000 00:00 0 \n"
      "7f10c8000000-7f10c8100000 r--p 00000000 08:01 77   /opt/my env/lib/libpython3.14.so.1.0\n"
      "7f10c9000000-7f10c9100000 r--p 00000000 08:01 78   /usr/lib/libpythonic.so (deleted)\n"
      "7f10ca000000-7f10ca100000 r--p 00000000 08:01 79   /home/python/data.bin\n"
      "garbage line\n"
      "7f10cb000000-7f10cb100000 r--p 00000000 08:01 80   /usr/bin/python3.13\n",
      100);
  ASSERT_EQ(maps.size(), 8u);
  EXPECT_EQ(maps[0].start, 0x400000u);
  EXPECT_EQ(maps[1].offset, 0x20000u);
  EXPECT_EQ(maps[1].dev_major, 8u);
  EXPECT_EQ(maps[1].dev_minor, 1u);
  EXPECT_EQ(maps[1].inode, 1234u);
  EXPECT_EQ(maps[3].path, "");
  EXPECT_EQ(maps[4].path, "/opt/my env/lib/libpython3.14.so.1.0");
  const auto pythons = python_mappings(maps);
  ASSERT_EQ(pythons.size(), 3u);
  EXPECT_EQ(pythons[0].path, "/usr/bin/python3.13");
  EXPECT_EQ(pythons[1].start, 0x7f10c8000000u);
  EXPECT_EQ(pythons[2].path, "/usr/lib/libpythonic.so (deleted)");
  EXPECT_EQ(parse_maps("00400000-0041f000 r--p 00000000 08:01 1 /a\n", 0).size(), 0u);
}

TEST(RuntimeAddress, SectionsOfRealFiles) {
  const auto self = file_bytes("/proc/self/exe", 64 << 20);
  ASSERT_FALSE(self.empty());
  auto text = find_elf_section(bytes_reader(self), ".text");
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_GT(text->size, 0u);
  EXPECT_GE(text->address, text->load_base);
  auto none = find_elf_section(bytes_reader(self), ".PyRuntime");
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, Errc::not_found);
  EXPECT_FALSE(find_elf_section(bytes_reader(self), ".tex"));  // a prefix is no name
  for (const char* python : {"/usr/bin/python3.11", "/usr/bin/python3.13", "/usr/bin/python3.14"}) {
    const auto bytes = file_bytes(python, 64 << 20);
    if (bytes.empty()) continue;
    auto runtime = find_elf_section(bytes_reader(bytes), ".PyRuntime");
    ASSERT_TRUE(runtime) << python << ": " << runtime.error().message;
    EXPECT_GT(runtime->size, 0u);
    EXPECT_EQ(loaded_address(*runtime, runtime->load_base), runtime->address);
  }
}

TEST(RuntimeAddress, GarbageIsNoElfFile) {
  const std::vector<std::byte> empty, text(4096, std::byte{'x'});
  EXPECT_EQ(find_elf_section(bytes_reader(empty), ".PyRuntime").error().code, Errc::protocol);
  EXPECT_EQ(find_elf_section(bytes_reader(text), ".PyRuntime").error().code, Errc::protocol);
  // This binary with bytes of its headers flipped: whatever they announce, no crash.
  const auto self = file_bytes("/proc/self/exe", 64 << 20);
  ASSERT_GE(self.size(), 64u);
  uint64_t shoff = 0, phoff = 0;
  std::memcpy(&phoff, self.data() + 0x20, 8);
  std::memcpy(&shoff, self.data() + 0x28, 8);
  std::mt19937 rng(45);
  for (int i = 0; i < 3000; ++i) {
    std::map<uint64_t, std::byte> flips;
    for (int k = 0; k < 3; ++k) {
      const uint64_t region[] = {0, phoff, shoff};
      const uint64_t at = region[rng() % 3] + rng() % 512;
      if (at < self.size()) flips[at] = static_cast<std::byte>(rng());
    }
    const auto reader = [&](uint64_t at, std::span<std::byte> out) {
      if (at > self.size() || out.size() > self.size() - at) return false;
      if (!out.empty()) std::memcpy(out.data(), self.data() + at, out.size());
      for (auto it = flips.lower_bound(at); it != flips.end() && it->first < at + out.size();
           ++it) {
        out[it->first - at] = it->second;
      }
      return true;
    };
    (void)find_elf_section(reader, ".PyRuntime");
    (void)find_elf_section(reader, ".text");
  }
}

}  // namespace
}  // namespace dp::stacks
