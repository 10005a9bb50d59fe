// The walk: from the address of _PyRuntime to every thread's Python frames,
// reading only through RemoteMemory and following the layout of the
// process's version: the offsets it published (3.13+, debug_offsets.hpp) or
// the table of its minor version (3.8-3.12, python_layout.hpp). Pure: tests
// drive it with memory images. Bounded by WalkLimits (threads, frames,
// string bytes, total bytes and reads, a deadline); every object is checked
// to be what it should be (a code object's type is named "code", a name's
// "str", a 3.8-3.10 frame's "frame") before its fields are used, so garbage
// ends a thread's frames or the walk with a named reason, never a crash or
// an unbounded read.
#pragma once

#include <cstdint>

#include "dp/stacks/remote_memory.hpp"
#include "dp/stacks/runtime_address.hpp"
#include "dp/stacks/stacks.hpp"

namespace dp::stacks {

// Python threads in the order the interpreters list them, oldest first, each
// with its native tid (0 where it could not be told) and no kernel view
// (read_process adds that). On failure: no threads and `no_python` set. pid
// is left 0.
ProcessStacks walk_python(RemoteMemory& memory, const PythonProcess& process,
                          const WalkLimits& limits);

}  // namespace dp::stacks
