// The start-up workflow of one simulated PyTorch rank, as bytes of PyTorch's
// store protocol: what init_process_group("env://") sends (VALIDATE and
// PING from PyTorch 2.2 on, ADD init/), ProcessGroupNCCL's ID exchange (rank 0
// SETs the ID, every rank WAITs and GETs it, as TCPStore::get does) and one
// store barrier (ADD, the last rank SETs barrier_done, every rank WAITs).
// dp-store-bench sends it through node agents and, as the anchor, straight
// to PyTorch's own TCPStore server.
#pragma once

#include <cstddef>
#include <string>

#include "dp/torchstore/opcodes.hpp"

namespace dp::bench {

inline constexpr int kLastStep = 5;
extern const std::string kNcclId;  // 128 bytes

// The first step a client of dialect d sends: v2 opens with VALIDATE + PING.
int first_step(torchstore::Dialect d);
// Step `step` of rank's workflow; valid until the next call.
const std::string& workflow_step(torchstore::Dialect d, int rank, int step);
// The bytes of step's answer; 0: none is awaited.
size_t answer_bytes(int step);
// What the rank whose barrier ADD answered the world size sends next.
std::string barrier_done(torchstore::Dialect d);

}  // namespace dp::bench
