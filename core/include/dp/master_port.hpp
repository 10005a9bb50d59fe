// MASTER_PORT choice. Pure: the caller supplies the check that a port is
// free (bind + node-local lease), so the logic is testable without sockets.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "dp/result.hpp"

namespace dp {

// The store key the master node's agent publishes MASTER_PORT under; the
// daemon times the step's master-port phase by it.
inline constexpr const char* kMasterPortKey = "dp/master_port";

// First port of SLURM_STEP_RESV_PORTS ("12000-12003" or "12000,12005"), or
// nullopt when Slurm reserved none (absent or empty).
Result<std::optional<int>> first_reserved_port(std::string_view resv_ports);

// Tries the ports of [min, max] once each, starting at an offset chosen by
// `seed` (random per step, so nobody can predict a step's port and
// concurrent steps rarely contend), until `try_take` takes one. Every port
// is verified.
Result<int> pick_port(int min, int max, uint64_t seed, const std::function<bool(int)>& try_take);

}  // namespace dp
