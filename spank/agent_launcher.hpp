// Starts dp-nodeagent for one step on one node (slurmstepd, as root), as the
// job's user. Root gives it its settings over a pipe (never argv or the
// environment), reads its one answer line bounded in size and time, and keeps
// only a pidfd and the control pipe: task exits go down it without blocking,
// and closing it ends the agent.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "dp/result.hpp"
#include "dp/unique_fd.hpp"
#include "launch_contract.hpp"
#include "user_child.hpp"

namespace dp::spank {

// The agent is known by its pidfd alone: root never signals or reaps it by
// pid, which slurmstepd may have reaped and the kernel given to another.
struct NodeAgent {
  UniqueFd pidfd;    // opened right after fork, while the child cannot have been reaped
  UniqueFd control;  // the agent's stdin (non-blocking, close-on-exec)
  bool running() const { return static_cast<bool>(pidfd); }
};

// dp-nodeagent beside the daemon (the site's daemon= path), as installed.
std::string agent_path_beside(const std::string& daemon_path);

// Forks, drops to `ids` (become_user), sets PR_SET_PDEATHSIG, execs `path`,
// sends the settings and reads the answer within `wait`. On any failure the
// agent is stopped and `agent` stays empty. Without a pidfd (Linux before
// 5.3) no agent is kept: its stdin closes before any settings, so it exits.
// `held_fds` (the sockets of settings.held_ports, in order, at most
// agent::kMaxHeldPorts) become the agent's descriptors 3, 4, ...; nothing
// else of slurmstepd's reaches it.
Result<agent::AgentAnswer> start_agent(const std::string& path, const UserIds& ids,
                                       const agent::AgentSettings& settings,
                                       std::chrono::milliseconds wait, NodeAgent& agent,
                                       const std::vector<int>& held_fds = {});

// "rank R pid P start T" down the control pipe: the agent may then end the
// task through a pidfd when the step fails. Dropped if the pipe is full.
void tell_task_start(const NodeAgent& agent, const agent::TaskStart& task);

// "rank R exited status S" down the control pipe; dropped if the pipe is full.
void tell_task_exit(const NodeAgent& agent, int rank, int wait_status);

// Continues the agent (it may be stopped) and closes the control pipe (it
// leaves on its own), then SIGKILL through the pidfd if it is still there
// after grace_ms, and reaps exactly that process if slurmstepd has not
// (waitid on the pidfd).
void stop_agent(NodeAgent& agent, int grace_ms = 1'000);

}  // namespace dp::spank
