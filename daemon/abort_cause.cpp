#include "abort_cause.hpp"

#include "dp/step_signals.hpp"

namespace dp::daemon {
namespace {

// One row per AbortCause::How, in its order: its one name and the verdict
// the user reads (nullptr: the user's signal says it).
struct HowRow {
  AbortCause::How how;
  const char* name;
  const char* verdict;
};
constexpr HowRow kHows[] = {
    {AbortCause::How::lost_connection, "lost_connection", "task_exit"},
    {AbortCause::How::silence, "silence", "rank_silent"},
    {AbortCause::How::refused, "refused", "task_exit"},
    {AbortCause::How::explicit_abort, "explicit_abort", "requested"},
    {AbortCause::How::hang, "hang", "hang"},
    {AbortCause::How::rank_lost, "rank_lost", "task_exit"},
    {AbortCause::How::node_lost, "node_lost", "node_lost"},
    {AbortCause::How::node_silent, "node_silent", "node_silent"},
    {AbortCause::How::user_signal, "user_signal", nullptr},
};
static_assert(sizeof kHows / sizeof kHows[0] ==
                  static_cast<size_t>(AbortCause::How::user_signal) + 1,
              "one row per How");

const HowRow& row(AbortCause::How how) noexcept { return kHows[static_cast<size_t>(how)]; }

}  // namespace

const char* how_name(AbortCause::How how) noexcept { return row(how).name; }

const char* how_verdict(AbortCause::How how, int user_signal) noexcept {
  const char* v = row(how).verdict;
  return v ? v : user_signal_verdict(user_signal);
}

}  // namespace dp::daemon
