// The step's straggler watch (issue 55) as the daemon feeds it: the node
// agents' looks at every rank (their heartbeats' RankSamples), libdp's
// collective counters (the ranks' Progress), the NCCL ranks' flight
// recorders (issue 57: each collective's start, and its GPU time with
// TORCH_NCCL_ENABLE_TIMING, from the dumps a stacks round reads), and where
// a stacks round saw ranks wait. At the end of every block (kBlock) each
// source's counts since the last block become one dp::straggler::Block for
// that source's own Watch. The verdict the user reads is the collectives'
// for a step whose every rank counts its collectives (libdp: exact), else
// the flight recorders' once a rank's dump was read (exact: an NCCL rank
// spins while it waits, so the looks take its wait for work), else the
// looks'; the other sources' verdicts stay in the report beside it, so they
// can be compared on one step. Pure: no sockets, no clock of its own.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dp/proto/rendezvous.pb.h"
#include "dp/stacks/flight_recorder.hpp"
#include "dp/straggler.hpp"

namespace dp::daemon {

class StragglerReport {
 public:
  using Json = nlohmann::ordered_json;
  static constexpr std::chrono::seconds kBlock{5};
  static constexpr std::chrono::milliseconds kLookEvery{100};  // SampleAsk's every_ms
  // A stacks round this often while wants_where(): each of the others waits
  // only a share of the time (a fifth, for a rank 25 % slower), so a round
  // misses them that often; over the ~10 s of suspicion before a verdict,
  // 20 rounds miss all with odds of 1 %, 10 rounds (once a second) of 11 %.
  static constexpr std::chrono::milliseconds kWhereEvery{500};
  // Until a rank's flight recorder is seen, a round reads the dumps this
  // often (PyTorch makes a rank's pipe at init_process_group); from then on
  // one each block (wants_flights).
  static constexpr std::chrono::seconds kFlightProbeEvery{10};
  // Collectives kept per rank between blocks (a dump brings at most 64).
  static constexpr size_t kMostHeld = 1024;

  // kernel: the looks with the kernel's word alone (asleep in futex is
  // waiting, as before frames told a wait on its own input from a
  // collective's); never heard, kept in the report to compare.
  enum class Source { looks, collectives, flight, kernel };
  static const char* source_name(Source s) noexcept;

  // world_size bounds the ranks it keeps: 64 a task (a launcher's workers) and 1 024.
  StragglerReport(straggler::Settings settings, long ticks_per_second, int world_size);

  // A node agent's counts of one rank (cumulative); host: the node.
  void on_looks(const proto::RankSamples& s, const std::string& host);
  // A libdp rank's counters (cumulative).
  void on_counters(int rank, const std::string& host, const proto::Progress& p);
  // A stacks round saw the rank wait there (stacks::wait_site).
  void on_where(int rank, std::string where);
  // A round's flight-recorder reads (each node's ranks; unread ones skipped).
  void on_flights(const std::vector<stacks::RankFlight>& flights);
  // A rank's flight recorder was seen: a dump each block feeds the verdict.
  bool wants_flights() const { return any_flight_; }

  struct Said {
    Source source;
    bool heard;  // the step's verdict (the user reads it); else another source's opinion
    straggler::Verdict verdict;
  };
  // The source the user hears; by_collectives: every rank counts its collectives.
  Source heard_source(bool by_collectives) const {
    return by_collectives ? Source::collectives : any_flight_ ? Source::flight : Source::looks;
  }
  // A block ended at end_s (seconds since the daemon started). The verdicts it brings.
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
  // A rank's collectives from its dumps, by (group, seq), not yet judged.
  struct FlightState {
    std::string host;
    int pid = 0;
    std::map<std::pair<std::string, int64_t>, stacks::Arrival> held;
    int64_t covered_from = 0;  // its dumps hold every collective it enqueued since
    uint64_t read = 0;  // the read that brought it last (a rank not in the latest is left out)
  };
  straggler::Block looks_block(double end_s, double seconds, straggler::Block& kernel);
  straggler::Block counters_block(double end_s, double seconds, const straggler::Block& looks);
  straggler::Block flight_block(double end_s, double seconds, const straggler::Block& looks);
  const straggler::Watch& watch(Source s) const {
    return s == Source::collectives ? by_counters_
           : s == Source::flight    ? by_flight_
           : s == Source::kernel    ? by_kernel_
                                    : by_looks_;
  }
  Json source_json(Source s) const;

  long ticks_per_second_;
  size_t max_ranks_;
  straggler::Watch by_looks_, by_counters_, by_flight_, by_kernel_;
  bool any_counters_ = false, any_flight_ = false;
  std::map<int, LookState> looks_;
  std::map<int, CounterState> counters_;
  std::map<int, FlightState> flights_;
  uint64_t flight_reads_ = 0;     // reads that brought a dump
  int64_t flight_judged_to_ = 0;  // the wall clock (ns) up to which collectives were judged
  std::map<std::string, int64_t> judged_seq_;  // per process group, the newest collective judged
  std::map<int, std::string> where_;           // seen since the last block's end
};

}  // namespace dp::daemon
