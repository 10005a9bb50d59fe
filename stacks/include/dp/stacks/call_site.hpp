// What a thread's innermost Python frame calls. A C function (time.sleep, a
// collective's binding, torch's backward engine) has no frame of its own, so
// a thread blocked in one shows only its caller's line; the caller's
// instruction, though, spans the call's source (PEP 657 columns, 3.11+), and
// the source names the callee: `time.sleep(600)` is a call of `time.sleep`.
// Before 3.11 only the line is known: its statement names the callee when
// it makes one call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "dp/stacks/stacks.hpp"

namespace dp::stacks {

// Pure. `text` starts at the beginning of line span.line and holds at least
// its lines up to span.end_line. The callee's dotted name when the span is
// exactly one call of a dotted name, `NAME(.NAME)*(...)`, its parentheses
// matched past strings and comments; nullopt for anything else (another
// expression, a call of a call's result, a span outside the text).
std::optional<std::string> callee_of(std::string_view text, const SourceSpan& span);

// Pure. Before 3.11 an instruction knows only its line: `text` starts at
// that line. The callee's dotted name when the statement there (its line,
// and the lines after while a bracket is open, at most `max_lines`) makes
// exactly one call and that call is of a dotted name (`loss =
// model.step(x)`, `yield (lambda: time.sleep(1))()`); nullopt for none, for
// several (`f(g(x))`: either may be the one it waits in) and for a call of
// what a call or a subscript gave.
std::optional<std::string> callee_of_line(std::string_view text, int max_lines);

// What reading sources may cost one round of reads (read_many), all its
// targets together: bytes left, and a time after which no read starts.
struct SourceBudget {
  std::atomic<long long> bytes{0};
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct SourceLimits {
  size_t max_file_bytes = 4 << 20;  // a source file is read this far, no further
  int max_span_lines = 64;          // a call's span over more lines is not named
  SourceBudget* budget = nullptr;   // the round's; nullptr: no bound but the above
  // Only calls made from the program's own files, not a library's
  // (library_file): the straggler watch's reads, whose frames in torch say
  // enough, read no torch sources.
  bool program_files_only = false;
};

// A library's file, not the program's: the standard library, installed
// packages, the interpreter's frozen modules.
bool library_file(const std::string& file);

// Sets each thread's `call` from its innermost frame's span and the file the
// frame's code came from, read now as the caller (an absolute co_filename,
// under /proc/PID/root: the process's own view of its files). Only regular
// files, opened without blocking on a FIFO; a file changed since the process
// read it gives no name or, rarely, its new text's. Blocks only where the
// file system does: callers with a deadline call it after they kept the
// frames, at most a few calls wait in it at once (the rest name nothing), and
// with a budget no read starts once its bytes or time are spent.
void name_calls(ProcessStacks& p, const SourceLimits& limits = {});

}  // namespace dp::stacks
