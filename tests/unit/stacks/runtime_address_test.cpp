// Finding _PyRuntime: /proc/PID/maps lines as the kernel writes them, ELF
// headers of real files (this test's own binary, an installed python) and
// of garbage.
#include "dp/stacks/runtime_address.hpp"

#include <elf.h>
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

// The dynamic symbols of a file, read the plain way: every defined one by name.
std::map<std::string, uint64_t> all_symbols(const std::vector<std::byte>& f) {
  std::map<std::string, uint64_t> out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, f.data(), sizeof eh);
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), f.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  for (const auto& s : sh) {
    if (s.sh_type != SHT_DYNSYM) continue;
    const char* names = reinterpret_cast<const char*>(f.data() + sh[s.sh_link].sh_offset);
    for (uint64_t i = 0; i < s.sh_size / sizeof(Elf64_Sym); ++i) {
      Elf64_Sym sym;
      std::memcpy(&sym, f.data() + s.sh_offset + i * sizeof sym, sizeof sym);
      if (sym.st_shndx != SHN_UNDEF) out.emplace(names + sym.st_name, sym.st_value);
    }
  }
  return out;
}

std::vector<std::byte> libc_bytes() {
  for (const char* path : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6",
                           "/usr/lib/x86_64-linux-gnu/libc.so.6"}) {
    auto bytes = file_bytes(path, 64 << 20);
    if (!bytes.empty()) return bytes;
  }
  return {};
}

// Through the GNU hash table, as the dynamic linker looks them up: every
// symbol a plain read of the table finds, at its address; none that is not there.
TEST(RuntimeAddress, SymbolsAreFoundThroughTheHashTable) {
  const auto libc = libc_bytes();
  if (libc.empty()) GTEST_SKIP() << "no libc.so.6 at a known path";
  const auto symbols = all_symbols(libc);
  ASSERT_GT(symbols.size(), 1000u);
  size_t checked = 0;
  for (const auto& [name, address] : symbols) {
    if (checked++ % 7 != 0) continue;
    auto found = find_elf_symbol(bytes_reader(libc), name);
    ASSERT_TRUE(found) << name << ": " << found.error().message;
    EXPECT_EQ(*found, address) << name;
  }
  for (const char* absent : {"_PyRuntime", "mallo", "malloc_", ""}) {
    auto found = find_elf_symbol(bytes_reader(libc), absent);
    ASSERT_FALSE(found) << absent;
    EXPECT_EQ(found.error().code, Errc::not_found);
  }
  // A file with no hash table: its symbols are read whole, with the same answers.
  auto unhashed = libc;
  Elf64_Ehdr eh;
  std::memcpy(&eh, unhashed.data(), sizeof eh);
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, unhashed.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_GNU_HASH) continue;
    sh.sh_type = SHT_PROGBITS;
    std::memcpy(unhashed.data() + eh.e_shoff + i * sizeof sh, &sh, sizeof sh);
  }
  for (const char* name : {"malloc", "free", "pthread_create"}) {
    auto found = find_elf_symbol(bytes_reader(unhashed), name);
    ASSERT_TRUE(found) << name;
    EXPECT_EQ(*found, symbols.at(name));
  }
  EXPECT_FALSE(find_elf_symbol(bytes_reader(unhashed), "_PyRuntime"));
  // Not an interpreter: no _PyRuntime, named not_found.
  EXPECT_EQ(describe_interpreter(bytes_reader(libc)).error().code, Errc::not_found);
}

// Debian 12's python3.11 and its debug build, as the reader finds them: the
// runtime by its symbol (where the section also is), the version's place,
// and the debug build told apart.
TEST(RuntimeAddress, AnInterpreterSaysWhereItsRuntimeIsAndWhatItIs) {
  const auto release = file_bytes("/usr/bin/python3.11", 64 << 20);
  if (release.empty()) GTEST_SKIP() << "no /usr/bin/python3.11 (Debian 12 has it)";
  const auto symbols = all_symbols(release);
  auto python = describe_interpreter(bytes_reader(release));
  ASSERT_TRUE(python) << python.error().message;
  EXPECT_EQ(python->runtime, symbols.at("_PyRuntime"));
  EXPECT_EQ(python->runtime, find_elf_section(bytes_reader(release), ".PyRuntime")->address);
  EXPECT_EQ(python->py_version, symbols.at("Py_Version"));
  EXPECT_EQ(python->minor, 0u);  // Py_Version tells it
  EXPECT_FALSE(python->debug_build);
  const auto debug = file_bytes("/usr/bin/python3.11d", 64 << 20);
  if (debug.empty())
    GTEST_SKIP() << "no /usr/bin/python3.11d (scripts/setup installs python3.11-dbg)";
  auto dbg = describe_interpreter(bytes_reader(debug));
  ASSERT_TRUE(dbg) << dbg.error().message;
  EXPECT_TRUE(dbg->debug_build);
  EXPECT_NE(dbg->runtime, 0u);
}

// find_interpreter over a maps text: the first python mapping whose file is
// an interpreter, at the address it is loaded at; each way there is none, named.
TEST(RuntimeAddress, TheInterpreterOfAProcessIsItsMappedFiles) {
  const auto release = file_bytes("/usr/bin/python3.11", 64 << 20);
  if (release.empty()) GTEST_SKIP() << "no /usr/bin/python3.11 (Debian 12 has it)";
  const auto libc = libc_bytes();
  const std::string maps =
      "7f0000000000-7f0000100000 r--p 00000000 08:01 5 /usr/lib/libpython-helper.so\n"
      "7f1000000000-7f1000100000 r--p 00000000 08:01 6 /usr/lib/python3-stripped\n"
      "7f2000000000-7f2000100000 r--p 00000000 08:01 7 /usr/bin/python3.11\n";
  std::map<std::string, const std::vector<std::byte>*> files = {
      {"/usr/lib/python3-stripped", &libc}, {"/usr/bin/python3.11", &release}};
  int opened = 0;
  const MappedFileOpener open = [&](const Mapping& m) -> MappedFile {
    auto it = files.find(m.path);
    if (it == files.end()) return {};
    ++opened;
    return {bytes_reader(*it->second), m.path};
  };
  auto found = find_interpreter(maps, open);
  ASSERT_TRUE(std::holds_alternative<PythonProcess>(found));
  const auto& p = std::get<PythonProcess>(found);
  const uint64_t base = find_elf_section(bytes_reader(release), ".PyRuntime")->load_base;
  EXPECT_EQ(p.runtime, 0x7f2000000000 + all_symbols(release).at("_PyRuntime") - base);
  EXPECT_NE(p.py_version, 0u);
  files.erase("/usr/bin/python3.11");
  auto none = find_interpreter(maps, open);
  ASSERT_TRUE(std::holds_alternative<NoStacks>(none));
  EXPECT_EQ(std::get<NoStacks>(none).why, NoPython::unreadable);  // the last one tried
  auto stripped = find_interpreter(maps.substr(0, maps.rfind("7f20")), open);
  EXPECT_EQ(std::get<NoStacks>(stripped).why, NoPython::no_runtime);
  EXPECT_EQ(std::get<NoStacks>(find_interpreter("", open)).why, NoPython::not_python);
  // A cache by the files' identities: each file's tables read once, the same answers after.
  files["/usr/bin/python3.11"] = &release;
  InterpreterCache cache;
  auto first = find_interpreter(maps, open, &cache);
  const std::vector<std::byte> nothing;
  files["/usr/bin/python3.11"] = &nothing;  // its bytes gone: only the cache can answer
  files["/usr/lib/python3-stripped"] = &nothing;
  auto again = find_interpreter(maps, open, &cache);
  ASSERT_TRUE(std::holds_alternative<PythonProcess>(again));
  EXPECT_EQ(std::get<PythonProcess>(again).runtime, std::get<PythonProcess>(first).runtime);
  EXPECT_GT(opened, 0);
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
    (void)find_elf_symbol(reader, "main");
    (void)describe_interpreter(reader);
  }
}

}  // namespace
}  // namespace dp::stacks
