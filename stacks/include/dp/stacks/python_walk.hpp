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
//
// `types`, where given: the addresses of the type objects ("code", "str",
// "bytes", "frame") earlier walks of the same program image checked by name,
// trusted without a read (they are static objects of the interpreter's file,
// never freed while the image lives); the walk adds those it checks.
struct KnownTypes {
  uint64_t code = 0, str = 0, bytes = 0, frame = 0;
  bool operator==(const KnownTypes&) const = default;
};
ProcessStacks walk_python(RemoteMemory& memory, const PythonProcess& process,
                          const WalkLimits& limits, KnownTypes* types = nullptr);

}  // namespace dp::stacks
