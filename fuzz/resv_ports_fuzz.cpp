// libFuzzer target: slurmstepd's reading of SLURM_STEP_RESV_PORTS
// (reserved_ports) and of the kernel's socket tables for the holders
// of a port range (port_holders). An accepted port is in 1..65535.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "dp/port_holders.hpp"
#include "dp/step_ports.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto ports = dp::reserved_ports(text))
    for (int p : *ports)
      if (p < 1 || p > 65535) std::abort();
  const auto holders = dp::port_holders(text, 1, 65535);
  for (const auto& [uid, n] : holders.by_uid)
    if (n < 1 || n > 65535) std::abort();
  (void)dp::holders_text(holders);
  return 0;
}
