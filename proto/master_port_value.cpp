#include "master_port_value.hpp"
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

std::string encode_master_port(const MasterPortValue& v) {
  proto::MasterPortValue m;
  if (v.failure) to_proto(*v.failure, *m.mutable_failure());
  else m.set_port(static_cast<uint32_t>(v.port));
  for (int p : v.dp_ports) m.add_dp_ports(static_cast<uint32_t>(p));
  return m.SerializeAsString();
}

Result<MasterPortValue> decode_master_port(std::string_view bytes) {
  proto::MasterPortValue m;
  if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return make_error(Errc::protocol, "the master node's MASTER_PORT value is not readable");
  switch (m.outcome_case()) {
    case proto::MasterPortValue::kPort: {
      if (m.port() < 1 || m.port() > 65535 || m.dp_ports_size() > kMaxStepPorts) break;
      MasterPortValue v{static_cast<int>(m.port())};
      for (uint32_t p : m.dp_ports()) {
        if (p < 1 || p > 65535)
          return make_error(Errc::protocol,
                            "the master node's DP_PORTS "
                            "value holds a port out of range");
        v.dp_ports.push_back(static_cast<int>(p));
      }
      return v;
    }
    case proto::MasterPortValue::kFailure: return MasterPortValue{from_proto(m.failure())};
    case proto::MasterPortValue::OUTCOME_NOT_SET: break;
  }
  return make_error(Errc::protocol,
                    "the master node's MASTER_PORT value holds no port from 1 to "
                    "65535 (with at most " +
                        std::to_string(kMaxStepPorts) + " more) and no failure");
}

}  // namespace dp::rdv
