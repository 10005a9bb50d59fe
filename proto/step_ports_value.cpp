#include "step_ports_value.hpp"
#include "dp/shown_value.hpp"
#include "dp/site_config.hpp"  // kMaxStepPorts

namespace dp::rdv {
void to_proto(const MasterFailure& f, proto::MasterFailure& out) {
  out.set_node(f.node);
  out.set_reason(f.reason);
}

MasterFailure from_proto(const proto::MasterFailure& f) {
  // Shown to users and logged.
  return MasterFailure{shown_value(f.node(), 255), shown_value(f.reason(), 1024)};
}

void to_proto(const StepPortsValue& v, proto::StepPortsValue& out) {
  out.Clear();
  if (v.failure) to_proto(*v.failure, *out.mutable_failure());
  else out.set_coordinator(static_cast<uint32_t>(v.coordinator));
  for (int p : v.dp_ports) out.add_dp_ports(static_cast<uint32_t>(p));
}

std::string encode_step_ports(const StepPortsValue& v) {
  proto::StepPortsValue m;
  to_proto(v, m);
  return m.SerializeAsString();
}

Result<StepPortsValue> from_proto(const proto::StepPortsValue& m) {
  switch (m.outcome_case()) {
    case proto::StepPortsValue::kCoordinator: {
      if (m.coordinator() < 1 || m.coordinator() > 65535 || m.dp_ports_size() > kMaxStepPorts)
        break;
      StepPortsValue v{static_cast<int>(m.coordinator())};
      for (uint32_t p : m.dp_ports()) {
        if (p < 1 || p > 65535)
          return make_error(Errc::protocol,
                            "the master node's DP_PORTS value holds a port out of range");
        v.dp_ports.push_back(static_cast<int>(p));
      }
      return v;
    }
    case proto::StepPortsValue::kFailure: return StepPortsValue{from_proto(m.failure())};
    case proto::StepPortsValue::OUTCOME_NOT_SET: break;
  }
  return make_error(Errc::protocol,
                    "the master node's ports hold no coordinator port from 1 to 65535 (with at "
                    "most " +
                        std::to_string(kMaxStepPorts) + " more) and no failure");
}

Result<StepPortsValue> decode_step_ports(std::string_view bytes) {
  proto::StepPortsValue m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return make_error(Errc::protocol, "the master node's ports are not readable");
  return from_proto(m);
}

}  // namespace dp::rdv
