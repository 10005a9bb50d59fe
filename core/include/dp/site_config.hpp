// Site settings: key=value words from the plugstack.conf line, parsed
// strictly (unknown key or bad value is an error naming it). Pure.
#pragma once

#include <string>
#include <vector>

#include "dp/result.hpp"

namespace dp {

enum class AcceleratorKind { none, cuda, ze, rdu };
const char* accelerator_kind_name(AcceleratorKind k) noexcept;

struct SiteConfig {
  AcceleratorKind kind = AcceleratorKind::cuda;
  int devices_per_node = 0;  // 0: what Slurm tells (gres, visible devices)
  int tiles_per_device = 1;  // GPU stacks (ze), RDU tiles (rdu)
  int port_min = 29400;      // MASTER_PORT range when Slurm reserved none
  int port_max = 29999;
  bool default_on = false;  // every step is a slurm-dp step
  std::string daemon_path;  // dp-rendezvousd; empty: the installed one
  std::string lease_dir = "/run/slurm-dp/ports";
  int idle_timeout_s = 0;  // accepted for older configurations; no effect
  // A rank silent this long while others are heard is dead (0: never). More
  // than Slurm's default gang-scheduling slice (30 s): see dp-rendezvousd(8).
  int heartbeat_timeout_s = 60;
  int port_wait_s = 60;        // how long non-master nodes wait for MASTER_PORT
  bool use_resv_ports = true;  // take MASTER_PORT from SLURM_STEP_RESV_PORTS when set
  int hang_timeout_s =
      120;             // a live rank others wait for this long in a collective is named; 0: off
  std::string report;  // step report written by srun at step end (%j job, %s step); empty: none

  // Tiles per node the site declares; 0 when it leaves it to Slurm.
  int declared_tiles_per_node() const noexcept { return devices_per_node * tiles_per_device; }
};

// Parses the plugin's argv (argc words after the plugin path). Messages name
// the key and say the fix.
Result<SiteConfig> parse_site_config(const std::vector<std::string>& words);

// Every key parse_site_config accepts, and no other (the shipped snippet must
// document exactly these; packaging tests check it).
const std::vector<std::string>& site_config_keys();

}  // namespace dp
