// libFuzzer target: slurmstepd's reading of SLURM_STEP_RESV_PORTS
// (reserved_ports). An accepted port is in 1..65535.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dp/step_ports.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto ports = dp::reserved_ports(text))
    for (int p : *ports)
      if (p < 1 || p > 65535) std::abort();
  return 0;
}
