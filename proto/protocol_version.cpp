#include "protocol_version.hpp"

#include <algorithm>

// The release's newest version; the upgrade tests link copies of the
// daemon and the agent built with the next ones.
#ifndef DP_PROTOCOL_NEWEST
#define DP_PROTOCOL_NEWEST 3
#endif

namespace dp::rdv {
namespace {

std::string range_text(ProtocolRange r) {
  return r.oldest == r.newest
             ? "version " + std::to_string(r.newest)
             : "versions " + std::to_string(r.oldest) + "-" + std::to_string(r.newest);
}

Error too_far_apart(ProtocolRange ours, ProtocolRange theirs, const ProtocolSide& we,
                    const ProtocolSide& they, bool we_are_older) {
  const ProtocolSide& older = we_are_older ? we : they;
  const ProtocolSide& newer = we_are_older ? they : we;
  return make_error(
      Errc::protocol,
      "slurm-dp releases too far apart: " + we.name + " speaks protocol " + range_text(ours) +
          ", " + they.name + " " + range_text(theirs) + "; upgrade " + older.hosts +
          " to the release of " + newer.name +
          " (releases one protocol version apart work together: upgrade one release at a "
          "time, login hosts and compute nodes in either order)");
}

}  // namespace

ProtocolRange range_of(uint32_t newest) {
  // Protocol 3 is the first that announces; a release speaks nothing before it.
  if (newest <= kUnannouncedVersion) return {newest, newest};
  return {std::max(kUnannouncedVersion, newest - 1), newest};
}

ProtocolRange protocol_range() { return range_of(DP_PROTOCOL_NEWEST); }

Result<uint32_t> version_to_say(ProtocolRange ours, uint32_t announced, const ProtocolSide& we,
                                const ProtocolSide& they) {
  const uint32_t theirs = announced != 0 ? announced : kUnannouncedVersion;
  const uint32_t say = std::min(ours.newest, theirs);
  if (say < ours.oldest) return too_far_apart(ours, range_of(theirs), we, they, false);
  return say;
}

Result<void> check_said_version(ProtocolRange ours, uint32_t said, const ProtocolSide& we,
                                const ProtocolSide& they) {
  if (said >= ours.oldest && said <= ours.newest) return {};
  // A hello says the connector's newest version unless ours is older.
  return too_far_apart(ours, range_of(said), we, they, said > ours.newest);
}

}  // namespace dp::rdv
