// The master node's published ports (dp::StepPortsValue): the step's ports or its
// failure, typed both ways; the wire is MasterPortValue's.
#include "step_ports_value.hpp"

#include <gtest/gtest.h>

#include "dp/site_config.hpp"  // kMaxStepPorts

namespace dp::rdv {
namespace {

TEST(StepPortsValue, PortAndFailureRoundTrip) {
  auto port = decode_step_ports(encode_step_ports(StepPortsValue{29500}));
  ASSERT_TRUE(port.ok()) << port.error().message;
  EXPECT_EQ(port->coordinator, 29500);
  EXPECT_FALSE(port->failure);
  auto failed = decode_step_ports(
      encode_step_ports(MasterFailure{"n1", "no free MASTER_PORT in 29400-29402"}));
  ASSERT_TRUE(failed.ok());
  ASSERT_TRUE(failed->failure);
  const auto& f = *failed->failure;
  EXPECT_EQ(f.node, "n1");
  EXPECT_EQ(f.reason, "no free MASTER_PORT in 29400-29402");
  EXPECT_EQ(master_failure_text(f),
            "the master node could not set up the step: node n1: no free MASTER_PORT in "
            "29400-29402");
}

TEST(StepPortsValue, WhatIsNotAPortOrAFailureIsRefused) {
  EXPECT_FALSE(decode_step_ports("29500").ok());  // the old text form
  EXPECT_FALSE(decode_step_ports("").ok());       // neither
  proto::StepPortsValue zero;
  zero.set_coordinator(0);
  EXPECT_FALSE(decode_step_ports(zero.SerializeAsString()).ok());
  proto::StepPortsValue big;
  big.set_coordinator(70000);
  EXPECT_FALSE(decode_step_ports(big.SerializeAsString()).ok());
}

TEST(StepPortsValue, TheStepsPortsTravelWithTheCoordinator) {
  StepPortsValue v{29500};
  v.dp_ports = {29501, 29502, 29503};
  auto back = decode_step_ports(encode_step_ports(v));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->coordinator, 29500);
  EXPECT_EQ(back->dp_ports, (std::vector<int>{29501, 29502, 29503}));
  proto::StepPortsValue bad;
  bad.set_coordinator(29500);
  bad.add_dp_ports(0);
  EXPECT_FALSE(decode_step_ports(bad.SerializeAsString()).ok());
  proto::StepPortsValue many;
  many.set_coordinator(29500);
  for (int i = 0; i <= kMaxStepPorts; ++i) many.add_dp_ports(30000 + static_cast<uint32_t>(i));
  EXPECT_FALSE(decode_step_ports(many.SerializeAsString()).ok());
}

// The wire carries field numbers, not names: these bytes were the value's
// before its fields were renamed, and stay so (an agent of one build
// publishes, another's fetches).
TEST(StepPortsValue, TheWireIsTheFieldNumbers) {
  StepPortsValue v{29500};
  v.dp_ports = {29501, 29502};
  // coordinator (was port) = 1 (varint 29500), dp_ports = 3 (packed: 29501, 29502).
  const std::string wire("\x08\xbc\xe6\x01\x1a\x06\xbd\xe6\x01\xbe\xe6\x01", 12);
  EXPECT_EQ(encode_step_ports(v), wire);
  auto back = decode_step_ports(wire);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->dp_ports, (std::vector<int>{29501, 29502}));
}

TEST(StepPortsValue, FailureTextsArePrintableAndBounded) {
  proto::MasterFailure p;
  p.set_node("n\x1b[31m1");
  p.set_reason(std::string(5000, 'x') + "\n");
  const MasterFailure f = from_proto(p);
  EXPECT_EQ(f.node, "n\\x1b[31m1");
  EXPECT_EQ(f.reason, std::string(1024, 'x') + "...(5001 bytes)");
}

}  // namespace
}  // namespace dp::rdv
