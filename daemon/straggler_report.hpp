// The step's straggler watch (issue 55) as the daemon feeds it: the node
// agents' looks at every rank (their heartbeats' RankSamples), libdp's
// collective counters (the ranks' Progress), and where a stacks round saw
// ranks wait. At the end of every block (kBlock) each source's counts since
// the last block become one dp::straggler::Block for that source's own
// Watch. The verdict the user reads is the collectives' for a step whose
// every rank counts its collectives (libdp: exact), else the looks'; the
// other source's verdicts stay in the report beside it, so the two can be
// compared on one step. A further source (issue 57's per-collective timings)
// is one more Source, its counters turned into RankShare by a method like
// counters_block. Pure: no sockets, no clock of its own.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dp/proto/rendezvous.pb.h"
#include "dp/straggler.hpp"

namespace dp::daemon {

class StragglerReport {
 public:
  using Json = nlohmann::ordered_json;
  static constexpr std::chrono::seconds kBlock{5};
  static constexpr std::chrono::milliseconds kLookEvery{100};  // SampleAsk's every_ms
  // A stacks round this often while wants_where(): a waiting rank is caught
  // in a read within a few (each of the others waits a share of the time).
  static constexpr std::chrono::seconds kWhereEvery{1};

  enum class Source { looks, collectives };
  static const char* source_name(Source s) noexcept;

  // world_size bounds the ranks it keeps: 64 a task (a launcher's workers) and 1 024.
  StragglerReport(straggler::Settings settings, long ticks_per_second, int world_size);

  // A node agent's counts of one rank (cumulative); host: the node.
  void on_looks(const proto::RankSamples& s, const std::string& host);
  // A libdp rank's counters (cumulative).
  void on_counters(int rank, const std::string& host, const proto::Progress& p);
  // A stacks round saw the rank wait there (stacks::wait_site).
  void on_where(int rank, std::string where);

  struct Said {
    Source source;
    bool heard;  // the step's verdict (the user reads it); else the other source's opinion
    straggler::Verdict verdict;
  };
  // A block ended at end_s (seconds since the daemon started); by_collectives:
  // every rank counts its collectives. The verdicts it brings.
  std::vector<Said> end_block(double end_s, double seconds, bool by_collectives);
  // Some rank looks like a straggler now, or one is named: a stacks round
  // would tell where the others wait.
  bool wants_where() const;

  Json json(bool by_collectives) const;
  // dp-top's lines: the straggler named now, or the last recovery.
  std::vector<std::string> lines(bool by_collectives) const;

 private:
  struct LookState {
    std::string host;
    std::optional<proto::RankSamples> base, last;  // at the last block's end, latest
  };
  struct CounterState {
    std::string host;
    std::optional<proto::Progress> base, last;
  };
  straggler::Block looks_block(double end_s, double seconds);
  straggler::Block counters_block(double end_s, double seconds, const straggler::Block& looks);
  const straggler::Watch& heard(bool by_collectives) const {
    return by_collectives ? by_counters_ : by_looks_;
  }
  Json source_json(Source s) const;

  long ticks_per_second_;
  size_t max_ranks_;
  straggler::Watch by_looks_, by_counters_;
  bool any_counters_ = false;
  std::map<int, LookState> looks_;
  std::map<int, CounterState> counters_;
  std::map<int, std::string> where_;  // seen since the last block's end
};

}  // namespace dp::daemon
