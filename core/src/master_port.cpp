#include "dp/master_port.hpp"

#include <string>

#include "dp/options.hpp"

namespace dp {

std::string master_failure_text(const MasterFailure& f) {
  return "the master node could not set up the step: node " + f.node + ": " + f.reason;
}

Result<int> pick_port(int min, int max, uint64_t seed, const std::function<bool(int)>& try_take) {
  if (min < 1 || max > 65535 || min > max)
    return make_error(Errc::invalid_argument, "port range " + std::to_string(min) + "-" +
                                                  std::to_string(max) + " is empty or invalid");
  const uint64_t span = static_cast<uint64_t>(max - min) + 1;
  for (uint64_t i = 0; i < span; ++i) {
    int port = min + static_cast<int>((seed + i) % span);
    if (try_take(port)) return port;
  }
  return make_error(Errc::unavailable,
                    "no free MASTER_PORT in " + std::to_string(min) + "-" + std::to_string(max) +
                        " on the master node; widen ports= in plugstack.conf or pass "
                        "--dp-master-port=PORT");
}

}  // namespace dp
