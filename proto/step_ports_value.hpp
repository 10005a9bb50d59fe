// The one codec of the master node's outcome (dp::StepPortsValue): the value
// its agent publishes under kStepPortsKey, and the typed master failure that
// an abort carries. Node agents read what another user's process could have
// written only through here: ports in range, texts printable and bounded.
#pragma once

#include <string>
#include <string_view>

#include "dp/master_port.hpp"
#include "dp/proto/rendezvous.pb.h"
#include "dp/result.hpp"

namespace dp::rdv {

void to_proto(const StepPortsValue& v, proto::StepPortsValue& out);
Result<StepPortsValue> from_proto(const proto::StepPortsValue& m);
std::string encode_step_ports(const StepPortsValue& v);
Result<StepPortsValue> decode_step_ports(std::string_view bytes);

void to_proto(const MasterFailure& f, proto::MasterFailure& out);
MasterFailure from_proto(const proto::MasterFailure& f);

}  // namespace dp::rdv
