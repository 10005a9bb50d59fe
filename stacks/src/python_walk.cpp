#include "dp/stacks/python_walk.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dp/stacks/debug_offsets.hpp"
#include "dp/stacks/line_table.hpp"
#include "dp/stacks/python_layout.hpp"
#include "unicode_text.hpp"

namespace dp::stacks {
namespace {

using Bytes = std::vector<std::byte>;

// A field of a struct copied out of the process; parse_debug_offsets checked
// that it lies inside the struct's size, which is what was copied.
template <class T>
T field(const Bytes& b, uint64_t at) {
  T v{};
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

// 3.14's f_executable is a tagged _PyStackRef (its low bits flag deferred
// references); 3.13's plain PyObject* has them clear, objects being aligned.
constexpr uint64_t kTagBits = 7;
// A thread list or a frame chain that changed while it was read is read again, once.
constexpr int kAttempts = 2;
constexpr uint64_t kMaxTid = 4 << 20;  // the kernel's PID_MAX_LIMIT
// Where glibc keeps a thread's kernel tid in its struct pthread (x86-64 and
// aarch64, every release since 2.x); another libc's place is searched for in
// the main thread's struct, whose tid is the pid.
constexpr uint64_t kGlibcTid = 0x2d0, kPthreadSearch = 2048;

struct CodeInfo {
  std::string qualname, filename;
  int first_line = 0;
  uint64_t code_start = 0;  // co_code_adaptive: instruction offsets count from here
  std::vector<uint8_t> line_table;
};

enum class Step { frame, skip, broken };

class Walker {
 public:
  Walker(RemoteMemory& memory, const PythonProcess& process, const WalkLimits& limits,
         const KnownTypes& types)
      : process_(process),
        limits_(limits),
        mem_(memory, limits, BoundedMemory::Clock::now() + limits.time),
        types_(types) {}
  ProcessStacks run();
  const KnownTypes& types() const { return types_; }

 private:
  std::optional<NoStacks> read_offsets();
  std::optional<NoStacks> table_layout();
  std::optional<NoStacks> walk_threads(std::vector<ThreadStack>& out);
  std::optional<NoStacks> interpreter_threads(uint64_t interp, std::unordered_set<uint64_t>& seen,
                                              std::vector<ThreadStack>& out);
  void pthread_tids(std::vector<ThreadStack>& threads);
  std::optional<uint64_t> frame_of(uint64_t tstate, const Bytes* ts);
  void thread_frames(uint64_t tstate, uint64_t frame, ThreadStack& t);
  bool frames_once(uint64_t frame, ThreadStack& t);
  Step frame_at(uint64_t addr, Frame& out, uint64_t& previous, std::optional<SourceSpan>* span);
  Step frame_object_at(const Bytes& fb, Frame& out, std::optional<SourceSpan>* span);
  const CodeInfo* code(uint64_t addr);
  bool is_type(uint64_t type, uint64_t& known, std::string_view name);
  std::optional<std::string> str_object(uint64_t addr);
  std::optional<std::vector<uint8_t>> bytes_object(uint64_t addr);
  bool read(uint64_t addr, Bytes& buf, uint64_t n);
  std::optional<uint64_t> u64(uint64_t addr);
  NoStacks stopped(const std::string& what) const;

  const PythonProcess& process_;
  const WalkLimits& limits_;
  BoundedMemory mem_;
  PythonLayout off_{};
  std::string version_;
  KnownTypes types_;  // each type checked by its name once
  std::unordered_map<uint64_t, std::optional<CodeInfo>> codes_;
  std::vector<uint64_t> pthreads_;  // 3.8-3.10: each listed thread's pthread_t, as `out`
};

ProcessStacks Walker::run() {
  ProcessStacks out;
  std::optional<NoStacks> failed = read_offsets();
  if (!failed) {
    out.python = version_;
    for (int attempt = 1;; ++attempt) {
      out.threads.clear();
      pthreads_.clear();
      failed = walk_threads(out.threads);
      if (!failed || failed->why != NoPython::inconsistent || attempt == kAttempts) break;
      mem_.forget();
    }
  }
  if (!failed && off_.thread_id == ThreadId::pthread) pthread_tids(out.threads);
  if (failed) {
    out.threads.clear();
    out.no_python = std::move(*failed);
  }
  out.bytes_read = mem_.bytes();
  out.reads = mem_.reads();
  return out;
}

NoStacks Walker::stopped(const std::string& what) const {
  if (mem_.stop() == MemoryStop::budget) {
    return {NoPython::over_budget, "read limits spent (" + std::to_string(mem_.bytes()) +
                                       " bytes, " + std::to_string(mem_.reads()) +
                                       " reads) while reading " + what};
  }
  if (mem_.stop() == MemoryStop::deadline) {
    return {NoPython::over_time, "the " + std::to_string(limits_.time.count()) +
                                     " ms deadline passed while reading " + what};
  }
  return {NoPython::inconsistent, what + " could not be read (changed while read, or garbage)"};
}

std::optional<NoStacks> Walker::read_offsets() {
  const uint64_t runtime = process_.runtime;
  Bytes raw;
  if (!read(runtime, raw, kDebugHeaderBytes)) {
    if (mem_.bound_reached()) return stopped("_PyRuntime");
    return NoStacks{NoPython::unreadable, "the memory of _PyRuntime could not be read"};
  }
  if (!has_debug_cookie(raw)) return table_layout();
  auto header = check_debug_header(raw);
  if (auto* none = std::get_if<NoStacks>(&header)) return *none;
  const DebugLayout& layout = *std::get<const DebugLayout*>(header);
  if (!read(runtime, raw, layout.total)) return stopped("the debug offsets");
  auto parsed = parse_debug_offsets(layout, raw);
  if (auto* none = std::get_if<NoStacks>(&parsed)) return *none;
  off_ = std::get<PythonLayout>(parsed);
  version_ = python_version_text(off_.version);
  return std::nullopt;
}

// A Python before 3.13: its version from Py_Version or its file's API, then
// that minor version's table.
std::optional<NoStacks> Walker::table_layout() {
  uint64_t version = 0;
  unsigned minor = process_.minor;
  if (process_.py_version != 0) {
    auto v = u64(process_.py_version);
    if (!v) return stopped("Py_Version");
    version = *v;
    minor = (version >> 16) & 0xff;
    if ((version >> 24) != 3) {
      return NoStacks{NoPython::inconsistent, "Py_Version holds no Python 3 version"};
    }
    if (minor > kNewestTabledMinor) {
      return NoStacks{NoPython::inconsistent, "Python " + python_version_text(version) +
                                                  " without the debug offsets its version has"};
    }
    if (minor < 11) {
      return NoStacks{NoPython::inconsistent, "Py_Version says " + python_version_text(version) +
                                                  ", which had no Py_Version"};
    }
  }
  const std::string text =
      version != 0 ? python_version_text(version) : "3." + std::to_string(minor);
  const PythonLayout* layout = layout_before_debug_offsets(minor);
  if (layout == nullptr) {
    return NoStacks{NoPython::unsupported_python,
                    minor == 0 ? "a Python older than 3.8, or one whose exported API does not "
                                 "tell its version: this reader knows 3.8 to 3.14"
                               : "Python " + text + ": this reader knows 3.8 to 3.14"};
  }
  if (process_.debug_build) {
    return NoStacks{NoPython::debug_build,
                    "a debug build of Python " + text +
                        " (python3.X-dbg): its objects have other layouts; its frames show "
                        "under the release build"};
  }
  off_ = *layout;
  off_.version = version != 0 ? version : 0x03000000 | uint64_t{minor} << 16;
  version_ = text;
  return std::nullopt;
}

std::optional<NoStacks> Walker::walk_threads(std::vector<ThreadStack>& out) {
  auto interp = u64(process_.runtime + off_.runtime.interpreters_head);
  if (!interp) return stopped("the interpreters list");
  std::unordered_set<uint64_t> interps, threads;
  while (*interp != 0 && interps.size() < limits_.max_interpreters) {
    if (!interps.insert(*interp).second) {
      return NoStacks{NoPython::inconsistent, "the interpreters list loops"};
    }
    if (auto failed = interpreter_threads(*interp, threads, out)) return failed;
    interp = u64(*interp + off_.interp.next);
    if (!interp) return stopped("the interpreters list");
  }
  return std::nullopt;
}

std::optional<NoStacks> Walker::interpreter_threads(uint64_t interp,
                                                    std::unordered_set<uint64_t>& seen,
                                                    std::vector<ThreadStack>& out) {
  auto tstate = u64(interp + off_.interp.threads_head);
  if (!tstate) return stopped("an interpreter's threads");
  const size_t first = out.size();
  Bytes ts;
  while (*tstate != 0 && out.size() < limits_.max_threads) {
    if (!seen.insert(*tstate).second) {
      return NoStacks{NoPython::inconsistent, "the thread list loops"};
    }
    if (!read(*tstate, ts, off_.thread.size)) return stopped("a thread state");
    const auto id = field<uint64_t>(ts, off_.thread.native_thread_id);
    ThreadStack t;
    if (off_.thread_id == ThreadId::pthread) {
      pthreads_.push_back(id);  // its tid is found once every thread is listed
    } else if (id > kMaxTid) {
      return NoStacks{NoPython::inconsistent, "a thread state holds no thread id"};
    } else {
      t.tid = static_cast<int>(id);
    }
    auto frame = frame_of(*tstate, &ts);
    if (frame) thread_frames(*tstate, *frame, t);
    t.truncated = t.truncated || !frame;  // its _PyCFrame could not be read
    if (mem_.bound_reached()) return stopped("a thread's frames");
    out.push_back(std::move(t));
    *tstate = field<uint64_t>(ts, off_.thread.next);
  }
  // The list is newest first; the main thread, the oldest, goes first.
  std::reverse(out.begin() + static_cast<long>(first), out.end());
  if (off_.thread_id == ThreadId::pthread) {
    std::reverse(pthreads_.begin() + static_cast<long>(first), pthreads_.end());
  }
  return std::nullopt;
}

// 3.8-3.10 keep a pthread_t, the address of libc's struct pthread, in which
// the kernel tid sits: at glibc's place, or where the main thread's struct
// holds the pid. Threads whose tid cannot be told keep 0.
void Walker::pthread_tids(std::vector<ThreadStack>& threads) {
  if (process_.pid <= 0 || pthreads_.size() != threads.size() || threads.empty()) return;
  auto tid_at = [&](uint64_t pthread, uint64_t at) -> int {
    Bytes b;
    if (pthread == 0 || !read(pthread + at, b, sizeof(int32_t))) return 0;
    const auto tid = field<int32_t>(b, 0);
    return tid > 0 && static_cast<uint64_t>(tid) <= kMaxTid ? tid : 0;
  };
  std::optional<uint64_t> at;
  for (uint64_t p : pthreads_) {
    if (tid_at(p, kGlibcTid) == process_.pid) at = kGlibcTid;
    if (at) break;
  }
  Bytes main;
  if (!at && read(pthreads_.front(), main, kPthreadSearch)) {
    for (uint64_t i = 0; i + 4 <= main.size() && !at; i += 4) {
      if (field<int32_t>(main, i) == process_.pid) at = i;
    }
  }
  if (!at) return;
  for (size_t i = 0; i < threads.size(); ++i) threads[i].tid = tid_at(pthreads_[i], *at);
}

// The thread's innermost frame, from its state (`ts`, or read again when
// null): 3.11 and 3.12 keep it in the _PyCFrame the state points at.
std::optional<uint64_t> Walker::frame_of(uint64_t tstate, const Bytes* ts) {
  std::optional<uint64_t> frame = ts != nullptr ? field<uint64_t>(*ts, off_.thread.current_frame)
                                                : u64(tstate + off_.thread.current_frame);
  if (!frame || off_.frames != FrameModel::cframe || *frame == 0) return frame;
  return u64(*frame + off_.thread.cframe_frame);
}

void Walker::thread_frames(uint64_t tstate, uint64_t frame, ThreadStack& t) {
  for (int attempt = 1;; ++attempt) {
    t.frames.clear();
    t.truncated = false;
    t.innermost_at.reset();
    if (frames_once(frame, t) || attempt == kAttempts || mem_.bound_reached()) return;
    mem_.forget();
    auto again = frame_of(tstate, nullptr);
    if (!again) return;
    frame = *again;
  }
}

// False when the chain broke (a read failed, an owner or code object is not
// what it should be, or it loops); the frames before the break stay.
bool Walker::frames_once(uint64_t frame, ThreadStack& t) {
  std::unordered_set<uint64_t> seen;
  for (size_t steps = 0; frame != 0; ++steps) {
    if (steps == limits_.max_frames) {
      t.truncated = true;
      return true;
    }
    Frame f;
    uint64_t previous = 0;
    // Only the innermost frame's span is wanted: it names what the thread calls.
    auto* span = t.frames.empty() ? &t.innermost_at : nullptr;
    const Step step = seen.insert(frame).second ? frame_at(frame, f, previous, span) : Step::broken;
    if (step == Step::broken) {
      t.truncated = true;
      return false;
    }
    if (step == Step::frame) t.frames.push_back(std::move(f));
    frame = previous;
  }
  return true;
}

Step Walker::frame_at(uint64_t addr, Frame& out, uint64_t& previous,
                      std::optional<SourceSpan>* span) {
  Bytes fb;
  if (!read(addr, fb, off_.frame.size)) return Step::broken;
  previous = field<uint64_t>(fb, off_.frame.previous);
  if (off_.frames == FrameModel::frame_object) return frame_object_at(fb, out, span);
  const int owner = field<int8_t>(fb, off_.frame.owner);
  if (owner < 0 || owner > off_.owner_max) return Step::broken;
  const uint64_t executable = field<uint64_t>(fb, off_.frame.executable) & ~kTagBits;
  if (owner >= off_.first_skipped_owner || executable == 0) return Step::skip;
  const CodeInfo* c = code(executable);
  if (c == nullptr) return Step::broken;
  out = Frame{c->qualname, c->filename, -1};
  const uint64_t instr_ptr = field<uint64_t>(fb, off_.frame.instr_ptr);
  // 3.11 and 3.12 start a frame one unit before its code: one that has not
  // run yet, which CPython's own views leave out.
  if (off_.frames == FrameModel::cframe && instr_ptr < c->code_start) return Step::skip;
  if (instr_ptr >= c->code_start && (instr_ptr - c->code_start) % 2 == 0) {
    const uint64_t unit = (instr_ptr - c->code_start) / 2;
    // The innermost frame's table is decoded once: a span holds its line.
    if (span != nullptr) *span = span_for_instruction(c->line_table, c->first_line, unit);
    out.line = span != nullptr && *span
                   ? (*span)->line
                   : line_for_instruction(c->line_table, c->first_line, unit).value_or(-1);
  }
  return Step::frame;
}

// 3.8-3.10: a PyFrameObject, checked to be one, its line from f_lasti.
Step Walker::frame_object_at(const Bytes& fb, Frame& out, std::optional<SourceSpan>* span) {
  if (!is_type(field<uint64_t>(fb, off_.object.ob_type), types_.frame, "frame")) {
    return Step::broken;
  }
  const CodeInfo* c = code(field<uint64_t>(fb, off_.frame.executable));
  if (c == nullptr) return Step::broken;
  const int64_t lasti = field<int32_t>(fb, off_.frame.instr_ptr);
  const std::optional<int> line =
      off_.lines == LineFormat::lnotab
          ? std::optional<int>(line_for_lnotab(c->line_table, c->first_line, lasti))
          : line_for_pairs(c->line_table, c->first_line, lasti * 2);
  out = Frame{c->qualname, c->filename, line.value_or(-1)};
  // No columns before 3.11: the call is looked for on the whole line.
  if (span != nullptr && out.line > 0) *span = SourceSpan{out.line, out.line, kNoColumn, kNoColumn};
  return Step::frame;
}

const CodeInfo* Walker::code(uint64_t addr) {
  auto [it, fresh] = codes_.try_emplace(addr);
  if (!fresh) return it->second ? &*it->second : nullptr;
  Bytes cb;
  if (!read(addr, cb, off_.code.size) ||
      !is_type(field<uint64_t>(cb, off_.object.ob_type), types_.code, "code")) {
    return nullptr;
  }
  auto qualname = str_object(field<uint64_t>(cb, off_.code.qualname));
  auto filename = str_object(field<uint64_t>(cb, off_.code.filename));
  auto table = bytes_object(field<uint64_t>(cb, off_.code.linetable));
  if (!qualname || !filename || !table) return nullptr;
  it->second = CodeInfo{std::move(*qualname), std::move(*filename),
                        field<int32_t>(cb, off_.code.firstlineno), addr + off_.code.code_adaptive,
                        std::move(*table)};
  return &*it->second;
}

// The type at `type` is the one named `name` (tp_name), checked once per
// walk: `known` keeps its address, and every later object must match it.
bool Walker::is_type(uint64_t type, uint64_t& known, std::string_view name) {
  if (type == 0) return false;
  if (known != 0) return type == known;
  auto tp_name = u64(type + off_.type.tp_name);
  Bytes text;
  if (!tp_name || !read(*tp_name, text, name.size() + 1)) return false;
  if (std::memcmp(text.data(), name.data(), name.size()) != 0 || text.back() != std::byte{0}) {
    return false;
  }
  known = type;
  return true;
}

std::optional<std::string> Walker::str_object(uint64_t addr) {
  Bytes h;
  if (addr == 0 || !read(addr, h, off_.unicode.ascii_size) ||
      !is_type(field<uint64_t>(h, off_.object.ob_type), types_.str, "str")) {
    return std::nullopt;
  }
  const auto shape =
      compact_string_shape(field<uint32_t>(h, off_.unicode.state), off_.unicode.compact_extra);
  const auto length = field<int64_t>(h, off_.unicode.length);
  if (!shape || length < 0) return std::nullopt;
  const auto chars = std::min<uint64_t>(static_cast<uint64_t>(length), limits_.max_string);
  Bytes data;
  if (!read(addr + off_.unicode.ascii_size + shape->data_after_header, data, chars * shape->kind)) {
    return std::nullopt;
  }
  std::string text = utf8_of(data, shape->kind);
  if (chars < static_cast<uint64_t>(length) || text.size() > limits_.max_string) {
    cut_utf8(text, limits_.max_string);  // wide characters take up to 4 bytes each
    text += "...";
  }
  return text;
}

std::optional<std::vector<uint8_t>> Walker::bytes_object(uint64_t addr) {
  Bytes h;
  if (addr == 0 || !read(addr, h, off_.bytes.ob_sval) ||
      !is_type(field<uint64_t>(h, off_.object.ob_type), types_.bytes, "bytes")) {
    return std::nullopt;
  }
  const auto size = field<int64_t>(h, off_.bytes.ob_size);
  Bytes data;
  if (size < 0 || static_cast<uint64_t>(size) > limits_.max_line_table ||
      !read(addr + off_.bytes.ob_sval, data, static_cast<uint64_t>(size))) {
    return std::nullopt;
  }
  // Byte by byte: an empty bytes object leaves `data` without storage, which memcpy may not see.
  std::vector<uint8_t> out;
  out.reserve(data.size());
  for (std::byte b : data) out.push_back(static_cast<uint8_t>(b));
  return out;
}

bool Walker::read(uint64_t addr, Bytes& buf, uint64_t n) {
  buf.resize(n);
  return mem_.read(addr, buf);
}

std::optional<uint64_t> Walker::u64(uint64_t addr) {
  Bytes b;
  if (!read(addr, b, sizeof(uint64_t))) return std::nullopt;
  return field<uint64_t>(b, 0);
}

}  // namespace

ProcessStacks walk_python(RemoteMemory& memory, const PythonProcess& process,
                          const WalkLimits& limits, KnownTypes* types) {
  Walker walker(memory, process, limits, types != nullptr ? *types : KnownTypes{});
  ProcessStacks out = walker.run();
  if (types != nullptr) *types = walker.types();
  return out;
}

}  // namespace dp::stacks
