#include "dp/step_store.hpp"

#include "dp/env_names.hpp"

namespace dp {

Result<StoreKind> store_kind(const Options& opts, const SiteConfig& site,
                             const LaunchShape& shape) {
  // A step that restarts in place meets at the step's store: rank 0's node
  // (and the store its program hosts) may be the one lost.
  const bool restarts = shape.launcher.empty() ? opts.restarts_programs() : shape.elastic();
  if (restarts && opts.step_store == false)
    return make_error(Errc::invalid_argument,
                      "--dp-store=rank0: with --dp-spares or --dp-max-restarts the ranks meet at "
                      "the step's store, which outlives any rank and any node (rank 0's program "
                      "may be the one restarted); drop --dp-store=rank0");
  if (!restarts && !opts.uses_step_store(site.step_store)) return StoreKind::rank0;
  // Spare launchers meet in torchrun's c10d rendezvous, which the step's store serves.
  if (!shape.launcher.empty()) return shape.elastic() ? StoreKind::step : StoreKind::launcher;
  if (opts.passes_master_socket())
    return make_error(Errc::invalid_argument,
                      std::string("--dp-master-socket=pass: with the step's store (") +
                          (opts.step_store ? "--dp-store=step" : "the site's store=step") +
                          ") no rank binds MASTER_PORT, so there is no socket to pass; drop "
                          "--dp-master-socket=pass, or use --dp-store=rank0 with it");
  return StoreKind::step;
}

std::vector<std::pair<std::string, std::string>> store_environment(StoreKind kind,
                                                                   const std::string& store_port) {
  if (kind != StoreKind::step) return {};
  return {{env::kMasterAddr, "127.0.0.1"},
          {env::kMasterPort, store_port},
          {env::kTorchelasticUseAgentStore, "True"},
          {env::kTorchelasticRestartCount, "0"},
          {env::kStore, "step"}};
}

const char* store_kind_name(StoreKind kind) noexcept {
  switch (kind) {
    case StoreKind::step: return "step";
    case StoreKind::launcher: return "launcher";
    case StoreKind::rank0: break;
  }
  return "rank0";
}

std::string store_line(StoreKind kind) {
  switch (kind) {
    case StoreKind::step:
      return "store: step: each node's dp-nodeagent serves PyTorch's store on 127.0.0.1 "
             "(MASTER_ADDR/MASTER_PORT of the task's own node), kept in the step's daemon; every "
             "rank is a client (TORCHELASTIC_USE_AGENT_STORE=True) and none binds a port";
    case StoreKind::launcher:
      return "store: torchrun's own: --dp-store=step asked for the step's store, but torchrun "
             "hosts a store of its own for its rendezvous and its workers (node rank 0's "
             "launcher, on MASTER_PORT), so a launcher step keeps it";
    case StoreKind::rank0: break;
  }
  return "store: rank0: rank 0's program hosts PyTorch's TCPStore on MASTER_ADDR:MASTER_PORT";
}

}  // namespace dp
