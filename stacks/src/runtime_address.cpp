#include "dp/stacks/runtime_address.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>

namespace dp::stacks {
namespace {

// Far above any real python's (about 40 sections, a few program headers,
// a section-name table under 1 KiB): only garbage reaches them.
constexpr size_t kMaxSections = 4096, kMaxProgramHeaders = 256, kMaxNames = 1 << 20;

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

Result<uint64_t> load_base(const FileReader& file, const Elf64_Ehdr& eh) {
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > kMaxProgramHeaders) {
    return bad_elf("program headers");
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!read_struct(file, eh.e_phoff + uint64_t{i} * sizeof ph, ph)) return bad_elf("cut short");
    if (ph.p_type != PT_LOAD) continue;
    const uint64_t align = ph.p_align > 1 ? ph.p_align : 1;
    return ph.p_vaddr - ph.p_vaddr % align;
  }
  return bad_elf("no loadable segment");
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
  Elf64_Ehdr eh;
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
  Elf64_Shdr names;
  if (!read_struct(file, eh.e_shoff + uint64_t{eh.e_shstrndx} * sizeof names, names) ||
      names.sh_size == 0 || names.sh_size > kMaxNames) {
    return bad_elf("section names");
  }
  std::vector<std::byte> table(names.sh_size);
  if (!file(names.sh_offset, table)) return bad_elf("section names cut short");
  for (uint16_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!read_struct(file, eh.e_shoff + uint64_t{i} * sizeof sh, sh)) return bad_elf("cut short");
    if (sh.sh_name >= table.size() || table.size() - sh.sh_name <= name.size() ||
        std::memcmp(table.data() + sh.sh_name, name.data(), name.size()) != 0 ||
        table[sh.sh_name + name.size()] != std::byte{0}) {
      continue;
    }
    auto base = load_base(file, eh);
    if (!base) return base.error();
    return SectionPlace{sh.sh_addr, sh.sh_size, *base};
  }
  return make_error(Errc::not_found, "no " + std::string(name) + " section");
}

}  // namespace dp::stacks
