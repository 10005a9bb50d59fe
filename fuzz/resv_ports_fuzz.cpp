// libFuzzer target: slurmstepd's reading of SLURM_STEP_RESV_PORTS
// (reserved_ports; slurm_reservation, which takes none of a user's list
// without slurmctld's record or outside MpiParams=ports=, and never a
// privileged port). An accepted port is in 1..65535.
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
  from_user.slurmctld.reset();
  from_user.mpi_ports = dp::mpi_ports_range(text);
  const auto outside = dp::slurm_reservation(from_user);
  if (auto taken = dp::reserved_ports(outside.ports))
    for (int p : *taken)
      if (p < dp::kUnprivilegedPortStart || !from_user.mpi_ports ||
          p < from_user.mpi_ports->first || p > from_user.mpi_ports->second)
        std::abort();
  return 0;
}
