// torchrun's c10d rendezvous keeps its whole state as one value of the store
// its launchers meet in: key "torch.rendezvous." + the run id, the value the
// base64 of a pickled _RendezvousState whose last_heartbeats holds, for each
// launcher (_NodeDesc: its host, pid and a local id), when it last said it
// lives. A launcher reading the state drops one whose heartbeat is older than
// the keep-alive (5 s x 3 unless configured), and only then does the round
// move on without it. The step's daemon knows a node is lost long before
// that: it learns which launchers a node's writes speak for
// (heartbeats_moved) and, once the node is lost, ages their heartbeats
// (with_heartbeats_expired), so the next read drops them. Pure: bytes in,
// bytes out; the pickle is read as inert records (dp/pickle.hpp) and edited
// in place, byte for byte the same length.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dp/result.hpp"

namespace dp::torchstore {

inline constexpr std::string_view kRendezvousStatePrefix = "torch.rendezvous.";

// The state's own key, after any store prefix ("/torch.rendezvous.ID" as
// torchrun's TCPStore client sends it); a round's workers' keys
// ("/torch.rendezvous.ID.N/KEY") are not.
bool is_rendezvous_state_key(std::string_view key);

struct Launcher {
  std::string host;  // _NodeDesc's addr (fqdn in PyTorch before 2.0)
  int64_t pid = 0;
  int64_t local_id = 0;
  std::string heartbeat;      // datetime's own 10 bytes: year (2), month, day, h, m, s, us (3)
  uint32_t heartbeat_at = 0;  // their offset in the pickle
  std::string name() const;   // "host:pid" (and ".local_id" when not 0)
};

struct RendezvousState {
  std::string pickle;               // the decoded value
  std::vector<Launcher> launchers;  // in last_heartbeats' order
};

// An error names what is not as PyTorch writes it (base64, the pickle, a
// field); a value "torch.rendezvous.ID" holds only while the round is
// unset (torchrun's null sentinel) reads as no launchers.
Result<RendezvousState> read_rendezvous_state(std::string_view value);

// The launchers whose heartbeat `next` moves past `prev`'s (or adds): those a
// write of `next` speaks for, as each launcher sets its own heartbeat only.
std::vector<Launcher> heartbeats_moved(const RendezvousState& prev, const RendezvousState& next);

// The stored value (base64) of `state` with the named launchers' heartbeats
// set to 2000-01-01 00:00:00 (a zone kept as it was): the next launcher that
// syncs drops them. `expired` counts the heartbeats changed; a heartbeat
// whose bytes the pickle shares with another value is left alone.
std::string with_heartbeats_expired(const RendezvousState& state,
                                    const std::vector<std::string>& names, int& expired);

}  // namespace dp::torchstore
