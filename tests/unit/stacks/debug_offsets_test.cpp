// The debug offsets as real CPython binaries publish them (the head of the
// .PyRuntime section of Debian's python3.13.5, python3.14.8 and, without
// them, python3.11.7: tests/fixtures/stacks/pyruntime-head-*.hex), and
// every way a header may be refused.
#include "dp/stacks/debug_offsets.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.hpp"

namespace dp::stacks {
namespace {

using fixtures::fixture_bytes;

PythonLayout parse_fixture(const std::string& name) {
  const auto raw = fixture_bytes(name);
  auto layout = check_debug_header(raw);
  EXPECT_TRUE(std::holds_alternative<const DebugLayout*>(layout));
  auto parsed = parse_debug_offsets(*std::get<const DebugLayout*>(layout), raw);
  EXPECT_TRUE(std::holds_alternative<PythonLayout>(parsed));
  return std::get<PythonLayout>(parsed);
}

void put_u64(std::vector<std::byte>& raw, size_t at, uint64_t v) {
  std::memcpy(raw.data() + at, &v, sizeof v);
}

// What both builds publish, and where.
struct Build {
  const char* fixture;
  const char* version;
  uint64_t interpreters_head, thread_size, frame_size, frame_owner, code_adaptive;
};

TEST(DebugOffsets, PythonsAsDebianBuildsThem) {
  const Build builds[] = {
      {"pyruntime-head-3.13.5.hex", "3.13.5", 0x278, 0x130, 0x50, 0x46, 0xc8},
      {"pyruntime-head-3.14.8.hex", "3.14.8", 0x328, 0x340, 0x58, 0x4a, 0xd0},
  };
  for (const Build& b : builds) {
    const PythonLayout o = parse_fixture(b.fixture);
    EXPECT_EQ(python_version_text(o.version), b.version);
    EXPECT_EQ(o.runtime.interpreters_head, b.interpreters_head) << b.version;
    EXPECT_EQ(o.interp.threads_head, 0x1cb0u) << b.version;
    EXPECT_EQ(o.thread.size, b.thread_size) << b.version;
    EXPECT_EQ(o.frame.size, b.frame_size) << b.version;
    EXPECT_EQ(o.frame.owner, b.frame_owner) << b.version;
    EXPECT_EQ(o.code.code_adaptive, b.code_adaptive) << b.version;
  }
  // Fields checked on one build only.
  const PythonLayout o313 = parse_fixture("pyruntime-head-3.13.5.hex");
  EXPECT_EQ(o313.thread.current_frame, 0x48u);
  EXPECT_EQ(o313.thread.native_thread_id, 0xa0u);
  EXPECT_EQ(o313.code.qualname, 0x80u);
  EXPECT_EQ(o313.unicode.ascii_size, 0x28u);
  EXPECT_EQ(o313.bytes.ob_sval, 0x20u);
  const PythonLayout o314 = parse_fixture("pyruntime-head-3.14.8.hex");
  EXPECT_EQ(o314.thread.next, 8u);
  EXPECT_EQ(o314.frame.instr_ptr, 0x38u);
  EXPECT_EQ(o314.object.ob_type, 8u);
  EXPECT_EQ(o314.type.tp_name, 0x18u);
}

// 3.11 publishes none: the walk takes its minor version's table instead.
TEST(DebugOffsets, Python311HasNone) {
  const auto raw = fixture_bytes("pyruntime-head-3.11.7.hex");
  EXPECT_FALSE(has_debug_cookie(raw));
  EXPECT_TRUE(has_debug_cookie(fixture_bytes("pyruntime-head-3.13.5.hex")));
  auto checked = check_debug_header(raw);
  ASSERT_TRUE(std::holds_alternative<NoStacks>(checked));
  EXPECT_EQ(std::get<NoStacks>(checked).why, NoPython::unsupported_python);
}

TEST(DebugOffsets, UnknownVersionsAreNamed) {
  auto raw = fixture_bytes("pyruntime-head-3.14.8.hex");
  for (uint64_t version : {0x030f00f0ull, 0x030c04f0ull, 0x030e00a4ull, 0x040000f0ull}) {
    put_u64(raw, 8, version);
    auto checked = check_debug_header(raw);
    ASSERT_TRUE(std::holds_alternative<NoStacks>(checked)) << std::hex << version;
    EXPECT_EQ(std::get<NoStacks>(checked).why, NoPython::unsupported_python);
    EXPECT_NE(std::get<NoStacks>(checked).detail.find(python_version_text(version)),
              std::string::npos);
  }
  put_u64(raw, 8, 0x030e00c2);  // a release candidate has the final layout
  EXPECT_TRUE(std::holds_alternative<const DebugLayout*>(check_debug_header(raw)));
  EXPECT_EQ(python_version_text(0x030e00c2), "3.14.0rc2");
}

TEST(DebugOffsets, FreeThreadedBuildsAreNamed) {
  auto raw = fixture_bytes("pyruntime-head-3.13.5.hex");
  put_u64(raw, 16, 1);
  auto parsed = parse_debug_offsets(*layout_for_version(0x030d05f0), raw);
  ASSERT_TRUE(std::holds_alternative<NoStacks>(parsed));
  EXPECT_EQ(std::get<NoStacks>(parsed).why, NoPython::free_threaded);
}

TEST(DebugOffsets, AnOffsetOutsideItsStructIsRefused) {
  const DebugLayout& l = *layout_for_version(0x030e08f0);
  const std::pair<size_t, uint64_t> bad[] = {
      {l.current_frame, 0x340},      // at the thread state's end
      {l.thread_size, 1 << 30},      // a thread state of 1 GiB
      {l.frame_owner, 0x58},         // the owner byte past the frame
      {l.code_firstlineno, ~0ull},   // wraps
      {l.unicode_ascii_size, 4096},  // a string header of 4 KiB
  };
  for (const auto& [field, value] : bad) {
    auto raw = fixture_bytes("pyruntime-head-3.14.8.hex");
    put_u64(raw, field, value);
    auto parsed = parse_debug_offsets(l, raw);
    ASSERT_TRUE(std::holds_alternative<NoStacks>(parsed)) << "field at " << field;
    EXPECT_EQ(std::get<NoStacks>(parsed).why, NoPython::inconsistent);
  }
}

TEST(DebugOffsets, ACutShortHeaderIsRefused) {
  auto raw = fixture_bytes("pyruntime-head-3.14.8.hex");
  raw.resize(100);
  auto parsed = parse_debug_offsets(*layout_for_version(0x030e08f0), raw);
  ASSERT_TRUE(std::holds_alternative<NoStacks>(parsed));
  raw.resize(10);
  EXPECT_TRUE(std::holds_alternative<NoStacks>(check_debug_header(raw)));
}

}  // namespace
}  // namespace dp::stacks
