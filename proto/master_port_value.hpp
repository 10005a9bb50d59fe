// The one codec of the master node's outcome (dp::MasterPortValue): the value
// its agent publishes under kMasterPortKey, and the typed master failure that
// an abort carries. Node agents read what another user's process could have
// written only through here: ports in range, texts printable and bounded.
#pragma once

#include <string>
#include <string_view>

#include "dp/master_port.hpp"
#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"

namespace dp::rdv {

std::string encode_master_port(const MasterPortValue& v);
Result<MasterPortValue> decode_master_port(std::string_view bytes);

void to_proto(const MasterFailure& f, proto::MasterFailure& out);
MasterFailure from_proto(const proto::MasterFailure& f);

}  // namespace dp::rdv
