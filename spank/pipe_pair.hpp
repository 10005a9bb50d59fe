// A pipe whose ends close themselves unless taken (the launchers' children).
#pragma once

#include <unistd.h>

namespace dp::spank {

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  int release(int i) {
    const int f = fd[i];
    fd[i] = -1;
    return f;
  }
};

}  // namespace dp::spank
