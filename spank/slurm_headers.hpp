// Slurm's C headers for the plugin's C++ files: spank.h needs <stdint.h>
// first and C linkage. What changed in Slurm's API between releases is in
// dp/slurm_api.hpp (slurmapi/), shared with the daemon and dp-top.
#pragma once

#include "dp/slurm_api.hpp"

extern "C" {
#include <slurm/spank.h>
}
