#include "synthetic_python.hpp"

#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "dp/stacks/debug_offsets.hpp"
#include "dp/stacks/python_walk.hpp"

namespace dp::stacks::image {
namespace {

using O = ImageOffsets;
constexpr uint64_t kVersion313 = 0x030d05f0, kVersion314 = 0x030e08f0;
constexpr uint32_t kAsciiState = (1u << 2) | (1u << 5) | (1u << 6);  // kind 1, compact, ascii
constexpr uint32_t kUcs2State = (2u << 2) | (1u << 5);               // kind 2, compact

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
  uint64_t code, str, bytes;
};

using CodeKey = std::tuple<std::string, std::string, int, bool>;

CodeKey key_of(const SyntheticFrame& f) { return {f.function, f.file, f.first_line, f.ucs2}; }

// _PyRuntime's head: the cookie, the version, and the image's offsets at the layout's places.
void publish(Writer& w, uint64_t runtime, const DebugLayout& l, uint64_t version) {
  w.raw(runtime, kDebugCookie, sizeof kDebugCookie);
  w.put<uint64_t>(runtime + 8, version);
  const uint64_t interpreters_head = (l.total + 7) & ~uint64_t{7};
  const std::pair<size_t, uint64_t> fields[] = {
      {l.runtime_size, interpreters_head + 8},
      {l.interpreters_head, interpreters_head},
      {l.interp_size, O::interp_size},
      {l.interp_next, O::interp_next},
      {l.threads_head, O::threads_head},
      {l.thread_size, O::thread_size},
      {l.thread_next, O::thread_next},
      {l.current_frame, O::current_frame},
      {l.native_thread_id, O::tid},
      {l.frame_size, O::frame_size},
      {l.frame_previous, O::frame_previous},
      {l.frame_executable, O::frame_executable},
      {l.frame_instr_ptr, O::frame_instr_ptr},
      {l.frame_owner, O::frame_owner},
      {l.code_size, O::code_size},
      {l.code_filename, O::code_filename},
      {l.code_qualname, O::code_qualname},
      {l.code_linetable, O::code_linetable},
      {l.code_firstlineno, O::code_firstlineno},
      {l.code_adaptive, O::code_adaptive},
      {l.object_ob_type, O::ob_type},
      {l.type_size, O::type_size},
      {l.type_tp_name, O::tp_name},
      {l.bytes_ob_size, O::bytes_ob_size},
      {l.bytes_ob_sval, O::bytes_ob_sval},
      {l.unicode_state, O::unicode_state},
      {l.unicode_length, O::unicode_length},
      {l.unicode_ascii_size, O::unicode_ascii_size},
  };
  for (const auto& [at, value] : fields) w.put<uint64_t>(runtime + at, value);
}

Types make_types(Writer& w) {
  auto type = [&](const std::string& name) {
    const uint64_t t = w.alloc(O::type_size);
    w.put<uint64_t>(t + O::tp_name, w.cstring(name));
    return t;
  };
  return {type("code"), type("str"), type("bytes")};
}

uint64_t str_object(Writer& w, const Types& t, const std::string& s, bool ucs2) {
  const uint64_t header = ucs2 ? O::unicode_ascii_size + 16 : O::unicode_ascii_size;
  const uint64_t at = w.alloc(header + s.size() * (ucs2 ? 2 : 1) + 2);
  w.put<uint64_t>(at + O::ob_type, t.str);
  w.put<int64_t>(at + O::unicode_length, static_cast<int64_t>(s.size()));
  w.put<uint32_t>(at + O::unicode_state, ucs2 ? kUcs2State : kAsciiState);
  for (size_t i = 0; i < s.size(); ++i) {
    if (ucs2) {
      w.put<uint16_t>(at + header + 2 * i, static_cast<uint8_t>(s[i]));
    } else {
      w.put<uint8_t>(at + header + i, static_cast<uint8_t>(s[i]));
    }
  }
  return at;
}

uint64_t bytes_object(Writer& w, const Types& t, const std::vector<uint8_t>& data) {
  const uint64_t at = w.alloc(O::bytes_ob_sval + data.size() + 1);
  w.put<uint64_t>(at + O::ob_type, t.bytes);
  w.put<int64_t>(at + O::bytes_ob_size, static_cast<int64_t>(data.size()));
  w.raw(at + O::bytes_ob_sval, data.data(), data.size());
  return at;
}

// One code object per function, its line table one entry (one code unit)
// per line its frames stand on, in order: a frame on the k-th line points at unit k.
uint64_t code_object(Writer& w, const Types& t, const CodeKey& key, const std::set<int>& lines) {
  const auto& [function, file, first_line, ucs2] = key;
  std::vector<uint8_t> table;
  int previous = first_line;
  for (int line : lines) {
    const auto entry = line_entry_no_columns(1, line - previous);
    table.insert(table.end(), entry.begin(), entry.end());
    previous = line;
  }
  const uint64_t at = w.alloc(O::code_size);
  w.put<uint64_t>(at + O::ob_type, t.code);
  w.put<uint64_t>(at + O::code_qualname, str_object(w, t, function, false));
  w.put<uint64_t>(at + O::code_filename, str_object(w, t, file, ucs2));
  w.put<uint64_t>(at + O::code_linetable, bytes_object(w, t, table));
  w.put<int32_t>(at + O::code_firstlineno, first_line);
  return at;
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

SyntheticPython build_synthetic_python(unsigned minor, const std::vector<SyntheticThread>& threads,
                                       uint64_t base) {
  const uint64_t version = minor == 13 ? kVersion313 : kVersion314;
  const DebugLayout& layout = *layout_for_version(version);
  Writer w(base);
  SyntheticPython p;
  const uint64_t interpreters_head = (layout.total + 7) & ~uint64_t{7};
  p.runtime = w.alloc(interpreters_head + 8);
  publish(w, p.runtime, layout, version);
  const Types types = make_types(w);
  std::map<CodeKey, std::set<int>> lines;
  for (const auto& t : threads) {
    for (const auto& f : t.frames) lines[key_of(f)].insert(f.line);
  }
  std::map<CodeKey, uint64_t> codes;
  for (const auto& [key, at] : lines) codes[key] = code_object(w, types, key, at);
  p.interpreter = w.alloc(O::interp_size);
  w.put<uint64_t>(p.runtime + interpreters_head, p.interpreter);
  uint64_t newer_than =
      0;  // the thread list is newest first: each thread's next is the one before it
  for (const auto& t : threads) {
    const uint64_t ts = w.alloc(O::thread_size);
    w.put<uint64_t>(ts + O::tid, static_cast<uint64_t>(t.tid));
    w.put<uint64_t>(ts + O::thread_next, newer_than);
    newer_than = ts;
    p.thread_states.push_back(ts);
    std::vector<uint64_t> frames;
    for (size_t i = 0; i < t.frames.size(); ++i) frames.push_back(w.alloc(O::frame_size));
    const uint64_t entry = w.alloc(O::frame_size);
    w.put<int8_t>(entry + O::frame_owner, kFirstNonPythonOwner);
    for (size_t i = 0; i < frames.size(); ++i) {
      const auto& f = t.frames[i];
      const uint64_t code = codes[key_of(f)];
      const auto& code_lines = lines[key_of(f)];
      const auto unit =
          static_cast<uint64_t>(std::distance(code_lines.begin(), code_lines.find(f.line)));
      const uint64_t tag = minor == 14 && i % 2 == 1 ? 1 : 0;
      w.put<uint64_t>(frames[i] + O::frame_executable, code | tag);
      w.put<uint64_t>(frames[i] + O::frame_instr_ptr, code + O::code_adaptive + 2 * unit);
      w.put<uint64_t>(frames[i] + O::frame_previous, i + 1 < frames.size() ? frames[i + 1] : entry);
    }
    w.put<uint64_t>(ts + O::current_frame, frames.empty() ? entry : frames.front());
    p.frames.push_back(std::move(frames));
    p.entry_frames.push_back(entry);
  }
  w.put<uint64_t>(p.interpreter + O::threads_head, newer_than);
  p.image = MemoryImage(base, w.take());
  return p;
}

}  // namespace dp::stacks::image
