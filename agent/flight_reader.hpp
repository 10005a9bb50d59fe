// The node's NCCL ranks' flight recorders (stacks/flight_recorder.hpp), for
// the daemon's hang watch. The agent owns a folder for the step (0700, made
// with a name nobody can guess, removed with the agent) where PyTorch makes
// each rank's pipe and writes its dump (core's nccl_watch.hpp names the
// variables), and holds a loopback port for NCCL's RAS service: bound with
// SO_REUSEPORT alone and not listening, so the step's NCCL (which binds a
// forced port with SO_REUSEADDR and SO_REUSEPORT, as the job's user) can
// listen on it and another user cannot bind it (e2e obs.flight_recorder).
//
// A read writes each rank's pipe (non-destructive: PyTorch's monitor thread
// dumps within about a second and runs on), waits for the dump to be whole,
// and places the rank in each process group. It runs on the stacks reader's
// thread, never on the loop.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dp/stacks/flight_recorder.hpp"
#include "dp/unique_fd.hpp"
#include "launch_contract.hpp"

namespace dp::agent {

class FlightPlaces {
 public:
  FlightPlaces() = default;
  // What could not be made is named in `notes` and left empty (0: no port).
  static FlightPlaces create(uint32_t job, uint32_t step, std::vector<std::string>& notes);
  ~FlightPlaces();
  FlightPlaces(FlightPlaces&& o) noexcept;
  FlightPlaces& operator=(FlightPlaces&& o) noexcept;
  const std::string& dir() const { return dir_; }
  int ras_port() const { return ras_port_; }

 private:
  void remove();
  std::string dir_;
  int ras_port_ = 0;
  UniqueFd ras_hold_;
};

inline constexpr size_t kMostDumpBytes = 16u << 20;  // pickle::Limits' bound
inline constexpr size_t kMostArrivals = 64;          // per rank, for stragglers

// When each rank's pipe was last written (the wall clock, ns): a dump that
// came after the read that asked for it is taken by the next read.
using FlightTriggers = std::map<int, int64_t>;

// Each rank's dump from `dir`, triggered now and waited for until `deadline`
// (or the one an earlier read asked for, when none came in time); a rank
// that has no pipe, does not read it, or has not dumped is `unread`, with why.
std::vector<stacks::RankFlight> read_flights(const std::string& dir,
                                             const std::vector<TaskStart>& ranks,
                                             std::chrono::steady_clock::time_point deadline,
                                             FlightTriggers& triggers);

}  // namespace dp::agent
