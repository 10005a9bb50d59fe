// Where dp-rendezvousd listens on srun's host: the one listener there that
// the step's nodes connect to, so a firewalled login host must open its
// port. Sites open Slurm's SrunPortRange for srun's own listeners, which the
// nodes reach the same way; slurm-dp's daemon_ports wins over it. Pure.
#pragma once

#include <cstdint>
#include <string>

#include "dp/site_config.hpp"

namespace dp {

struct ListenRange {
  int low = 0, high = 0;  // 0: any port, the kernel's choice
  std::string setting;    // where it comes from, as an admin writes it: daemon_ports, SrunPortRange
  bool any() const noexcept { return low <= 0; }
  int size() const noexcept { return any() ? 0 : high - low + 1; }
  std::string text() const;  // "SrunPortRange=61000-61099"; "any port" when unset
};

// The site's daemon_ports when set, else Slurm's SrunPortRange as srun read
// it (`srun_low` 0: unset), else any port.
ListenRange daemon_listen_range(const SiteConfig& site, int srun_low, int srun_high);

// The i-th port to try (0 <= i < size()) from `start`, drawn at random so
// that steps started together spread: each port of the range once.
int nth_listen_port(const ListenRange& r, uint32_t start, int i);

// Every port of the range is taken on `address`: names the range, where it
// comes from and the fix.
std::string listen_range_full(const ListenRange& r, const std::string& address);

}  // namespace dp
