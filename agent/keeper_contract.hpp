// What a task's keeper (the plugin's, in the task: spank/task_keeper.hpp) and
// its node agent say to each other in a step that restarts in place
// (--dp-spares, --dp-max-restarts): one text line each way per event, on the
// agent's keeper socket (its ranks' abstract socket's name + kKeeperSuffix),
// which serves only its own uid and only processes root named as the node's
// tasks. Linked into the plugin and the agent, so both parse alike.
//
//   keeper -> agent: "keeper <local> <pid>"  first: the task's local index and pid
//                    "started <pid> <start ticks>"  the program runs (its own pid)
//                    "exited <wait status>"  the program ended
//                    "stopped"  after a stop or fence: nothing of the program's
//                               process tree is left
//   agent -> keeper: "start <node rank> <restart count>"  (again) as that node rank;
//                    also the answer to "keeper" on a node that runs ranks now,
//                    so a keeper that comes late starts with today's count
//                    "stop <grace ms>"  SIGTERM to the program's whole tree,
//                                       SIGKILL to all of it after grace
//                    "fence"  SIGKILL to the program's whole tree now
//                    "exit"  the task ends as its last program did (0: none ran);
//                            one that still runs (a libdp program's goodbye comes
//                            before its end) is waited for, not stopped
// A keeper whose agent's connection closes ends its program's tree and
// itself: no program runs on a node whose agent is gone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dp::agent {

inline constexpr const char* kKeeperSuffix = ".keepers";
inline constexpr size_t kMaxKeeperLine = 128;

struct KeeperLine {
  enum class Kind : uint8_t { keeper, started, exited, stopped, start, stop, fence, exit };
  Kind kind = Kind::exit;
  long long a = 0, b = 0;  // keeper: local, pid; started: pid, ticks; exited: status;
                           // start: node rank, count; stop: grace ms
};

std::string format_keeper_line(const KeeperLine& l);  // with its newline
// One line without its newline; nullopt: not one of these.
std::optional<KeeperLine> parse_keeper_line(std::string_view line);

}  // namespace dp::agent
