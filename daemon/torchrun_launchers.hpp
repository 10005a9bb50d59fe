// Which node each torchrun launcher of a step runs on, and its rendezvous
// told at once when that node is lost. torchrun's launchers meet in the
// step's store (torchstore/rendezvous_state.hpp); a launcher drops a lost one
// only once its heartbeat is older than the keep-alive (15 s by default),
// and until then the round cannot go on. A node's write of the state moves
// only its own launchers' heartbeats, so the writes say whose they are; once
// the node is lost, its launchers' heartbeats are aged and the next launcher
// that reads the state drops them. Pure: the broker hands the writes in and
// stores what comes out.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "dp/torchstore/rendezvous_state.hpp"

namespace dp::daemon {

class TorchrunLaunchers {
 public:
  // Launchers remembered at most (a launcher restarted by hand is a new one).
  static constexpr size_t kMostLaunchers = 1u << 16;

  // Node `node` compares-and-sets `key` from `current` (nullptr: unset) to
  // `desired`. Any key and value: only a rendezvous state is looked at.
  void note_write(int node, const std::string& key, const std::string* current,
                  const std::string& desired);

  struct Aged {
    std::string key, value;          // the state to store
    std::vector<std::string> names;  // the launchers aged ("host:pid")
  };
  // Each rendezvous state `find` holds with `node`'s launchers aged; none
  // where it holds none of them.
  std::vector<Aged> age_node(
      int node, const std::function<const std::string*(const std::string&)>& find) const;

  size_t launchers() const { return node_of_.size(); }

 private:
  std::unordered_map<std::string, int> node_of_;  // "host:pid" -> node index
  std::set<std::string> keys_;                    // the rendezvous states written
  std::set<int> known_;                           // the nodes whose launcher is known
  // The last state written, read: the next write's `current`, as a rule
  // (one read per write, not two).
  std::string last_key_, last_value_;
  torchstore::RendezvousState last_;
};

}  // namespace dp::daemon
