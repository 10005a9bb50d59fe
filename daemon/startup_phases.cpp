#include "startup_phases.hpp"

#include <cstdio>

namespace dp::daemon {

const char* phase_name(Phase p) noexcept {
  switch (p) {
    case Phase::first_hello: return "first_hello";
    case Phase::all_hellos: return "all_hellos";
    case Phase::id_published: return "id_published";
    case Phase::id_fetched_by_all: return "id_fetched_by_all";
    case Phase::first_barrier: return "first_barrier";
  }
  return "unknown";
}

void StartupPhases::reached(Phase p, Clock::time_point now) {
  const int i = static_cast<int>(p);
  if (done_[i]) return;
  done_[i] = true;
  ms_[i] = std::chrono::duration<double, std::milli>(now - start_).count();
  std::fprintf(stderr, "dp-rendezvousd: %s: startup %s at +%.1f ms\n", label_.c_str(),
               phase_name(p), ms_[i]);
  if (p == Phase::first_barrier) {
    std::fprintf(stderr, "dp-rendezvousd: %s: startup timings %s\n", label_.c_str(),
                 summary().c_str());
  }
}

std::string StartupPhases::summary() const {
  std::string s;
  char buf[96];
  for (int i = 0; i < kPhaseCount; ++i) {
    if (done_[i]) {
      std::snprintf(buf, sizeof buf, "%s%s=+%.1fms", i ? " " : "",
                    phase_name(static_cast<Phase>(i)), ms_[i]);
    } else {
      std::snprintf(buf, sizeof buf, "%s%s=-", i ? " " : "", phase_name(static_cast<Phase>(i)));
    }
    s += buf;
  }
  return s;
}

}  // namespace dp::daemon
