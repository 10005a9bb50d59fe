// sbatch and salloc: each option's value was checked by its callback; here
// a bad one fails the command. Nothing checks the options together before a
// step: srun does (srun_context.cpp). Slurm carries the values to every
// step of the job (see job_options.hpp).
#include "contexts.hpp"
#include "plugin_state.hpp"

namespace dp::spank {

int allocator_init_post_opt(spank_t) {
  // A bad value was reported by its callback; make sure the command fails
  // even on a Slurm path that ignores a callback's return value.
  return state().option_error ? -1 : 0;
}

}  // namespace dp::spank
