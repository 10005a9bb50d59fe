// Slurm's C headers for the plugin's C++ files: spank.h needs <stdint.h>
// first and C linkage. What changed in Slurm's API between releases is in
// dp/slurm_api.hpp (slurmapi/), shared with the daemon and dp-top.
#pragma once

#include "dp/slurm_api.hpp"

extern "C" {
#include <slurm/spank.h>
}

#include <string>

namespace dp::spank {

// A failed SPANK call's code in Slurm's words: the plugin's messages say
// why Slurm refused, not only what failed.
inline std::string spank_text(spank_err_t rc) {
  const char* text = spank_strerror(rc);
  return text ? text : "SPANK error " + std::to_string(static_cast<int>(rc));
}

}  // namespace dp::spank
