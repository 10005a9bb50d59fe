// The agent's name for the core's /proc reader (dp/proc_stat.hpp), kept only
// while spank/port_lease.cpp includes it by this name (issue 53 rewrites that
// file now); remove it once nothing does.
#pragma once

#include "dp/proc_stat.hpp"

namespace dp::agent {
using ::dp::read_start_ticks;
}  // namespace dp::agent
