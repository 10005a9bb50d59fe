// The walk: from the address of _PyRuntime to every thread's Python frames,
// reading only through RemoteMemory and following only the offsets the
// process published (debug_offsets.hpp). Pure: tests drive it
// with memory images. Bounded by WalkLimits (threads, frames, string bytes,
// total bytes and reads, a deadline); every object is checked to be what it
// should be (a code object's type is named "code", a name's "str") before
// its fields are used, so garbage ends a thread's frames or the walk with a
// named reason, never a crash or an unbounded read.
#pragma once

#include <cstdint>

#include "dp/stacks/remote_memory.hpp"
#include "dp/stacks/stacks.hpp"

namespace dp::stacks {

// Frame owners (_PyInterpreterFrame.owner) from this value up are the C
// stack's or the interpreter's entry frames, not a Python function's: 3.13
// has FRAME_OWNED_BY_CSTACK = 3, 3.14 FRAME_OWNED_BY_INTERPRETER = 3 and
// FRAME_OWNED_BY_CSTACK = 4.
inline constexpr int kFirstNonPythonOwner = 3;
inline constexpr int kLastFrameOwner = 4;

// Python threads in the order the interpreters list them, oldest first, each
// with its native tid and no kernel view (read_process adds that). On
// failure: no threads and `no_python` set. pid is left 0.
ProcessStacks walk_python(RemoteMemory& memory, uint64_t runtime_address, const WalkLimits& limits);

}  // namespace dp::stacks
