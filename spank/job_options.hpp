// Options given to sbatch/salloc, as Slurm hands them to the job's steps:
// environment variables named after the plugin and the option.
#pragma once

#include <string>

#include "dp/options.hpp"
#include "dp/result.hpp"

namespace dp::spank {

inline constexpr const char* kPluginName = "dp";

// "_SLURM_SPANK_OPTION_dp_dp_world" for "dp-world" (Slurm's spelling:
// every non-alphanumeric character becomes '_').
std::string option_env_name(const std::string& option);

// Job-level options found in this process's environment: the
// SLURM_SPANK_-prefixed form sbatch exports to the batch script, and the
// plain form salloc leaves in its shell.
Result<Options> options_from_environment();

}  // namespace dp::spank
