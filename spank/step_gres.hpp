// How many GPUs a step asked Slurm for on each node, from the step's TRES
// request strings as slurmctld reports them ("gres:gpu:2", "gres:gpu:a100:2").
// Pure, so srun can refuse a --dp-tiles request the step's gres cannot meet
// before any task starts.
#pragma once

#include <string>
#include <string_view>

namespace dp::spank {

struct StepGresRequest {
  std::string per_node;  // --gres / --gpus-per-node (or inherited from the job)
  std::string per_task;  // --gpus-per-task
  std::string per_step;  // --gpus
};

// GPUs the step gets on a node running `tasks_on_node` of its tasks, in a
// step of `nodes` nodes: 0 when it asked for none, -1 when not knowable
// (--gpus spread over several nodes).
int step_gpus_on_node(const StepGresRequest& req, int tasks_on_node, int nodes);

}  // namespace dp::spank
