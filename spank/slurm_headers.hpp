// Slurm's C headers for the plugin's C++ files: spank.h needs <stdint.h>
// first and both need C linkage.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ctime>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}
