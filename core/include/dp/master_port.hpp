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

// The store key the master node's agent publishes MASTER_PORT under; the
// daemon times the step's master-port phase by it.
inline constexpr const char* kMasterPortKey = "dp/master_port";

// Why the master node (the one holding rank 0) has no MASTER_PORT.
struct MasterFailure {
  std::string node;    // its name
  std::string reason;  // its own message ("no free MASTER_PORT in ...")
};
// The master node's outcome, what its agent publishes under kMasterPortKey:
// its port, or its failure (proto/master_port_value.hpp is the codec).
struct MasterPortValue {
  MasterPortValue(int p = 0) : port(p) {}                      // NOLINT: implicit by design
  MasterPortValue(MasterFailure f) : failure(std::move(f)) {}  // NOLINT
  int port = 0;                          // 1..65535 when the master node has one
  std::vector<int> dp_ports;             // with a port: the step's --dp-ports (DP_PORTS)
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
