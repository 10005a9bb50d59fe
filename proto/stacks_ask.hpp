// The asks of StacksAsk and StacksAnswer (rendezvous.proto) that are no
// daemon's round: header-only, for the node agent's core, which links
// dp_proto alone.
#pragma once

#include <cstdint>

namespace dp::rdv {

// A node agent's unasked StacksAnswer when the step failed: its ranks as they
// were before it ended them (the daemon numbers its own asks from 1).
inline constexpr uint64_t kStacksAtFailure = 0;

}  // namespace dp::rdv
