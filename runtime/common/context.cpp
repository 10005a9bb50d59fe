// Context::from_environment: our plugin's variables, torchrun's alone, or
// nothing (a single process of world 1).
#include "dp/context.hpp"

#include "cuda_device.hpp"
#include "dp/env_names.hpp"
#include "dp/options.hpp"
#include "env_parse.hpp"

namespace dp {
namespace {

constexpr int kMaxWorld = 1 << 20;

Result<int> int_var(const char* name, int fallback, int lo, int hi) {
  auto v = detail::env_value(name);
  if (!v) return fallback;
  return detail::parse_int(name, *v, lo, hi);
}

// srun's options, read with the parser the plugin uses on the nodes; the
// task's tiles are as many as they ask for.
Result<void> read_step_options(Context& c) {
  auto text = detail::env_value(env::kOptions);
  if (!text) return {};
  auto opts = parse_node_options(*text, env::kOptions);
  DP_TRY(opts);
  c.tiles_per_task = opts->tiles.value_or(0);
  if (c.tiles_per_task > 0 && c.tiles.size() != static_cast<size_t>(c.tiles_per_task))
    return make_error(Errc::invalid_argument,
                      std::string(env::kTiles) + " holds " + std::to_string(c.tiles.size()) +
                          " tiles but " + env::kOptions +
                          " asks for --dp-tiles=" + std::to_string(c.tiles_per_task) +
                          "; both come from srun, do not set them by hand");
  return {};
}

}  // namespace

namespace {

// RANK and WORLD_SIZE: both or neither (a single process).
Result<void> read_rank(Context& c) {
  auto rank_text = detail::env_value(env::kRank);
  auto world_text = detail::env_value(env::kWorldSize);
  if (rank_text.has_value() != world_text.has_value()) {
    const char* missing = rank_text ? env::kWorldSize : env::kRank;
    const char* present = rank_text ? env::kRank : env::kWorldSize;
    return make_error(Errc::invalid_argument,
                      std::string(present) + " is set but " + missing +
                          " is not; set both (srun --dp-world=auto does) or neither for a "
                          "single process");
  }
  if (!world_text) return {};
  auto world = detail::parse_int(env::kWorldSize, *world_text, 1, kMaxWorld);
  if (!world) return world.error();
  c.world_size = *world;
  auto rank = detail::parse_int(env::kRank, *rank_text, 0, c.world_size - 1);
  if (!rank)
    return make_error(Errc::invalid_argument,
                      std::string(env::kRank) + "='" + *rank_text +
                          "' must be an integer in [0, WORLD_SIZE-1] = [0, " +
                          std::to_string(c.world_size - 1) + "]");
  c.rank = *rank;
  return {};
}

// LOCAL_WORLD_SIZE, LOCAL_RANK and the node's index.
Result<void> read_node_place(Context& c) {
  // Unknown LOCAL_WORLD_SIZE (hand-written launch scripts often omit it):
  // WORLD_SIZE is its only safe upper bound.
  auto lws = int_var(env::kLocalWorldSize, c.world_size, 1, c.world_size);
  if (!lws) return lws.error();
  c.local_world_size = *lws;
  auto lr = int_var(env::kLocalRank, 0, 0, c.local_world_size - 1);
  if (!lr)
    return make_error(Errc::invalid_argument, lr.error().message +
                                                  " (LOCAL_RANK must be below LOCAL_WORLD_SIZE=" +
                                                  std::to_string(c.local_world_size) + ")");
  c.local_rank = *lr;
  // torchrun calls the node index GROUP_RANK; NODE_RANK wins when both exist.
  auto group = int_var(env::kGroupRank, 0, 0, kMaxWorld);
  if (!group) return group.error();
  auto node = int_var(env::kNodeRank, *group, 0, kMaxWorld);
  if (!node) return node.error();
  c.node_rank = *node;
  return {};
}

}  // namespace

namespace {

bool is_loopback_host(const std::string& h) {
  return h == "localhost" || h == "::1" || h == "[::1]" || h.rfind("127.", 0) == 0;
}

}  // namespace

std::string Context::route_host() const {
  const std::string daemon = rdv_addr.substr(0, rdv_addr.rfind(':'));
  if (master_addr.empty() || (is_loopback_host(master_addr) && !daemon.empty())) return daemon;
  return master_addr;
}

Result<Context> Context::from_environment() {
  Context c;
  DP_TRY(read_rank(c));
  DP_TRY(read_node_place(c));
  c.master_addr = detail::env_value(env::kMasterAddr).value_or("");
  auto port = int_var(env::kMasterPort, 0, 1, 65535);
  if (!port) return port.error();
  c.master_port = *port;

  c.rdv_addr = detail::env_value(env::kRdvAddr).value_or("");
  c.secret = detail::env_value(env::kRdvSecret).value_or("");
  c.job_id = detail::env_value(env::kJobId).value_or("");
  c.step_id = detail::env_value(env::kStepId).value_or("");
  if (!c.rdv_addr.empty() && c.secret.empty()) {
    return make_error(Errc::invalid_argument,
                      std::string(env::kRdvAddr) + " is set but " + env::kRdvSecret +
                          " is not; both come from srun --dp-world=auto, do not set one by hand");
  }
  auto tiles = detail::parse_int_list(env::kTiles, detail::env_value(env::kTiles).value_or(""));
  if (!tiles) return tiles.error();
  c.tiles = std::move(*tiles);
  DP_TRY(read_step_options(c));
  return c;
}

Result<int> Context::cuda_device(int visible) const {
  return detail::select_cuda_device(tiles, local_rank, visible);
}

}  // namespace dp
