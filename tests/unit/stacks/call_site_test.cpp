// Naming what a frame calls from the source its instruction spans: the pure
// reading of a call expression, then name_calls over real files as this
// process sees them (a FIFO or a relative name gives nothing, and no wait).
#include "dp/stacks/call_site.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "process_group.hpp"

namespace dp::stacks {
namespace {

TEST(CalleeOf, ADottedNameCalledOnOneLine) {
  EXPECT_EQ(callee_of("    time.sleep(600)\n", {1, 1, 4, 19}), "time.sleep");
  EXPECT_EQ(callee_of("x = work.wait( )  # done\n", {1, 1, 4, 16}), "work.wait");
  const std::string wide = "größe.läuft(1)";  // columns count UTF-8 bytes
  EXPECT_EQ(callee_of(wide, {1, 1, 0, static_cast<int>(wide.size())}), "größe.läuft");
}

TEST(CalleeOf, ACallOverSeveralLinesPastStringsAndComments) {
  const char* text =
      "    return Variable._execution_engine.run_backward(  # a comment (\n"
      "        seconds, \"x(\", ')',\n"
      "        [seconds], \"\"\"a)\nb\"\"\")\n";
  EXPECT_EQ(callee_of(text, {1, 4, 11, 5}), "Variable._execution_engine.run_backward");
}

TEST(CalleeOf, AnythingButOneCallOfADottedNameIsNotNamed) {
  const std::pair<const char*, SourceSpan> not_calls[] = {
      {"x + y", {1, 1, 0, 5}},
      {"time.sleep", {1, 1, 0, 10}},   // the attribute, loaded before the call
      {"f()(x)", {1, 1, 0, 6}},        // a call of a call's result
      {"a[0](x)", {1, 1, 0, 7}},       // of an item
      {"f(x) + g(y)", {1, 1, 0, 11}},  // two calls
      {"f(x", {1, 1, 0, 3}},           // unclosed
      {"f(')", {1, 1, 0, 4}},          // a string that does not end
      {"1 .real(x)", {1, 1, 0, 10}},   // not a name
      {"f(x)", {1, 1, 0, 9}},          // the end column past the line
      {"f(x)\n", {1, 2, 0, 1}},        // the end line past the text
      {"f(x)", {1, 1, 3, 1}},          // ends before it starts
      {"f(x)", {2, 1, 0, 4}},          // an end line before the line
  };
  for (const auto& [text, span] : not_calls) {
    EXPECT_EQ(callee_of(text, span), std::nullopt) << text;
  }
  const std::string long_name(201, 'a');
  EXPECT_EQ(callee_of(long_name + "()", {1, 1, 0, 203}), std::nullopt);
  EXPECT_EQ(callee_of(std::string(200, 'a') + "()", {1, 1, 0, 202}), std::string(200, 'a'));
}

// A process whose one thread's innermost frame is at `span` of `file`.
ProcessStacks at(const std::string& file, SourceSpan span) {
  ProcessStacks p;
  p.pid = ::getpid();
  p.threads.emplace_back();
  p.threads[0].tid = p.pid;
  p.threads[0].frames = {{"main", file, span.line}};
  p.threads[0].innermost_at = span;
  return p;
}

// Before 3.11 only the line is known: its statement's one call is named.
TEST(CalleeOfLine, TheOneCallOfALine) {
  EXPECT_EQ(callee_of_line("    time.sleep(600)\n", 8), "time.sleep");
  EXPECT_EQ(callee_of_line("    loss = model.step(x, y)  # the step\nz()\n", 8), "model.step");
  EXPECT_EQ(callee_of_line("        yield (lambda: time.sleep(3600))()  # SLEEP_LINE\n", 8),
            "time.sleep");
  EXPECT_EQ(callee_of_line("    work.wait()\n", 8), "work.wait");
  EXPECT_EQ(callee_of_line("    dist.all_reduce(\n        t,\n        op=op)\n", 8),
            "dist.all_reduce");
  EXPECT_EQ(callee_of_line("    if ready(x):\n", 8), "ready");
  EXPECT_EQ(callee_of_line("    s = f('a(b)', \"#\")\n", 8), "f");
  // Several calls: either may be the one it waits in.
  EXPECT_EQ(callee_of_line("    out = model(batch.to(dev))\n", 8), std::nullopt);
  EXPECT_EQ(callee_of_line("    x = a.b(1).c(2)\n", 8), std::nullopt);
  EXPECT_EQ(callee_of_line("    return (yield)\n", 8), std::nullopt);  // no call at all
  EXPECT_EQ(callee_of_line("    for batch in loader:\n", 8), std::nullopt);
  EXPECT_EQ(callee_of_line("    x = items[0](y)\n", 8), std::nullopt);  // a subscript's call
  EXPECT_EQ(callee_of_line("    f(\n1,\n2,\n3)\n", 2), std::nullopt);   // past the lines allowed
  EXPECT_EQ(callee_of_line("    f('never closed\n", 8), std::nullopt);
  EXPECT_EQ(callee_of_line("", 8), std::nullopt);
}

TEST(NameCalls, ReadsTheFileTheProcessSees) {
  test::TempDir dir;
  const std::string file = dir.path() + "/hang.py";
  std::ofstream(file) << "import time\n\ndef main():\n    time.sleep(600)\n";
  ProcessStacks p = at(file, {4, 4, 4, 19});
  name_calls(p);
  EXPECT_EQ(p.threads[0].call, "time.sleep");

  ProcessStacks other_line = at(file, {3, 3, 0, 11});  // "def main():"
  name_calls(other_line);
  EXPECT_EQ(other_line.threads[0].call, "");
}

TEST(NameCalls, OnlyRegularFilesByAbsoluteNameAndNeverWaits) {
  test::TempDir dir;
  const std::string fifo = dir.path() + "/fifo.py";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ProcessStacks from_fifo = at(fifo, {1, 1, 0, 4});  // would block a plain open
  name_calls(from_fifo);
  EXPECT_EQ(from_fifo.threads[0].call, "");

  // A relative name would be relative to a directory the process may have left.
  for (const std::string& file :
       {dir.path() + "/none.py", dir.path(), std::string("<string>"), std::string("hang.py")}) {
    ProcessStacks p = at(file, {1, 1, 0, 4});
    name_calls(p);
    EXPECT_EQ(p.threads[0].call, "") << file;
  }
}

TEST(NameCalls, ASpanOverTooManyLinesOrPastTheReadBoundIsNotNamed) {
  test::TempDir dir;
  const std::string file = dir.path() + "/long.py";
  std::ofstream(file) << "x = 1\nf(1,\n" << std::string(70, '\n') << ")\n";
  ProcessStacks p = at(file, {2, 73, 0, 1});
  name_calls(p, SourceLimits{1 << 20, 64});
  EXPECT_EQ(p.threads[0].call, "");
  name_calls(p, SourceLimits{1 << 20, 100});
  EXPECT_EQ(p.threads[0].call, "f");
  p.threads[0].call.clear();
  name_calls(p, SourceLimits{20, 100});  // the file read only this far
  EXPECT_EQ(p.threads[0].call, "");
}

}  // namespace
}  // namespace dp::stacks
