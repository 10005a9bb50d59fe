// MASTER_PORT choice. Pure: the caller supplies the check that a port is
// free (bind + node-local lease), so the logic is testable without sockets.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dp/result.hpp"

namespace dp {

// The store key under which the daemon keeps the step's ports as the master
// node's agent published them (a PublishPorts request): the other nodes'
// agents fetch them there.
inline constexpr const char* kStepPortsKey = "dp/step_ports";

// Why the master node (the one holding rank 0) has no MASTER_PORT.
struct MasterFailure {
  std::string node;    // its name
  std::string reason;  // its own message ("no free MASTER_PORT in ...")
};
// The master node's outcome, what its agent publishes: the step's ports
// (the coordinator port and --dp-ports', as StepPorts), or its failure
// (proto/step_ports_value.hpp is the codec).
struct StepPortsValue {
  StepPortsValue(int coordinator_port = 0) : coordinator(coordinator_port) {}  // NOLINT: implicit
  StepPortsValue(MasterFailure f) : failure(std::move(f)) {}                   // NOLINT
  int coordinator = 0;                   // 1..65535 when the master node has one
  std::vector<int> dp_ports;             // with a coordinator: the step's --dp-ports (DP_PORTS)
  std::optional<MasterFailure> failure;  // set: it has none, and why
};

// How every node and the step's first failure word it: "the master node
// could not set up the step: node n1: <reason>".
std::string master_failure_text(const MasterFailure& f);

// Tries the ports of [min, max] once each, starting at an offset chosen by
// `seed` (random per step, so nobody can predict a step's port and
// concurrent steps rarely contend), until `try_take` takes one. Every port
// is verified.
Result<int> pick_port(int min, int max, uint64_t seed, const std::function<bool(int)>& try_take);

}  // namespace dp
