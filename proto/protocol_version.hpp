// Which protocol a connection speaks. A build speaks its newest version and
// the one before it, so that a site upgrades its login hosts (srun's
// dp-rendezvousd) and its compute nodes (dp-nodeagent, libdp) in either
// order, one release at a time: the accepting side (the daemon; an agent for
// its ranks) announces its newest version with the challenge, and the
// connecting side says the older of the two newest versions in its hello.
// A release before the announcement (protocol 3) sends none and says 3.
// Sides further apart are refused at the step's start, in one line that
// names both versions and which hosts to upgrade.
#pragma once

#include <cstdint>
#include <string>

#include "dp/result.hpp"

namespace dp::rdv {

struct ProtocolRange {
  uint32_t oldest = 0, newest = 0;
};

// This build's range. Defined where it is linked (protocol_version.cpp), so
// the tests link the same code as the next releases' (tests/e2e/upgrade).
ProtocolRange protocol_range();
// The range of a build whose newest version is `newest`.
ProtocolRange range_of(uint32_t newest);

// What a challenge announcing no version means: a peer of protocol 3.
inline constexpr uint32_t kUnannouncedVersion = 3;

// One side of a connection as a message names it, and the hosts an admin
// upgrades to move it: {"the step's dp-rendezvousd", "srun's host (login nodes)"}.
struct ProtocolSide {
  std::string name, hosts;
};

// The step's daemon, as the daemon and the node agents name it.
inline ProtocolSide daemon_side() {
  return {"the step's dp-rendezvousd", "slurm-dp on srun's host (the login nodes)"};
}

// The connecting side: the version its hello says, given the version the
// challenge announced (0: none), or Errc::protocol naming both sides' versions
// and the hosts to upgrade.
Result<uint32_t> version_to_say(ProtocolRange ours, uint32_t announced, const ProtocolSide& we,
                                const ProtocolSide& they);
// The accepting side: a hello's version it speaks, or that same refusal.
Result<void> check_said_version(ProtocolRange ours, uint32_t said, const ProtocolSide& we,
                                const ProtocolSide& they);

}  // namespace dp::rdv
