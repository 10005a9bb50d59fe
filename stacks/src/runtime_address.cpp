#include "dp/stacks/runtime_address.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace dp::stacks {
namespace {

// Far above any real python's (about 40 sections, a few program headers,
// a section-name table under 1 KiB): only garbage reaches them.
constexpr size_t kMaxSections = 4096, kMaxProgramHeaders = 256, kMaxNames = 1 << 20;
constexpr size_t kMaxMapsLines = 100'000;

bool parse_hex(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 16) return false;
  out = 0;
  for (char c : s) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    out = out << 4 | static_cast<uint64_t>(d);
  }
  return true;
}

bool parse_decimal(std::string_view s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<uint64_t>(c - '0');
  }
  return true;
}

// The next space-separated word of `line` from `at`.
std::string_view word(std::string_view line, size_t& at) {
  while (at < line.size() && line[at] == ' ') ++at;
  const size_t end = std::min(line.find(' ', at), line.size());
  std::string_view w = line.substr(at, end - at);
  at = end;
  return w;
}

std::optional<Mapping> parse_maps_line(std::string_view line) {
  size_t at = 0;
  const std::string_view range = word(line, at);
  word(line, at);  // permissions
  const std::string_view offset = word(line, at);
  const std::string_view device = word(line, at);
  const std::string_view inode = word(line, at);
  const size_t dash = range.find('-'), colon = device.find(':');
  Mapping m;
  if (dash == std::string_view::npos || !parse_hex(range.substr(0, dash), m.start) ||
      !parse_hex(range.substr(dash + 1), m.end) || !parse_hex(offset, m.offset) ||
      colon == std::string_view::npos || !parse_hex(device.substr(0, colon), m.dev_major) ||
      !parse_hex(device.substr(colon + 1), m.dev_minor) || !parse_decimal(inode, m.inode)) {
    return std::nullopt;
  }
  while (at < line.size() && line[at] == ' ') ++at;
  m.path = std::string(line.substr(at));
  return m;
}

template <class T>
bool read_struct(const FileReader& file, uint64_t offset, T& out) {
  return file(offset, std::span<std::byte>(reinterpret_cast<std::byte*>(&out), sizeof out));
}

Error bad_elf(const std::string& why) {
  return make_error(Errc::protocol, "not an ELF file this reader takes: " + why);
}

// Far above any real python's (about 10 000 exported symbols, chains of a
// few): only garbage reaches them.
constexpr uint64_t kMaxSymbols = 1 << 20, kMaxBuckets = 1 << 20, kMaxChain = 4096;
constexpr uint64_t kScanChunk = 512;  // symbols a read, where there is no hash table

// A 64-bit little-endian ELF file's section headers and their names, read once.
class ElfFile {
 public:
  static Result<ElfFile> open(const FileReader& file);
  const Elf64_Shdr* section(std::string_view name) const;
  const Elf64_Shdr* section_of_type(uint32_t type) const;
  Result<uint64_t> load_base() const;
  Result<uint64_t> symbol(std::string_view name) const;

 private:
  explicit ElfFile(const FileReader& file) : file_(file) {}
  bool name_is(const Elf64_Shdr& strings, uint32_t at, std::string_view name) const;
  Result<std::optional<uint64_t>> symbol_at(uint64_t index, const Elf64_Shdr& symbols,
                                            const Elf64_Shdr& strings, std::string_view name) const;
  Result<uint64_t> hashed_symbol(const Elf64_Shdr& hash, const Elf64_Shdr& symbols,
                                 const Elf64_Shdr& strings, std::string_view name) const;
  Result<uint64_t> scanned_symbol(const Elf64_Shdr& symbols, const Elf64_Shdr& strings,
                                  std::string_view name) const;

  const FileReader& file_;
  Elf64_Ehdr header_{};
  std::vector<Elf64_Shdr> sections_;
  std::vector<std::byte> names_;
};

Result<ElfFile> ElfFile::open(const FileReader& file) {
  ElfFile elf(file);
  Elf64_Ehdr& eh = elf.header_;
  if (!read_struct(file, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    return bad_elf("no ELF header");
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    return bad_elf("not 64-bit little-endian");
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum > kMaxSections ||
      eh.e_shstrndx >= eh.e_shnum) {
    return bad_elf("section headers");
  }
  elf.sections_.resize(eh.e_shnum);
  if (!file(eh.e_shoff, std::as_writable_bytes(std::span(elf.sections_)))) {
    return bad_elf("section headers cut short");
  }
  const Elf64_Shdr& names = elf.sections_[eh.e_shstrndx];
  if (names.sh_size == 0 || names.sh_size > kMaxNames) return bad_elf("section names");
  elf.names_.resize(names.sh_size);
  if (!file(names.sh_offset, elf.names_)) return bad_elf("section names cut short");
  return elf;
}

const Elf64_Shdr* ElfFile::section(std::string_view name) const {
  for (const auto& sh : sections_) {
    if (sh.sh_name < names_.size() && names_.size() - sh.sh_name > name.size() &&
        std::memcmp(names_.data() + sh.sh_name, name.data(), name.size()) == 0 &&
        names_[sh.sh_name + name.size()] == std::byte{0}) {
      return &sh;
    }
  }
  return nullptr;
}

const Elf64_Shdr* ElfFile::section_of_type(uint32_t type) const {
  for (const auto& sh : sections_) {
    if (sh.sh_type == type) return &sh;
  }
  return nullptr;
}

Result<uint64_t> ElfFile::load_base() const {
  const Elf64_Ehdr& eh = header_;
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > kMaxProgramHeaders) {
    return bad_elf("program headers");
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read_struct(file_, eh.e_phoff + uint64_t{i} * sizeof ph, ph)) return bad_elf("cut short");
    if (ph.p_type != PT_LOAD) continue;
    const uint64_t align = ph.p_align > 1 ? ph.p_align : 1;
    return ph.p_vaddr - ph.p_vaddr % align;
  }
  return bad_elf("no loadable segment");
}

bool ElfFile::name_is(const Elf64_Shdr& strings, uint32_t at, std::string_view name) const {
  if (at >= strings.sh_size || strings.sh_size - at <= name.size()) return false;
  std::vector<std::byte> text(name.size() + 1);
  return file_(strings.sh_offset + at, text) &&
         std::memcmp(text.data(), name.data(), name.size()) == 0 && text.back() == std::byte{0};
}

// The symbol at `index` when it is `name` and defined: its address.
Result<std::optional<uint64_t>> ElfFile::symbol_at(uint64_t index, const Elf64_Shdr& symbols,
                                                   const Elf64_Shdr& strings,
                                                   std::string_view name) const {
  Elf64_Sym sym;
  if (!read_struct(file_, symbols.sh_offset + index * sizeof sym, sym)) {
    return bad_elf("symbols cut short");
  }
  if (sym.st_shndx == SHN_UNDEF || !name_is(strings, sym.st_name, name)) {
    return std::optional<uint64_t>();
  }
  return std::optional<uint64_t>(sym.st_value);
}

// The GNU hash table: buckets of symbol indices, each bucket's chain of
// hashes ending with its low bit set; the Bloom filter is skipped.
Result<uint64_t> ElfFile::hashed_symbol(const Elf64_Shdr& hash, const Elf64_Shdr& symbols,
                                        const Elf64_Shdr& strings, std::string_view name) const {
  struct {
    uint32_t buckets, first_symbol, bloom_words, bloom_shift;
  } head{};
  if (!read_struct(file_, hash.sh_offset, head) || head.buckets == 0 ||
      head.buckets > kMaxBuckets || head.bloom_words > kMaxBuckets) {
    return bad_elf("hash table");
  }
  uint32_t h = 5381;
  for (char c : name) h = h * 33 + static_cast<uint8_t>(c);
  const uint64_t buckets_at = hash.sh_offset + sizeof head + uint64_t{head.bloom_words} * 8;
  const uint64_t chains_at = buckets_at + uint64_t{head.buckets} * 4;
  uint32_t index = 0;
  if (!read_struct(file_, buckets_at + uint64_t{h % head.buckets} * 4, index)) {
    return bad_elf("hash table cut short");
  }
  const uint64_t count = symbols.sh_size / sizeof(Elf64_Sym);
  for (uint64_t steps = 0; index >= head.first_symbol && index < count; ++index, ++steps) {
    uint32_t chain = 0;
    if (steps == kMaxChain ||
        !read_struct(file_, chains_at + uint64_t{index - head.first_symbol} * 4, chain)) {
      return bad_elf("hash chain");
    }
    if ((chain | 1) == (h | 1)) {
      auto found = symbol_at(index, symbols, strings, name);
      if (!found) return found.error();
      if (*found) return **found;
    }
    if ((chain & 1) != 0) break;
  }
  return make_error(Errc::not_found, "no symbol " + std::string(name));
}

Result<uint64_t> ElfFile::scanned_symbol(const Elf64_Shdr& symbols, const Elf64_Shdr& strings,
                                         std::string_view name) const {
  const uint64_t count = std::min<uint64_t>(symbols.sh_size / sizeof(Elf64_Sym), kMaxSymbols);
  std::vector<Elf64_Sym> chunk;
  for (uint64_t first = 0; first < count; first += kScanChunk) {
    chunk.resize(std::min(kScanChunk, count - first));
    if (!file_(symbols.sh_offset + first * sizeof(Elf64_Sym),
               std::as_writable_bytes(std::span(chunk)))) {
      return bad_elf("symbols cut short");
    }
    for (const auto& sym : chunk) {
      if (sym.st_shndx != SHN_UNDEF && name_is(strings, sym.st_name, name)) return sym.st_value;
    }
  }
  return make_error(Errc::not_found, "no symbol " + std::string(name));
}

Result<uint64_t> ElfFile::symbol(std::string_view name) const {
  const Elf64_Shdr* symbols = section_of_type(SHT_DYNSYM);
  if (symbols == nullptr) return make_error(Errc::not_found, "no dynamic symbols");
  if (symbols->sh_entsize != sizeof(Elf64_Sym) || symbols->sh_link >= sections_.size()) {
    return bad_elf("dynamic symbols");
  }
  const Elf64_Shdr& strings = sections_[symbols->sh_link];
  if (const Elf64_Shdr* hash = section_of_type(SHT_GNU_HASH)) {
    return hashed_symbol(*hash, *symbols, strings, name);
  }
  return scanned_symbol(*symbols, strings, name);
}

}  // namespace

std::vector<Mapping> parse_maps(std::string_view text, size_t max_lines) {
  std::vector<Mapping> out;
  while (!text.empty() && out.size() < max_lines) {
    const size_t nl = text.find('\n');
    if (auto m = parse_maps_line(text.substr(0, nl))) out.push_back(std::move(*m));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<Mapping> python_mappings(const std::vector<Mapping>& maps) {
  std::vector<Mapping> out;
  std::set<std::string> seen;
  for (const auto& m : maps) {
    if (m.offset != 0 || m.path.empty() || m.path[0] != '/') continue;
    const std::string_view name = std::string_view(m.path).substr(m.path.rfind('/') + 1);
    if (name.find("python") == std::string_view::npos || !seen.insert(m.path).second) continue;
    out.push_back(m);
  }
  return out;
}

Result<SectionPlace> find_elf_section(const FileReader& file, std::string_view name) {
  auto elf = ElfFile::open(file);
  if (!elf) return elf.error();
  const Elf64_Shdr* sh = elf->section(name);
  if (sh == nullptr) return make_error(Errc::not_found, "no " + std::string(name) + " section");
  auto base = elf->load_base();
  if (!base) return base.error();
  return SectionPlace{sh->sh_addr, sh->sh_size, *base};
}

Result<uint64_t> find_elf_symbol(const FileReader& file, std::string_view name) {
  auto elf = ElfFile::open(file);
  if (!elf) return elf.error();
  return elf->symbol(name);
}

Result<InterpreterFile> describe_interpreter(const FileReader& file) {
  auto elf = ElfFile::open(file);
  if (!elf) return elf.error();
  auto base = elf->load_base();
  if (!base) return base.error();
  InterpreterFile out;
  out.load_base = *base;
  // A symbol that is not there is no error; headers that lie are.
  std::optional<Error> broken;
  auto defined = [&](std::string_view name) -> std::optional<uint64_t> {
    auto at = elf->symbol(name);
    if (at) return *at;
    if (at.error().code != Errc::not_found && !broken) broken = at.error();
    return std::nullopt;
  };
  if (auto runtime = defined("_PyRuntime")) {
    out.runtime = *runtime;
  } else if (const Elf64_Shdr* sh = elf->section(".PyRuntime")) {
    out.runtime = sh->sh_addr;
  } else {
    if (broken) return *broken;
    return make_error(Errc::not_found, "no _PyRuntime symbol and no .PyRuntime section");
  }
  out.py_version = defined("Py_Version").value_or(0);
  if (out.py_version == 0) {
    // Each minor version's new API, newest first.
    constexpr std::pair<const char*, unsigned> kAdded[] = {
        {"Py_NewRef", 10}, {"PyFrame_GetCode", 9}, {"PyCode_NewWithPosOnlyArgs", 8}};
    for (const auto& [symbol, minor] : kAdded) {
      if (defined(symbol)) {
        out.minor = minor;
        break;
      }
    }
  }
  out.debug_build = defined("_Py_NegativeRefcount").has_value();
  if (broken) return *broken;
  return out;
}

std::variant<PythonProcess, NoStacks> find_interpreter(std::string_view maps,
                                                       const MappedFileOpener& open,
                                                       InterpreterCache* cache) {
  const auto candidates = python_mappings(parse_maps(maps, kMaxMapsLines));
  if (candidates.empty()) {
    return NoStacks{NoPython::not_python, "not a Python program: no python or libpython is mapped"};
  }
  NoStacks last{NoPython::unreadable, ""};
  for (const auto& m : candidates) {
    const MappedFile file = open(m);
    if (!file.read) {
      last = {NoPython::unreadable, m.path + " cannot be opened as the file the process maps"};
      continue;
    }
    const bool keyed = cache != nullptr && !file.identity.empty();
    auto known = keyed ? cache->find(file.identity) : std::nullopt;
    auto found = known ? *known : describe_interpreter(file.read);
    if (keyed && !known) cache->keep(file.identity, found);
    if (found) {
      auto loaded = [&](uint64_t at) { return at == 0 ? 0 : m.start + (at - found->load_base); };
      return PythonProcess{loaded(found->runtime), loaded(found->py_version), found->minor,
                           found->debug_build, 0};
    }
    if (found.error().code == Errc::not_found) {
      last = {NoPython::no_runtime, m.path +
                                        " exports no _PyRuntime and has no .PyRuntime section "
                                        "(an interpreter built without its symbols)"};
    } else {
      last = {NoPython::inconsistent, m.path + ": " + found.error().message};
    }
  }
  return last;
}

}  // namespace dp::stacks
