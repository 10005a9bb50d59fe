// Gloo's rendezvous store for a job: dp-rendezvousd through our client (the
// normal case under srun --dp-world=auto), or a shared directory
// (DP_STORE_DIR: torchrun-style launches and tests without a daemon).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <type_traits>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include "dp/context.hpp"
#include "rendezvous_client.hpp"

namespace dp::detail {

// Adapts the daemon client to gloo's interface; gloo wants exceptions, which
// stay inside libdp (the Gloo communicator catches them).
class DaemonStore final : public gloo::rendezvous::Store {
 public:
  DaemonStore(RendezvousClient& client, std::chrono::milliseconds timeout)
      : client_(client), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override;
  // Written once (the NCCL unique ID): node agents cache it.
  void set_once(const std::string& key, const std::vector<char>& data);
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  RendezvousClient& client_;
  std::chrono::milliseconds timeout_;
};

struct JobStore {
  std::unique_ptr<RendezvousClient> client;  // null without a daemon
  std::shared_ptr<gloo::rendezvous::Store> store;
};

// Connects ctx's full mesh through store, its keys under prefix. gloo
// 2025-09 takes the store as a shared_ptr (PrefixStore and connectFullMesh),
// earlier releases by reference; a template, so that only the branch of the
// installed gloo is compiled.
template <class Prefix = gloo::rendezvous::PrefixStore>
void connect_full_mesh(gloo::rendezvous::Context& ctx, const std::string& prefix,
                       const std::shared_ptr<gloo::rendezvous::Store>& store,
                       std::shared_ptr<gloo::transport::Device>& device) {
  if constexpr (std::is_constructible_v<Prefix, const std::string&,
                                        std::shared_ptr<gloo::rendezvous::Store>>) {
    ctx.connectFullMesh(std::make_shared<Prefix>(prefix, store), device);
  } else {
    Prefix prefixed(prefix, *store);
    ctx.connectFullMesh(prefixed, device);
  }
}

// Error (one line, names the variables to set) when neither a daemon nor a
// store directory is configured.
Result<JobStore> open_job_store(const Context& ctx, std::chrono::milliseconds timeout);

// The hostname reported to the daemon, so failure messages name the host.
std::string this_hostname();

}  // namespace dp::detail
