// /proc/PID/stat (and /proc/PID/task/TID/stat) split into the command and the
// fields after it: the one splitter of that line, for the agent's processes
// (agent/proc_stat.hpp) and the stack reader's threads (stacks/kernel_view.hpp).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace dp {

struct ProcStatText {
  std::string_view command;              // field 2, without its parentheses
  std::vector<std::string_view> fields;  // fields[0] is field 3, the state
};

// The command sits between the first '(' and the last ')' and may hold
// spaces and ')'; none without both.
std::optional<ProcStatText> split_proc_stat(std::string_view text);

}  // namespace dp
