// A figure in the step report: rounded to `places` decimals (what a person
// or a script compares), printed by the JSON library as the shortest exact
// text. One rounding for every part of the report.
#pragma once

#include <cmath>

namespace dp::daemon {

inline double rounded(double v, int places = 3) {
  const double scale = std::pow(10.0, places);
  return std::round(v * scale) / scale;
}

}  // namespace dp::daemon
