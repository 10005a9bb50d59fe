// Where an unmodified PyTorch program's ranks meet (--dp-store, the site's
// store=): rank 0's own TCPStore on MASTER_PORT, or the step's store that
// each node's agent serves on 127.0.0.1 (agent/store_front.hpp), kept in the
// step's daemon. Pure: the decision and the variables a task gets for it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dp/launcher.hpp"
#include "dp/options.hpp"
#include "dp/result.hpp"
#include "dp/site_config.hpp"

namespace dp {

enum class StoreKind : uint8_t {
  rank0,     // rank 0's program hosts TCPStore on MASTER_ADDR:MASTER_PORT
  step,      // every rank is a client of its node's agent store
  launcher,  // the step's store was asked for, but per-node launchers keep
             // torchrun's own (its static rendezvous; see store_line)
};

// The step's choice: --dp-store, else the site's store=; a launcher step
// keeps torchrun's store. Refused: --dp-master-socket=pass with the step's
// store (no rank binds MASTER_PORT, so there is no socket to pass).
Result<StoreKind> store_kind(const Options& opts, const SiteConfig& site, const LaunchShape& shape);

// A task's variables for the step's store (StoreKind::step): its node's
// agent store as MASTER_ADDR/MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE=True
// (every rank, rank 0 too, a client: PyTorch's env:// then binds nothing)
// and TORCHELASTIC_RESTART_COUNT, and DP_STORE. Empty for the other kinds.
std::vector<std::pair<std::string, std::string>> store_environment(StoreKind kind,
                                                                   const std::string& store_port);

// "rank0", "step", "launcher": the store in srun's start-up line and report.
const char* store_kind_name(StoreKind kind) noexcept;

// One line for --dp-explain: which store the step's tasks use, and why.
std::string store_line(StoreKind kind);

}  // namespace dp
