// libFuzzer target: slurmstepd's reading of SLURM_STEP_RESV_PORTS
// (reserved_ports; slurm_reservation, which takes none of a user's list
// without slurmctld's record, and never a privileged port). An accepted port
// is in 1..65535.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dp/slurm_reservation.hpp"
#include "dp/step_ports.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto ports = dp::reserved_ports(text))
    for (int p : *ports)
      if (p < 1 || p > 65535) std::abort();
  dp::ReservationSources from_user;
  from_user.job_env = std::string(text);
  from_user.slurmctld = "";
  if (!dp::slurm_reservation(from_user).ports.empty()) std::abort();  // Slurm reserved none
  from_user.slurmctld.reset();  // slurmctld could not answer: none either
  if (!dp::slurm_reservation(from_user).ports.empty()) std::abort();
  return 0;
}
