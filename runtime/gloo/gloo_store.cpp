#include "gloo_store.hpp"

#include <unistd.h>

#include <gloo/rendezvous/file_store.h>

#include <algorithm>
#include <stdexcept>

#include "dp/env_names.hpp"
#include "dp/params.hpp"
#include "env_parse.hpp"

namespace dp::detail {

namespace {

[[noreturn]] void throw_error(const char* what, const Error& e) {
  throw std::runtime_error(std::string("rendezvous ") + what + ": " + e.message);
}

}  // namespace

void DaemonStore::set(const std::string& key, const std::vector<char>& data) {
  auto r = client_.set(key, std::string_view(data.data(), data.size()));
  if (!r) throw_error("set", r.error());
}

void DaemonStore::set_once(const std::string& key, const std::vector<char>& data) {
  auto r = client_.set_once(key, std::string_view(data.data(), data.size()));
  if (!r) throw_error("set", r.error());
}

std::vector<char> DaemonStore::get(const std::string& key) {
  auto r = client_.get(key, timeout_);
  if (!r) throw_error("get", r.error());
  return std::vector<char>(r->begin(), r->end());
}

void DaemonStore::wait(const std::vector<std::string>& keys,
                       const std::chrono::milliseconds& timeout) {
  auto r = client_.wait(keys, timeout);
  if (!r) throw_error("wait", r.error());
}

std::string this_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown-host";
  return buf;
}

Result<JobStore> open_job_store(const Context& ctx, std::chrono::milliseconds timeout) {
  JobStore js;
  if (!ctx.rdv_addr.empty()) {
    ClientOptions o;
    DP_TRY(RendezvousClient::parse_address(ctx.rdv_addr, o));
    o.secret = ctx.secret;
    // The plugin's node agent, when it started one, speaks for the step's daemon.
    o.agent_socket = env_value(env::kAgentSocket).value_or("");
    o.agent_netns = env_value(env::kAgentNetns).value_or("");
    o.role = PeerRole::rank;
    o.rank = ctx.rank;
    o.world_size = ctx.world_size;
    o.hostname = this_hostname();
    o.connect_timeout = std::min(timeout, std::chrono::milliseconds(60'000));
    o.call_timeout = timeout;
    o.daemon_silence_limit = std::chrono::milliseconds(param(Param::rdv_silence_ms));
    auto client = RendezvousClient::connect(o);
    if (!client) {
      return wrap_error(client.error(), "cannot reach the rendezvous daemon at " + ctx.rdv_addr +
                                            ": " + client.error().message);
    }
    js.client = std::move(*client);
    js.store = std::make_unique<DaemonStore>(*js.client, timeout);
    return js;
  }
  if (auto dir = env_value(env::kStoreDir)) {
    js.store = std::make_unique<gloo::rendezvous::FileStore>(*dir);
    return js;
  }
  return make_error(Errc::invalid_argument,
                    "WORLD_SIZE=" + std::to_string(ctx.world_size) + " but " + env::kRdvAddr +
                        " is not set, so there is no rendezvous store; launch with srun "
                        "--dp-world=auto, or set " +
                        env::kStoreDir +
                        " to a directory every rank can write (shared file system)");
}

}  // namespace dp::detail
