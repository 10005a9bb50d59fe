// PyTorch's NCCL flight recorder: each rank's recent collectives with their
// sequence numbers and states, dumped as a pickle of built-in values when the
// rank's pipe is written (TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe). A rank
// waiting in a hung NCCL collective spins (its CPU time grows), so the
// stacks' hang watch cannot name it; its dump can. Pure: a dump's bytes in,
// each rank's place in each process group out (what a node agent sends), and
// from every rank's place the verdict (what the daemon names) and who the
// others wait for (stragglers). Tests replay the dumps of a real hang
// (tests/fixtures/flight_recorder).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dp/result.hpp"

namespace dp::stacks {

// One collective as a rank's recorder holds it.
struct FlightEntry {
  std::string group;  // process group name ("0": the default group)
  int64_t seq = 0;    // collective_seq_id; p2p_seq_id for point-to-point
  bool p2p = false;
  std::string op;          // "all_reduce" (profiling_name without its "nccl:")
  std::string state;       // scheduled, started, completed
  int64_t created_ns = 0;  // the rank's wall clock when it enqueued it
  std::optional<int64_t> completed_ns;
  std::optional<double> duration_ms;  // with TORCH_NCCL_ENABLE_TIMING
};

struct FlightGroup {
  std::string name, desc;
  std::vector<int> ranks;  // global ranks; empty: the dump did not say
  int64_t last_enqueued = -1, last_completed = -1;
};

struct FlightDump {
  std::string version, comm_version;
  std::vector<FlightGroup> groups;
  std::vector<FlightEntry> entries;  // oldest first
};

// A dump as PyTorch writes it (format 2.x: entries, pg_config, pg_status).
// An error names the field (or the pickle's fault); a dump still being
// written is "truncated".
Result<FlightDump> read_flight_dump(std::string_view pickle_bytes);

// Where one rank is in one process group, at its dump.
struct GroupPlace {
  std::string group, desc;
  std::vector<int> ranks;
  int64_t last_enqueued = -1, last_completed = -1;
  std::string op;        // of collective last_enqueued ("collective": not in the buffer)
  bool pending = false;  // last_enqueued has not completed: the rank waits in it
  int64_t age_ms = -1;   // since the rank enqueued last_enqueued, at the dump
};

// The collectives a rank enqueued lately, for stragglers: (group, seq, when).
struct Arrival {
  std::string group;
  int64_t seq = 0;
  std::string op;
  int64_t created_ns = 0;
  std::optional<double> duration_ms;  // on the GPU, waiting included (with timing)
};

// One rank as its node agent read it.
struct RankFlight {
  int rank = -1;
  std::string host;
  int pid = 0;
  std::string unread;  // why no dump was read (empty: read)
  std::vector<GroupPlace> groups;
  std::vector<Arrival> arrivals;  // oldest first
};

// Each group's place; `dumped_ns`: the wall clock when the dump was written
// (its file's mtime), from which the ages are counted.
std::vector<GroupPlace> group_places(const FlightDump& dump, int64_t dumped_ns);
// The last `most` collectives the rank enqueued, point-to-point left out.
std::vector<Arrival> recent_arrivals(const FlightDump& dump, size_t most);
// "0-3,8" (stacks::rank_ranges) back to ranks; nullopt: not such a text, or
// more than `most` ranks.
std::optional<std::vector<int>> parse_rank_ranges(std::string_view text, size_t most);

struct FlightHang {
  int rank = -1;  // the first rank that never entered
  std::string host;
  std::string which;  // "pg 0 #22": the same hang keeps it
  std::string
      message;  // "rank 1 (n2, pid 4242) never entered all_reduce #22 (process group 0); ..."
};

// A process group hangs when its read members all waited (pending) in its
// newest collective for `timeout`, or enqueued none of the group for as
// long and are behind it; some of each. Unread members are named, never
// judged. The group the longest waited in is named; nullopt: none hangs.
std::optional<FlightHang> flight_hang(const std::vector<RankFlight>& ranks,
                                      std::chrono::milliseconds timeout);

// dp-top --stacks's lines: per process group, the ranks at each place
// ("flight recorder, process group 0: rank 1 done #21 (broadcast); ranks
// 0,2-3 wait in all_reduce #22 for 31 s"), then the ranks not read, by why.
std::vector<std::string> flight_lines(const std::vector<RankFlight>& ranks);

// Who the others wait for, over the collectives that several read ranks
// entered: where every rank timed it on the GPU (TORCH_NCCL_ENABLE_TIMING),
// the rank whose collective took least waited least, and the others waited
// their time less its; else the rank that enqueued it last, by how much
// after the first (wall clocks of different hosts differ by their skew).
struct LateRank {
  int rank = -1;
  std::string host;
  int last = 0;        // collectives it entered last
  int seen = 0;        // collectives compared
  double late_ms = 0;  // the others' wait it caused, summed
};
// Latest first (the most wait caused); ranks never last are left out.
std::vector<LateRank> late_ranks(const std::vector<RankFlight>& ranks);

// The straggler verdict's input from the recorders (issue 55's RankShare,
// looks exact): each read rank's share of [from_ns, to_ns) spent waiting for
// its peers in the collectives that several read ranks enqueued, the first
// of them within it, by the rule above (its GPU time over the shortest, else
// its enqueue before the last). Ranks in no such collective are left out: no
// evidence.
struct WaitShare {
  int rank = -1;
  std::string host;
  double waiting = 0;  // 0..1
  int collectives = 0;
};
std::vector<WaitShare> flight_wait_shares(const std::vector<RankFlight>& ranks, int64_t from_ns,
                                          int64_t to_ns);
// "rank 1 (n2) entered 40 of 40 collectives last, the others waited 1532.0 ms for it in all".
std::string late_text(const LateRank& r);

}  // namespace dp::stacks
