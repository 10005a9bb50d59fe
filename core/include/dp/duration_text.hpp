// A duration as slurm-dp's messages say it: "5000 ms" (a bound, a silence,
// a timeout). Header-only: the daemon, the agent and the plugin word it alike.
#pragma once

#include <chrono>
#include <string>

namespace dp {

inline std::string ms_text(std::chrono::nanoseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

}  // namespace dp
