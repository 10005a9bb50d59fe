#include "synthetic_python.hpp"

#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "dp/stacks/debug_offsets.hpp"

namespace dp::stacks::image {
namespace {

using O = ImageOffsets;
constexpr uint64_t kVersion313 = 0x030d05f0, kVersion314 = 0x030e08f0;
constexpr uint64_t kVersion311 = 0x030b02f0, kVersion312 = 0x030c03f0;
constexpr uint32_t kAsciiState = (1u << 2) | (1u << 5) | (1u << 6);  // kind 1, compact, ascii
constexpr uint32_t kUcs2State = (2u << 2) | (1u << 5);               // kind 2, compact
constexpr uint64_t kPthreadSize = 0x300;

class Writer {
 public:
  explicit Writer(uint64_t base) : base_(base) {}
  uint64_t alloc(size_t n) {
    bytes_.resize((bytes_.size() + 15) & ~size_t{15});
    const uint64_t at = base_ + bytes_.size();
    bytes_.resize(bytes_.size() + n);
    return at;
  }
  template <class T>
  void put(uint64_t at, T v) {
    std::memcpy(bytes_.data() + (at - base_), &v, sizeof v);
  }
  void raw(uint64_t at, const void* data, size_t n) {
    std::memcpy(bytes_.data() + (at - base_), data, n);
  }
  uint64_t cstring(const std::string& s) {
    const uint64_t at = alloc(s.size() + 1);
    raw(at, s.data(), s.size());
    return at;
  }
  std::vector<std::byte> take() { return std::move(bytes_); }

 private:
  uint64_t base_;
  std::vector<std::byte> bytes_;
};

struct Types {
  uint64_t code, str, bytes, frame;
};

using CodeKey = std::tuple<std::string, std::string, int, bool>;

CodeKey key_of(const SyntheticFrame& f) { return {f.function, f.file, f.first_line, f.ucs2}; }

// The layout a 3.13 or 3.14 image publishes: ImageOffsets, in the shape the
// walk takes them.
PythonLayout published_layout(uint64_t version, const DebugLayout& l) {
  PythonLayout o;
  o.version = version;
  o.owner_max = 4;
  o.first_skipped_owner = 3;
  const uint64_t interpreters_head = (l.total + 7) & ~uint64_t{7};
  o.runtime = {interpreters_head + 8, interpreters_head};
  o.interp = {O::interp_size, O::interp_next, O::threads_head};
  o.thread = {O::thread_size, O::thread_next, O::current_frame, O::tid, 0};
  o.frame = {O::frame_size, O::frame_previous, O::frame_executable, O::frame_instr_ptr,
             O::frame_owner};
  o.code = {O::code_size,      O::code_filename,    O::code_qualname,
            O::code_linetable, O::code_firstlineno, O::code_adaptive};
  o.object = {O::ob_type};
  o.type = {O::type_size, O::tp_name};
  o.bytes = {O::bytes_ob_size, O::bytes_ob_sval};
  o.unicode = {O::unicode_state, O::unicode_length, O::unicode_ascii_size, 16};
  return o;
}

// _PyRuntime's head: the cookie, the version, and the image's offsets at the layout's places.
void publish(Writer& w, uint64_t runtime, const DebugLayout& l, const PythonLayout& o) {
  w.raw(runtime, kDebugCookie, sizeof kDebugCookie);
  w.put<uint64_t>(runtime + 8, o.version);
  const std::pair<size_t, uint64_t> fields[] = {
      {l.runtime_size, o.runtime.size},
      {l.interpreters_head, o.runtime.interpreters_head},
      {l.interp_size, o.interp.size},
      {l.interp_next, o.interp.next},
      {l.threads_head, o.interp.threads_head},
      {l.thread_size, o.thread.size},
      {l.thread_next, o.thread.next},
      {l.current_frame, o.thread.current_frame},
      {l.native_thread_id, o.thread.native_thread_id},
      {l.frame_size, o.frame.size},
      {l.frame_previous, o.frame.previous},
      {l.frame_executable, o.frame.executable},
      {l.frame_instr_ptr, o.frame.instr_ptr},
      {l.frame_owner, o.frame.owner},
      {l.code_size, o.code.size},
      {l.code_filename, o.code.filename},
      {l.code_qualname, o.code.qualname},
      {l.code_linetable, o.code.linetable},
      {l.code_firstlineno, o.code.firstlineno},
      {l.code_adaptive, o.code.code_adaptive},
      {l.object_ob_type, o.object.ob_type},
      {l.type_size, o.type.size},
      {l.type_tp_name, o.type.tp_name},
      {l.bytes_ob_size, o.bytes.ob_size},
      {l.bytes_ob_sval, o.bytes.ob_sval},
      {l.unicode_state, o.unicode.state},
      {l.unicode_length, o.unicode.length},
      {l.unicode_ascii_size, o.unicode.ascii_size},
  };
  for (const auto& [at, value] : fields) w.put<uint64_t>(runtime + at, value);
}

class Builder {
 public:
  Builder(Writer& w, const PythonLayout& l) : w_(w), l_(l) {}
  void types() {
    auto type = [&](const std::string& name) {
      const uint64_t t = w_.alloc(l_.type.size);
      w_.put<uint64_t>(t + l_.type.tp_name, w_.cstring(name));
      return t;
    };
    t_ = {type("code"), type("str"), type("bytes"), type("frame")};
  }
  uint64_t code_object(const CodeKey& key, const std::set<int>& lines);
  // The frame of `f` at code unit `unit` of `code`, before `previous`.
  uint64_t frame(uint64_t code, uint64_t unit, uint64_t previous, uint64_t tag);
  uint64_t frame_type() const { return t_.frame; }

 private:
  uint64_t str_object(const std::string& s, bool ucs2);
  uint64_t bytes_object(const std::vector<uint8_t>& data);
  std::vector<uint8_t> line_table(int first_line, const std::set<int>& lines) const;

  Writer& w_;
  const PythonLayout& l_;
  Types t_{};
};

uint64_t Builder::str_object(const std::string& s, bool ucs2) {
  const uint64_t header = l_.unicode.ascii_size + (ucs2 ? l_.unicode.compact_extra : 0);
  const uint64_t at = w_.alloc(header + s.size() * (ucs2 ? 2 : 1) + 2);
  w_.put<uint64_t>(at + l_.object.ob_type, t_.str);
  w_.put<int64_t>(at + l_.unicode.length, static_cast<int64_t>(s.size()));
  w_.put<uint32_t>(at + l_.unicode.state, ucs2 ? kUcs2State : kAsciiState);
  for (size_t i = 0; i < s.size(); ++i) {
    if (ucs2) {
      w_.put<uint16_t>(at + header + 2 * i, static_cast<uint8_t>(s[i]));
    } else {
      w_.put<uint8_t>(at + header + i, static_cast<uint8_t>(s[i]));
    }
  }
  return at;
}

uint64_t Builder::bytes_object(const std::vector<uint8_t>& data) {
  const uint64_t at = w_.alloc(l_.bytes.ob_sval + data.size() + 1);
  w_.put<uint64_t>(at + l_.object.ob_type, t_.bytes);
  w_.put<int64_t>(at + l_.bytes.ob_size, static_cast<int64_t>(data.size()));
  w_.raw(at + l_.bytes.ob_sval, data.data(), data.size());
  return at;
}

// One instruction (one code unit, two bytes) per line the frames stand on,
// in order: a frame on the k-th line is at unit k.
std::vector<uint8_t> Builder::line_table(int first_line, const std::set<int>& lines) const {
  std::vector<uint8_t> table;
  int previous = first_line;
  bool first = true;
  for (int line : lines) {
    int delta = line - previous;
    if (l_.lines == LineFormat::locations) {
      const auto entry = line_entry_no_columns(1, delta);
      table.insert(table.end(), entry.begin(), entry.end());
    } else {
      // (bytes, line) pairs, a line jump past a byte's range split: lnotab
      // moves the address with the first part (its first instruction at 0
      // bytes), 3.10's pairs with the last (zero-length ranges fold into
      // the next).
      const bool lnotab = l_.lines == LineFormat::lnotab;
      std::vector<int> parts;
      for (; delta > 127 || delta<-127; delta -= delta> 0 ? 127 : -127) {
        parts.push_back(delta > 0 ? 127 : -127);
      }
      parts.push_back(delta);
      for (size_t i = 0; i < parts.size(); ++i) {
        const bool moves = lnotab ? i == 0 && !first : i + 1 == parts.size();
        table.push_back(moves ? 2 : 0);
        table.push_back(static_cast<uint8_t>(static_cast<int8_t>(parts[i])));
      }
    }
    previous = line;
    first = false;
  }
  return table;
}

uint64_t Builder::code_object(const CodeKey& key, const std::set<int>& lines) {
  const auto& [function, file, first_line, ucs2] = key;
  const uint64_t at = w_.alloc(l_.code.size);
  w_.put<uint64_t>(at + l_.object.ob_type, t_.code);
  w_.put<uint64_t>(at + l_.code.qualname, str_object(function, false));
  w_.put<uint64_t>(at + l_.code.filename, str_object(file, ucs2));
  w_.put<uint64_t>(at + l_.code.linetable, bytes_object(line_table(first_line, lines)));
  w_.put<int32_t>(at + l_.code.firstlineno, first_line);
  return at;
}

uint64_t Builder::frame(uint64_t code, uint64_t unit, uint64_t previous, uint64_t tag) {
  const uint64_t f = w_.alloc(l_.frame.size);
  w_.put<uint64_t>(f + l_.frame.previous, previous);
  w_.put<uint64_t>(f + l_.frame.executable, code | tag);
  if (l_.frames == FrameModel::frame_object) {
    w_.put<uint64_t>(f + l_.object.ob_type, t_.frame);
    // f_lasti counts bytes on 3.8 and 3.9, two a code unit; units on 3.10.
    const uint64_t lasti = l_.lines == LineFormat::lnotab ? 2 * unit : unit;
    w_.put<int32_t>(f + l_.frame.instr_ptr, static_cast<int32_t>(lasti));
  } else {
    w_.put<uint64_t>(f + l_.frame.instr_ptr, code + l_.code.code_adaptive + 2 * unit);
  }
  return f;
}

PythonLayout layout_of(unsigned minor) {
  if (minor >= 13) {
    const uint64_t version = minor == 13 ? kVersion313 : kVersion314;
    return published_layout(version, *layout_for_version(version));
  }
  PythonLayout l = *layout_before_debug_offsets(minor);
  l.version = minor == 11 ? kVersion311 : minor == 12 ? kVersion312 : 0x03000000 | minor << 16;
  return l;
}

}  // namespace

bool MemoryImage::read(uint64_t address, std::span<std::byte> out) {
  if (address < base_ || address - base_ > bytes_.size() ||
      out.size() > bytes_.size() - (address - base_)) {
    return false;
  }
  std::memcpy(out.data(), bytes_.data() + (address - base_), out.size());
  return true;
}

void MemoryImage::put(uint64_t address, std::span<const std::byte> data) {
  if (address < base_ || address - base_ + data.size() > bytes_.size()) return;
  std::memcpy(bytes_.data() + (address - base_), data.data(), data.size());
}

void MemoryImage::put_u64(uint64_t address, uint64_t value) {
  put(address, std::as_bytes(std::span<const uint64_t>(&value, 1)));
}

void MemoryImage::put_u8(uint64_t address, uint8_t value) {
  put(address, std::as_bytes(std::span<const uint8_t>(&value, 1)));
}

std::vector<uint8_t> line_entry_no_columns(unsigned units, int line_delta) {
  std::vector<uint8_t> out{static_cast<uint8_t>(0x80 | (13u << 3) | ((units - 1) & 7u))};
  uint32_t v = line_delta < 0 ? (static_cast<uint32_t>(-line_delta) << 1) | 1u
                              : static_cast<uint32_t>(line_delta) << 1;
  while (v >= 64) {
    out.push_back(static_cast<uint8_t>(64 | (v & 63)));
    v >>= 6;
  }
  out.push_back(static_cast<uint8_t>(v));
  return out;
}

namespace {

// A thread's state, naming its tid as the version does (in its pthread's
// struct, or itself).
uint64_t thread_state(Writer& w, const PythonLayout& l, int tid, SyntheticPython& p) {
  const uint64_t ts = w.alloc(l.thread.size);
  if (l.thread_id == ThreadId::pthread) {
    const uint64_t pthread = w.alloc(kPthreadSize);
    w.put<int32_t>(pthread + kImagePthreadTid, tid);
    w.put<uint64_t>(ts + l.thread.native_thread_id, pthread);
    p.pthreads.push_back(pthread);
  } else {
    w.put<uint64_t>(ts + l.thread.native_thread_id, static_cast<uint64_t>(tid));
  }
  return ts;
}

// A thread's frames, innermost first; built outermost first, so that each
// frame knows the one before it (`entry`: the interpreter's own, or 0).
std::vector<uint64_t> frame_chain(Builder& b, unsigned minor, const SyntheticThread& t,
                                  uint64_t entry, const std::map<CodeKey, std::set<int>>& lines,
                                  const std::map<CodeKey, uint64_t>& codes) {
  std::vector<uint64_t> frames(t.frames.size());
  uint64_t previous = entry;
  for (size_t i = t.frames.size(); i-- > 0;) {
    const auto& f = t.frames[i];
    const auto& code_lines = lines.at(key_of(f));
    const auto unit =
        static_cast<uint64_t>(std::distance(code_lines.begin(), code_lines.find(f.line)));
    const uint64_t tag = minor == 14 && i % 2 == 1 ? 1 : 0;
    frames[i] = b.frame(codes.at(key_of(f)), unit, previous, tag);
    previous = frames[i];
  }
  return frames;
}

}  // namespace

SyntheticPython build_synthetic_python(unsigned minor, const std::vector<SyntheticThread>& threads,
                                       uint64_t base) {
  Writer w(base);
  SyntheticPython p;
  p.layout = layout_of(minor);
  const PythonLayout& l = p.layout;
  p.runtime = w.alloc(l.runtime.size);
  p.process.runtime = p.runtime;
  p.process.pid = threads.empty() ? 0 : threads.front().tid;
  if (minor >= 13) {
    publish(w, p.runtime, *layout_for_version(l.version), l);
  } else if (minor >= 11) {
    p.process.py_version = w.alloc(8);
    w.put<uint64_t>(p.process.py_version, l.version);
  } else {
    p.process.minor = minor;
  }
  Builder b(w, l);
  b.types();
  std::map<CodeKey, std::set<int>> lines;
  for (const auto& t : threads) {
    for (const auto& f : t.frames) lines[key_of(f)].insert(f.line);
  }
  std::map<CodeKey, uint64_t> codes;
  for (const auto& [key, at] : lines) codes[key] = b.code_object(key, at);
  p.interpreter = w.alloc(std::max(l.interp.next, l.interp.threads_head) + 8);
  w.put<uint64_t>(p.runtime + l.runtime.interpreters_head, p.interpreter);
  // The thread list is newest first: each thread's next is the one before it.
  uint64_t newer_than = 0;
  const bool has_entry =
      l.frames != FrameModel::frame_object && l.owner_max >= l.first_skipped_owner;
  for (const auto& t : threads) {
    const uint64_t ts = thread_state(w, l, t.tid, p);
    w.put<uint64_t>(ts + l.thread.next, newer_than);
    newer_than = ts;
    p.thread_states.push_back(ts);
    uint64_t entry = 0;
    if (has_entry) {
      entry = w.alloc(l.frame.size);
      w.put<int8_t>(entry + l.frame.owner, static_cast<int8_t>(l.first_skipped_owner));
    }
    std::vector<uint64_t> frames = frame_chain(b, minor, t, entry, lines, codes);
    uint64_t top = frames.empty() ? entry : frames.front();
    if (l.frames == FrameModel::cframe) {
      const uint64_t cframe = w.alloc(16);
      w.put<uint64_t>(cframe + l.thread.cframe_frame, top);
      top = cframe;
    }
    w.put<uint64_t>(ts + l.thread.current_frame, top);
    p.frames.push_back(std::move(frames));
    p.entry_frames.push_back(entry);
  }
  w.put<uint64_t>(p.interpreter + l.interp.threads_head, newer_than);
  p.image = MemoryImage(base, w.take());
  return p;
}

}  // namespace dp::stacks::image
