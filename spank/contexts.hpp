// The plugin's work, one function per Slurm callback and context. The
// dispatch file (spank_dp.cpp) calls these; each returns 0 or -1 and never
// throws.
#pragma once

#include "slurm_headers.hpp"

namespace dp::spank {

// srun (S_CTX_LOCAL), srun_context.cpp
int srun_init(spank_t sp);
int srun_local_user_init(spank_t sp);
int srun_exit(spank_t sp);

// sbatch/salloc (S_CTX_ALLOCATOR), allocator_context.cpp
int allocator_init_post_opt(spank_t sp);

// slurmstepd (S_CTX_REMOTE), stepd_context.cpp
int stepd_init_post_opt(spank_t sp);
int stepd_task_init(spank_t sp);
int stepd_task_post_fork(spank_t sp);
int stepd_task_exit(spank_t sp);
int stepd_exit(spank_t sp);

}  // namespace dp::spank
