// A node's ranks' flight-recorder places on the wire (issue 57): what a node
// agent read (dp::stacks::RankFlight) as StacksAnswer.flights, and back as
// the daemon's values to judge. Capped like the stacks: a node's answer stays
// small whatever its ranks' dumps hold.
#pragma once

#include <string>

#include "dp/proto/rendezvous.pb.h"
#include "dp/stacks/flight_recorder.hpp"

namespace dp::rdv {

struct FlightCaps {
  size_t groups = 64;          // process groups per rank: more are cut
  size_t arrivals = 64;        // collectives per rank, the newest kept
  size_t text_bytes = 256;     // a group's name, its description, an op, why unread
  size_t ranks_bytes = 65536;  // a group's ranks as ranges: longer is sent as unknown
};

proto::RankFlight flight_message(const stacks::RankFlight& r, const FlightCaps& caps = {});
// Back into values; host: the node that sent it (from the node's hello).
stacks::RankFlight rank_flight(const proto::RankFlight& m, const std::string& host);

}  // namespace dp::rdv
