// dp-top --stacks on a node: the agent reads its own node's ranks (it runs
// as the job's user, which is the reader's policy) on a thread of its own,
// never on the loop, which keeps answering ranks and heartbeats meanwhile: a
// read blocked on a rank's memory map lock waits there, not here. The loop
// watches fd() and takes the answers when it is readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dp/proto/rendezvous.pb.h"
#include "dp/unique_fd.hpp"
#include "flight_reader.hpp"
#include "launch_contract.hpp"

namespace dp::agent {

class StacksReader {
 public:
  StacksReader();
  ~StacksReader();  // joins the read in flight (bounded by its deadline)
  StacksReader(const StacksReader&) = delete;
  StacksReader& operator=(const StacksReader&) = delete;

  // Readable (an eventfd) when a read finished; -1 when none could be made.
  int fd() const { return done_.get(); }
  // Reads `ranks` within `deadline` unless a read is in flight: this ask then
  // joins it and gets the same answer. With `flight_dir`, also each rank's
  // flight recorder from there (flight_reader.hpp), within the same deadline.
  void ask(uint64_t ask, const std::vector<TaskStart>& ranks, std::chrono::milliseconds deadline,
           const std::string& flight_dir = {});
  // Once fd() was readable: one answer per ask that the finished read served.
  std::vector<proto::StacksAnswer> take();

 private:
  UniqueFd done_;
  std::mutex mu_;
  std::thread thread_;
  std::vector<uint64_t> asks_;  // loop's: the asks the read in flight serves
  proto::StacksAnswer result_;  // guarded by mu_: the finished read's answer
  FlightTriggers triggers_;     // the read thread's (one read at a time)
};

}  // namespace dp::agent
