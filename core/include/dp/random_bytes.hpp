// Unguessable bytes from the kernel (getrandom): the step's secret (srun),
// the hello nonces (daemon, node agent) and the agent's socket name. In the
// core because the plugin needs them too, and it must not load a crypto
// library into srun and slurmstepd.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "dp/result.hpp"

namespace dp {

// getrandom(2)'s signature, so tests can put a failing source in its place.
using RandomSource = ssize_t (*)(void* buf, size_t len, unsigned flags);

// n bytes from `source` (getrandom when null). An interrupted call is retried
// a few times; any other failure (ENOSYS: a kernel before 3.17 or a seccomp
// filter; EPERM: a seccomp filter) is an error that names the cause: never a
// busy loop, never a guessable fallback.
Result<std::string> random_bytes(size_t n, RandomSource source = nullptr);

}  // namespace dp
