// A duration as slurm-dp's messages say it: "5000 ms" (a bound, a silence,
// a timeout), or "12 s", "3.4 s" (how long something has lasted).
// Header-only: the daemon, the agent and the plugin word it alike.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

namespace dp {

inline std::string ms_text(std::chrono::nanoseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

// `places` decimals; a negative duration (clocks read apart) shows as 0.
inline std::string seconds_text(double seconds, int places = 0) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f s", places, std::max(0.0, seconds));
  return b;
}
inline std::string seconds_text(std::chrono::nanoseconds d, int places) {
  return seconds_text(std::chrono::duration<double>(d).count(), places);
}

}  // namespace dp
