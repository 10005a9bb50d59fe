#include "recorded_process.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

namespace dp::stacks::image {
namespace {

constexpr const char* kMagic = "dp-stacks-image 1";
constexpr size_t kMaxRecording = 256 << 20;  // unpacked; a recording is well under 4 MiB

struct GzClose {
  void operator()(gzFile f) const { gzclose(f); }
};
using Gz = std::unique_ptr<std::remove_pointer_t<gzFile>, GzClose>;

void put_block(std::string& out, const std::string& head, std::span<const std::byte> bytes) {
  out += head + " " + std::to_string(bytes.size()) + "\n";
  out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::span<const std::byte> bytes_of(const std::string& s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << std::hex << v;
  return s.str();
}

void put_pages(std::string& out, const Pages& pages) {
  for (const auto& [at, bytes] : pages) put_block(out, "page " + hex(at), bytes);
}

// A reader of the unpacked text: a header line, then its block's bytes.
class Parser {
 public:
  explicit Parser(std::string text) : text_(std::move(text)) {}
  std::optional<std::string> line() {
    const size_t nl = text_.find('\n', at_);
    if (nl == std::string::npos) return std::nullopt;
    std::string l = text_.substr(at_, nl - at_);
    at_ = nl + 1;
    return l;
  }
  std::optional<std::string> block(size_t n) {
    if (n > text_.size() - at_) return std::nullopt;
    std::string b = text_.substr(at_, n);
    at_ += n;
    return b;
  }

 private:
  std::string text_;
  size_t at_ = 0;
};

Error bad(const std::string& path, const std::string& why) {
  return make_error(Errc::protocol, path + ": not a stacks recording: " + why);
}

// "WORD REST N": the word, the rest, the count.
bool split_head(const std::string& line, std::string& word, std::string& rest, size_t& n) {
  const size_t first = line.find(' '), last = line.rfind(' ');
  if (first == std::string::npos) return false;
  word = line.substr(0, first);
  rest = first == last ? "" : line.substr(first + 1, last - first - 1);
  const std::string count = line.substr(last + 1);
  if (count.empty() || count.size() > 12 ||
      count.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  n = std::stoull(count);
  return true;
}

std::vector<std::byte> as_bytes_vector(const std::string& s) {
  std::vector<std::byte> v(s.size());
  if (!s.empty()) std::memcpy(v.data(), s.data(), s.size());
  return v;
}

}  // namespace

Result<void> save_recording(const RecordedProcess& r, const std::string& path) {
  std::string out = std::string(kMagic) + "\npid " + std::to_string(r.pid) + "\n";
  put_block(out, "maps", bytes_of(r.maps));
  put_block(out, "truth", bytes_of(r.truth));
  for (const auto& [file, pages] : r.files) {
    out += "file " + file + " " + std::to_string(pages.size()) + "\n";
    put_pages(out, pages);
  }
  out += "memory " + std::to_string(r.memory.size()) + "\n";
  put_pages(out, r.memory);
  out += "end\n";
  Gz gz(gzopen(path.c_str(), "wb9"));
  if (!gz || gzwrite(gz.get(), out.data(), static_cast<unsigned>(out.size())) !=
                 static_cast<int>(out.size())) {
    return make_error(Errc::unavailable, path + ": cannot be written");
  }
  return {};
}

Result<RecordedProcess> load_recording(const std::string& path) {
  Gz gz(gzopen(path.c_str(), "rb"));
  if (!gz) return make_error(Errc::unavailable, path + ": cannot be opened");
  std::string text;
  char buf[1 << 16];
  for (int n; (n = gzread(gz.get(), buf, sizeof buf)) > 0 && text.size() < kMaxRecording;) {
    text.append(buf, static_cast<size_t>(n));
  }
  Parser p(std::move(text));
  RecordedProcess r;
  if (p.line() != kMagic) return bad(path, "no header");
  auto pid = p.line();
  if (!pid || pid->rfind("pid ", 0) != 0) return bad(path, "no pid");
  r.pid = std::atoi(pid->c_str() + 4);
  Pages* pages = nullptr;
  for (;;) {
    auto line = p.line();
    if (!line) return bad(path, "cut short");
    if (*line == "end") return r;
    std::string word, rest;
    size_t n = 0;
    if (!split_head(*line, word, rest, n)) return bad(path, "a line '" + line->substr(0, 80) + "'");
    if (word == "file" || word == "memory") {
      pages = word == "file" ? &r.files[rest] : &r.memory;
      continue;
    }
    auto block = p.block(n);
    if (!block) return bad(path, word + " cut short");
    if (word == "maps") r.maps = std::move(*block);
    if (word == "truth") r.truth = std::move(*block);
    if (word == "page") {
      if (pages == nullptr) return bad(path, "a page outside a file or memory");
      (*pages)[std::stoull(rest, nullptr, 16)] = as_bytes_vector(*block);
    }
  }
}

bool read_pages(const Pages& pages, uint64_t address, std::span<std::byte> out) {
  size_t got = 0;
  while (got < out.size()) {
    const uint64_t at = address + got, page = at - at % kPage;
    auto it = pages.find(page);
    if (it == pages.end() || at - page >= it->second.size()) return false;
    const size_t n = std::min<size_t>(out.size() - got, it->second.size() - (at - page));
    std::memcpy(out.data() + got, it->second.data() + (at - page), n);
    got += n;  // a short page (a file's last) ends the next round's find
  }
  return true;
}

MappedFileOpener recorded_files(const RecordedProcess& r) {
  return [&r](const Mapping& m) -> MappedFile {
    auto it = r.files.find(m.path);
    if (it == r.files.end()) return {};
    const Pages& pages = it->second;
    return {[&pages](uint64_t at, std::span<std::byte> out) { return read_pages(pages, at, out); },
            ""};
  };
}

std::map<int, std::vector<std::string>> truth_by_thread(const std::string& truth) {
  std::map<int, std::vector<std::string>> out;
  std::istringstream lines(truth);
  std::vector<std::string>* thread = nullptr;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("T ", 0) == 0) thread = &out[std::atoi(line.c_str() + 2)];
    if (line.rfind("F ", 0) == 0 && thread != nullptr) thread->push_back(line.substr(2));
  }
  return out;
}

bool RecordingMemory::read(uint64_t address, std::span<std::byte> out) {
  if (out.empty()) return true;
  if (out.size() - 1 > UINT64_MAX - address) return false;
  for (uint64_t page = address - address % kPage; page <= address + (out.size() - 1);
       page += kPage) {
    if (pages_.count(page) != 0) continue;
    std::vector<std::byte> bytes(kPage);
    if (!real_.read(page, bytes)) return false;
    pages_[page] = std::move(bytes);
  }
  return read_pages(pages_, address, out);
}

FileReader recording_file(FileReader real, Pages& pages) {
  return [real = std::move(real), &pages](uint64_t at, std::span<std::byte> out) {
    if (out.empty()) return true;
    for (uint64_t page = at - at % kPage; page < at + out.size(); page += kPage) {
      // The file's last page is short: kept as far as it goes.
      const uint64_t needed = std::min<uint64_t>(kPage, at + out.size() - page);
      auto it = pages.find(page);
      if (it != pages.end() && it->second.size() >= needed) continue;
      std::vector<std::byte> bytes(kPage);
      if (!real(page, bytes)) {
        bytes.resize(needed);
        if (!real(page, bytes)) return false;
      }
      pages[page] = std::move(bytes);
    }
    return read_pages(pages, at, out);
  };
}

}  // namespace dp::stacks::image
