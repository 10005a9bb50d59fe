// The layouts of CPython 3.8 to 3.12, which publish no debug offsets. Each
// number is offsetof() or sizeof() over that version's own headers
// (tests/fixtures/stacks/layout_probe.c, compiled against Debian 11's
// python3.9-dev, Debian 12's python3.11-dev and Ubuntu's libpython3.8-dev,
// 3.10-dev and 3.12-dev) and is checked by reading real processes of each
// (tests/fixtures/stacks/images, tests/unit/stacks/live_roots.sh). Patch
// releases kept these fields where they were; a minor version not here is
// `unsupported_python`, never guessed.
#include "dp/stacks/python_layout.hpp"

namespace dp::stacks {
namespace old_layouts {  // its own: a unity build puts debug_offsets.cpp's kLayouts beside it

using enum FrameModel;
using enum LineFormat;
using enum ThreadId;

// Four layouts, in PythonLayout's order: the first version they hold for
// (no patch), its shape, then runtime, interpreter (its size: the part the
// walk reads), thread, frame, code, object, type, bytes and str offsets.
// 3.8-3.10 read PyFrameObject chains (f_lasti in bytes, then in code units),
// name code by co_name and keep a pthread_t; 3.11 and 3.12 reach
// _PyInterpreterFrame through the thread's _PyCFrame, and 3.12 adds the C
// stack's shim frames (owner 3, skipped).
struct Row {
  unsigned last_minor;
  PythonLayout layout;
};
constexpr Row kLayouts[] = {
    {9,
     {0x03080000,
      frame_object,
      lnotab,
      pthread,
      false,
      0,
      0,
      {40, 32},
      {16, 0, 8},
      {264, 8, 24, 176, 0},
      {368, 24, 32, 104, 0},
      {176, 104, 112, 120, 40, 0},
      {8},
      {32, 24},
      {16, 32},
      {32, 16, 48, 24}}},
    {10,
     {0x030a0000,
      frame_object,
      pairs,
      pthread,
      false,
      0,
      0,
      {40, 32},
      {16, 0, 8},
      {280, 8, 24, 176, 0},
      {360, 24, 32, 96, 0},
      {176, 104, 112, 120, 40, 0},
      {8},
      {32, 24},
      {16, 32},
      {32, 16, 48, 24}}},
    {11,
     {0x030b0000,
      cframe,
      locations,
      native,
      true,
      2,
      3,
      {48, 40},
      {24, 0, 16},
      {360, 8, 56, 160, 8},
      {80, 48, 32, 56, 69},
      {192, 112, 128, 136, 72, 184},
      {8},
      {32, 24},
      {16, 32},
      {32, 16, 48, 24}}},
    {12,
     {0x030c0000,
      cframe,
      locations,
      native,
      true,
      3,
      3,
      {48, 40},
      {80, 0, 72},
      {288, 8, 56, 144, 0},
      {80, 8, 0, 56, 70},
      {200, 112, 128, 136, 68, 192},
      {8},
      {32, 24},
      {16, 32},
      {32, 16, 40, 16}}},
};

}  // namespace old_layouts

const PythonLayout* layout_before_debug_offsets(unsigned minor) {
  for (const auto& row : old_layouts::kLayouts) {
    if (minor >= ((row.layout.version >> 16) & 0xff) && minor <= row.last_minor) {
      return &row.layout;
    }
  }
  return nullptr;
}

}  // namespace dp::stacks
