// Per-phase timings of a step's start-up, logged the way NCCL logs its
// "Init timings": the first thing to read when a job starts slowly.
#pragma once

#include <array>
#include <chrono>
#include <optional>
#include <string>

namespace dp::daemon {

enum class Phase { first_hello, all_hellos, id_published, id_fetched_by_all, first_barrier };
inline constexpr int kPhaseCount = 5;

class StartupPhases {
 public:
  using Clock = std::chrono::steady_clock;
  StartupPhases(Clock::time_point start, std::string label)
      : start_(start), label_(std::move(label)) {}

  // Records the phase the first time only and logs it to stderr.
  void reached(Phase p, Clock::time_point now);
  bool has(Phase p) const { return done_[static_cast<int>(p)]; }
  // Milliseconds since the start, once reached.
  std::optional<double> at_ms(Phase p) const {
    return done_[static_cast<int>(p)] ? std::optional<double>(ms_[static_cast<int>(p)])
                                      : std::nullopt;
  }
  // "first_hello=+1.2ms all_hellos=+30.0ms ..." (unreached phases: "-").
  std::string summary() const;

 private:
  Clock::time_point start_;
  std::string label_;
  std::array<bool, kPhaseCount> done_{};
  std::array<double, kPhaseCount> ms_{};
};

const char* phase_name(Phase p) noexcept;

}  // namespace dp::daemon
