#include "dp/stacks/call_site.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <set>

#include "dp/unique_fd.hpp"

namespace dp::stacks {
namespace {

constexpr size_t kMaxCallee = 200;
// Words a '(' may follow that call nothing.
const std::set<std::string_view> kKeywords = {
    "and", "as", "assert", "await", "del", "elif",   "else",  "for",  "from",  "if",     "import",
    "in",  "is", "lambda", "not",   "or",  "return", "while", "with", "yield", "except", "raise"};
// Source reads waiting at once in this process: a file system that stopped
// answering holds at most this many reader threads, round after round.
constexpr int kMaxWaiting = 4;
std::atomic<int> waiting{0};

bool name_start(unsigned char c) { return c == '_' || std::isalpha(c) != 0 || c >= 0x80; }
bool name_char(unsigned char c) { return name_start(c) || std::isdigit(c) != 0; }

// Where the line `n` lines past the start of `text` starts; npos past its end.
size_t line_start(std::string_view text, long n) {
  size_t at = 0;
  for (long l = 0; l < n; ++l) {
    at = text.find('\n', at);
    if (at == std::string_view::npos) return at;
    ++at;
  }
  return at;
}

// The byte offset of (line, column) in `text`, whose first line is `first`;
// nullopt when the column is past that line's end.
std::optional<size_t> offset_of(std::string_view text, int first, int line, int column) {
  const size_t at = line_start(text, static_cast<long>(line) - first);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t line_end = std::min(text.find('\n', at), text.size());
  if (column < 0 || static_cast<size_t>(column) > line_end - at) return std::nullopt;
  return at + static_cast<size_t>(column);
}

// Past the string literal whose quote is at `at` (triple-quoted or not);
// npos when it does not end inside `s`.
size_t past_string(std::string_view s, size_t at) {
  const char q = s[at];
  const bool triple = s.compare(at, 3, std::string(3, q)) == 0;
  for (size_t i = at + (triple ? 3 : 1); i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == q && (!triple || s.compare(i, 3, std::string(3, q)) == 0)) {
      return i + (triple ? 3 : 1);
    } else if (s[i] == '\n' && !triple) {
      return std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

// Where the bracket opened at `open` closes; npos when it does not.
size_t matching_close(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size();) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      i = past_string(s, i);
      if (i == std::string_view::npos) return i;
      continue;
    }
    if (c == '#') {
      i = s.find('\n', i);
      if (i == std::string_view::npos) return i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && --depth == 0) return i;
    ++i;
  }
  return std::string_view::npos;
}

// A file's text as far as it was read, and how many whole lines that is.
struct Source {
  std::string text;
  long lines = 0;
};

// The source of `path` as process `pid` sees it, its first `lines` lines
// at least where it has them (read no further than the chunk that ends
// them), at most `max` bytes; empty when it is not a regular file that opens.
Source source_of(int pid, const std::string& path, int lines, size_t max) {
  Source out;
  const std::string at = "/proc/" + std::to_string(pid) + "/root" + path;
  const UniqueFd file(::open(at.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (!file || ::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) return out;
  constexpr size_t kChunk = 64 * 1024;
  std::string& text = out.text;
  while (text.size() < max && out.lines < lines) {
    const size_t from = text.size();
    text.resize(std::min(max, from + kChunk));
    const ssize_t n = ::read(file.get(), text.data() + from, text.size() - from);
    text.resize(from + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n <= 0) break;
    out.lines += std::count(text.begin() + static_cast<long>(from), text.end(), '\n');
  }
  return out;
}

// `call` is exactly one call of a dotted name, NAME(.NAME)*(...): that name.
std::optional<std::string> dotted_call(std::string_view call) {
  size_t i = 0;
  while (i < call.size()) {  // NAME(.NAME)*
    if (!name_start(static_cast<unsigned char>(call[i]))) return std::nullopt;
    while (i < call.size() && name_char(static_cast<unsigned char>(call[i]))) ++i;
    if (i == call.size() || call[i] != '.') break;
    ++i;
  }
  const size_t name_end = i;
  if (name_end == 0 || name_end > kMaxCallee) return std::nullopt;
  while (i < call.size() && (call[i] == ' ' || call[i] == '\t')) ++i;
  if (i == call.size() || call[i] != '(') return std::nullopt;
  if (matching_close(call, i) != call.size() - 1) return std::nullopt;
  return std::string(call.substr(0, name_end));
}

}  // namespace

std::optional<std::string> callee_of(std::string_view text, const SourceSpan& span) {
  if (span.end_line < span.line) return std::nullopt;
  auto start = offset_of(text, span.line, span.line, span.column);
  auto end = offset_of(text, span.line, span.end_line, span.end_column);
  if (!start || !end || *end <= *start) return std::nullopt;
  return dotted_call(text.substr(*start, *end - *start));
}

std::optional<std::string> callee_of_line(std::string_view text, int max_lines) {
  // The statement: its first line, and the lines after while a bracket is open.
  int depth = 0, lines = 1;
  std::optional<std::string> callee;
  int calls = 0;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\'' || c == '"') {
      i = past_string(text, i);
      if (i == std::string_view::npos) return std::nullopt;
      continue;
    }
    if (c == '#' || (c == '\n' && depth <= 0)) break;
    if (c == '\n' && ++lines > max_lines) return std::nullopt;
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (!name_start(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    // A dotted name; what stands before it says whether it is one of its own.
    const char before = i == 0 ? ' ' : text[i - 1];
    const size_t start = i;
    while (i < text.size() && (name_char(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    std::string_view name = text.substr(start, i - start);
    size_t j = i;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
    if (j == text.size() || text[j] != '(' || kKeywords.count(name) != 0) continue;
    ++calls;
    // A call of what a call, a subscript or a literal gave is no name's.
    const bool plain = before != '.' && before != ')' && before != ']' && name.back() != '.' &&
                       name.find("..") == std::string_view::npos && name.size() <= kMaxCallee;
    callee = plain ? std::optional<std::string>(name) : std::nullopt;
  }
  if (calls != 1) return std::nullopt;
  return callee;
}

bool library_file(const std::string& f) {
  return f.empty() || f[0] == '<' || f.find("/site-packages/") != std::string::npos ||
         f.find("/dist-packages/") != std::string::npos ||
         f.find("/lib/python3") != std::string::npos;
}

void name_calls(ProcessStacks& p, const SourceLimits& limits) {
  std::map<std::string, Source> sources;  // read again only when a later span lies further
  for (auto& t : p.threads) {
    if (t.frames.empty() || !t.innermost_at) continue;
    const SourceSpan& span = *t.innermost_at;
    const bool whole_line = span.column == kNoColumn;
    // A whole line's call may go on over the lines after it.
    const int last_line = whole_line ? span.line + limits.max_span_lines : span.end_line;
    const std::string& file = t.frames.front().file;
    if (file.empty() || file[0] != '/' || span.end_line - span.line >= limits.max_span_lines ||
        (limits.program_files_only && library_file(file))) {
      continue;
    }
    auto it = sources.find(file);
    if (it == sources.end() || it->second.lines < last_line) {
      size_t max = limits.max_file_bytes;
      if (SourceBudget* b = limits.budget) {  // the round's bytes and time
        const long long left = b->bytes.load();
        if (left <= 0 || std::chrono::steady_clock::now() >= b->deadline) return;
        max = std::min(max, static_cast<size_t>(left));
      }
      if (waiting.fetch_add(1) >= kMaxWaiting) {
        --waiting;
        return;
      }
      it = sources.insert_or_assign(file, source_of(p.pid, file, last_line, max)).first;
      --waiting;
      if (limits.budget) limits.budget->bytes -= static_cast<long long>(it->second.text.size());
    }
    const std::string_view text = it->second.text;
    const size_t at = line_start(text, span.line - 1L);
    if (at == std::string_view::npos) continue;
    auto name = whole_line ? callee_of_line(text.substr(at), limits.max_span_lines)
                           : callee_of(text.substr(at), span);
    if (name) t.call = std::move(*name);
  }
}

}  // namespace dp::stacks
