// The step's ports beyond MASTER_PORT: how many a step may ask for, Slurm's
// reservation read whole, and what every task is told (DP_PORTS, JAX's
// coordinator), for per-task and per-node launcher steps.
#include "dp/step_ports.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "dp/env_names.hpp"
#include "dp/layout.hpp"

namespace {

using Env = std::map<std::string, std::string>;

dp::SiteConfig site(std::vector<std::string> words = {}) {
  auto c = dp::parse_site_config(words);
  EXPECT_TRUE(c.ok()) << c.error().message;
  return *c;
}

dp::Options with_ports(const char* n) {
  dp::Options o;
  EXPECT_TRUE(dp::apply_option(o, "dp-world", "auto").ok());
  if (n) {
    EXPECT_TRUE(dp::apply_option(o, "dp-ports", n).ok());
  }
  return o;
}

TEST(PortsOption, OutOfItsOwnBoundIsRefusedNamingOptionAndLimit) {
  for (const char* bad : {"-1", "100000", "65", "3x", ""}) {
    dp::Options o;
    auto r = dp::apply_option(o, "dp-ports", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--dp-ports"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("from 0 to 64"), std::string::npos) << r.error().message;
  }
  dp::Options o;
  EXPECT_FALSE(dp::apply_option(o, "dp-ports", nullptr).ok());
}

TEST(PortsOption, TravelsToTheNodesInDpOptions) {
  const auto o = with_ports("3");
  const std::string text = dp::format_node_options(o);
  EXPECT_NE(text.find("--dp-ports=3"), std::string::npos) << text;
  auto back = dp::parse_node_options(text, "DP_OPTIONS");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->dp_port_count, 3);
}

TEST(PortCount, TheSiteMaximumIsTheLimit) {
  EXPECT_EQ(*dp::checked_port_count(with_ports("8"), site()), 8);  // max_ports=8 by default
  auto r = dp::checked_port_count(with_ports("9"), site());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--dp-ports=9"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("at most 8"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("max_ports"), std::string::npos) << r.error().message;
  auto none = dp::checked_port_count(with_ports("1"), site({"max_ports=0"}));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("ask for none"), std::string::npos);
  EXPECT_EQ(*dp::checked_port_count(with_ports(nullptr), site({"max_ports=0"})), 0);
}

TEST(PortCount, MoreThanTheRangeHoldsIsRefused) {
  // 4 ports in the range: MASTER_PORT and 3 more fit, 4 more do not.
  const auto s = site({"ports=30000-30003", "max_ports=16"});
  EXPECT_EQ(*dp::checked_port_count(with_ports("3"), s), 3);
  auto r = dp::checked_port_count(with_ports("4"), s);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("30000-30003 holds 4 ports"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("at most 3"), std::string::npos) << r.error().message;
  // A fixed MASTER_PORT takes no port of the range.
  auto fixed = with_ports("4");
  ASSERT_TRUE(dp::apply_option(fixed, "dp-master-port", "29500").ok());
  EXPECT_EQ(*dp::checked_port_count(fixed, s), 4);
  // port_fallback=os: the OS has ports when the range has none.
  EXPECT_EQ(*dp::checked_port_count(
                with_ports("4"), site({"ports=30000-30003", "max_ports=16", "port_fallback=os"})),
            4);
}

TEST(PortCount, ThePlanRefusesBeforeLaunch) {
  dp::StepFacts f;
  f.shape = {{"n1"}, {{0}}};
  f.options = with_ports("9");
  f.site = site();
  auto p = dp::plan_layout(f);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("--dp-ports=9"), std::string::npos);
  f.options = with_ports("2");
  p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->dp_port_count, 2);
}

TEST(ReservedPorts, RangesAndListsInOrder) {
  EXPECT_EQ(*dp::reserved_ports("12000-12003"), (std::vector<int>{12000, 12001, 12002, 12003}));
  EXPECT_EQ(*dp::reserved_ports("12005,12007-12008"), (std::vector<int>{12005, 12007, 12008}));
  EXPECT_TRUE(dp::reserved_ports("")->empty());
  for (const char* bad : {"junk", "12003-12000", "0", "70000", "1-", ",", "1-65535,1-65535"})
    EXPECT_FALSE(dp::reserved_ports(bad).ok()) << bad;
}

TEST(ReservedPorts, TheFirstIsTheCoordinatorTheNextDpPorts) {
  auto p = dp::ports_from_reservation({12000, 12001, 12002, 12003}, 2, "12000-12003");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->coordinator, 12000);
  EXPECT_EQ(p->dp_ports, (std::vector<int>{12001, 12002}));
  auto few = dp::ports_from_reservation({12000, 12001}, 3, "12000-12001");
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.error().message.find("--resv-ports=4"), std::string::npos) << few.error().message;
  EXPECT_NE(few.error().message.find("reserved 2 port(s)"), std::string::npos);
}

TEST(PortsText, RoundTripsAndRefusesAnythingElse) {
  EXPECT_EQ(dp::ports_text({29401, 29402, 29403}), "29401,29402,29403");
  EXPECT_EQ(*dp::parse_ports_text("29401,29402,29403", "DP_PORTS"),
            (std::vector<int>{29401, 29402, 29403}));
  EXPECT_TRUE(dp::parse_ports_text("", "DP_PORTS")->empty());
  for (const char* bad : {"1,,2", "0", "65536", "1,x", ","})
    EXPECT_FALSE(dp::parse_ports_text(bad, "ports").ok()) << bad;
  std::string many;
  for (int i = 0; i <= dp::kMaxStepPorts; ++i) many += (i ? "," : "") + std::to_string(1000 + i);
  EXPECT_FALSE(dp::parse_ports_text(many, "ports").ok());
}

Env env_of(const dp::EnvList& l) { return Env(l.begin(), l.end()); }

TEST(PortsEnvironment, EveryTaskOfAPerTaskStepGetsTheSamePorts) {
  const auto s = site();
  const dp::StepShape sh{{"n1", "n2"}, {{0, 1}, {2, 3}}};
  dp::StepFacts f;
  f.shape = sh;
  f.options = with_ports("3");
  f.site = s;
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok());
  auto tasks = dp::step_environment(*p, s, sh, "10.0.0.1", "29400", "29401,29402,29403");
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 4u);
  for (const auto& t : *tasks) {
    const Env e = env_of(t.env);
    EXPECT_EQ(e.at(dp::env::kPorts), "29401,29402,29403") << t.rank;
    EXPECT_EQ(e.at(dp::env::kJaxCoordinatorAddress), "10.0.0.1:29400") << t.rank;
  }
}

TEST(PortsEnvironment, APerNodeLauncherAndItsWorkersGetThemToo) {
  const auto s = site();
  const dp::StepShape sh{{"n1", "n2"}, {{0}, {1}}};
  dp::StepFacts f;
  f.shape = sh;
  f.options = with_ports("1");
  f.site = s;
  f.command = {"torchrun", "--nproc-per-node=2", "train.py"};
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_FALSE(p->launch.launcher.empty());
  auto tasks = dp::step_environment(*p, s, sh, "n1", "29400", "29401");
  ASSERT_TRUE(tasks.ok());
  for (const auto& t : *tasks) {
    const Env e = env_of(t.env);
    EXPECT_EQ(e.at(dp::env::kPorts), "29401");
    EXPECT_EQ(e.at(dp::env::kJaxCoordinatorAddress), "n1:29400");
  }
}

TEST(PortsEnvironment, NoDpPortsWithoutTheOption) {
  const Env e = env_of(dp::ports_environment("10.0.0.1", "29400", ""));
  EXPECT_EQ(e.count(dp::env::kPorts), 0u);
  EXPECT_EQ(e.at(dp::env::kJaxCoordinatorAddress), "10.0.0.1:29400");
}

}  // namespace

// How long each port is held: --dp-master-socket's word, else to rank 0's
// start, but for the coordinator port of a step whose store the node agents
// serve (JAX's alone, a gRPC server): until the program listens.
TEST(PortHold, EachPortByTheOptionOrItsClass) {
  using dp::PortHold;
  using dp::StepPort;
  dp::Options o;
  EXPECT_EQ(dp::port_hold(StepPort::coordinator, o, false), PortHold::to_exec) << "TCPStore";
  EXPECT_EQ(dp::port_hold(StepPort::dp_port, o, false), PortHold::to_exec)
      << "Ray, etcd: no REUSEPORT";
  EXPECT_EQ(dp::port_hold(StepPort::coordinator, o, true), PortHold::to_listen) << "JAX's own";
  EXPECT_EQ(dp::port_hold(StepPort::dp_port, o, true), PortHold::to_exec);
  o.master_socket = dp::MasterSocket::share;
  EXPECT_EQ(dp::port_hold(StepPort::coordinator, o, false), PortHold::to_listen);
  EXPECT_EQ(dp::port_hold(StepPort::dp_port, o, false), PortHold::to_listen);
  o.master_socket = dp::MasterSocket::close;
  EXPECT_EQ(dp::port_hold(StepPort::coordinator, o, true), PortHold::to_exec) << "asked: close";
  o.master_socket = dp::MasterSocket::pass;
  EXPECT_EQ(dp::port_hold(StepPort::dp_port, o, false), PortHold::passed);
}

// Who publishes, fetches or knows the step's ports, from plain facts: the
// decision slurmstepd used to make inline.
namespace {

dp::Options fixed_port(int port, const char* dp_ports) {
  dp::Options o = with_ports(dp_ports);
  o.master_port = port;
  return o;
}

}  // namespace

TEST(NodePorts, TheMasterNodeAlwaysTakesAndPublishes) {
  const auto s = site();
  for (int nodes : {1, 3}) {
    auto part =
        dp::node_ports(dp::known_ports(with_ports(nullptr), s, std::nullopt, 0), true, nodes, 0);
    EXPECT_EQ(part.role, dp::PortsRole::publish) << nodes;
    EXPECT_TRUE(part.take);
    EXPECT_FALSE(part.known);
  }
  // Its refusal (a reservation too small) is published, nothing taken.
  auto small = dp::known_ports(with_ports("3"), s, std::string("12000-12001"), 3);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("--resv-ports=4"), std::string::npos);
  auto part = dp::node_ports(small, true, 2, 3);
  EXPECT_EQ(part.role, dp::PortsRole::publish);
  EXPECT_FALSE(part.take);
  EXPECT_EQ(dp::node_ports(small, false, 2, 3).role, dp::PortsRole::none) << "fails on its own";
}

TEST(NodePorts, AnotherNodeFetchesSlurmsReservationAndKnowsAFixedPortAlone) {
  const auto s = site();
  auto resv = dp::known_ports(with_ports("2"), s, std::string("12000-12002"), 2);
  ASSERT_TRUE(resv.ok()) << resv.error().message;
  ASSERT_TRUE(resv->reserved);
  EXPECT_EQ(resv->reserved->coordinator, 12000);
  EXPECT_EQ(resv->reserved->dp_ports, (std::vector<int>{12001, 12002}));
  // The master node checks the reservation against slurmctld; another node
  // takes what it published.
  auto part = dp::node_ports(resv, false, 2, 2);
  EXPECT_EQ(part.role, dp::PortsRole::fetch);
  EXPECT_FALSE(part.known);
  auto fixed = dp::known_ports(fixed_port(29500, nullptr), s, std::string("12000-12002"), 0);
  ASSERT_TRUE(fixed.ok());
  EXPECT_FALSE(fixed->reserved) << "--dp-master-port wins over Slurm's reservation";
  part = dp::node_ports(fixed, false, 2, 0);
  EXPECT_EQ(part.role, dp::PortsRole::none);
  ASSERT_TRUE(part.known);
  EXPECT_EQ(part.known->coordinator, 29500);
  EXPECT_TRUE(part.known->dp_ports.empty());
}

TEST(NodePorts, AnotherNodeFetchesLeasedPortsAndAFixedPortsDpPorts) {
  const auto s = site();
  auto leased = dp::known_ports(with_ports(nullptr), s, std::nullopt, 0);
  ASSERT_TRUE(leased.ok());
  EXPECT_EQ(dp::node_ports(leased, false, 2, 0).role, dp::PortsRole::fetch);
  auto fixed = dp::known_ports(fixed_port(29500, "2"), s, std::nullopt, 2);
  ASSERT_TRUE(fixed.ok());
  auto part = dp::node_ports(fixed, false, 2, 2);
  EXPECT_EQ(part.role, dp::PortsRole::fetch) << "the --dp-ports are leased on the master node";
  EXPECT_FALSE(part.known);
  // resv_ports=ignore: Slurm's reservation is not the step's.
  auto ignored = dp::known_ports(with_ports(nullptr), site({"resv_ports=ignore"}),
                                 std::string("12000-12002"), 0);
  ASSERT_TRUE(ignored.ok());
  EXPECT_FALSE(ignored->reserved);
  EXPECT_EQ(dp::node_ports(ignored, false, 2, 0).role, dp::PortsRole::fetch);
  EXPECT_FALSE(dp::known_ports(with_ports(nullptr), s, std::string("12000-x"), 0).ok());
}

// The task's whole environment: what slurmstepd sets, nothing added after.
TEST(WholeTaskEnvironment, MasterPortsAndDpPortsInOneList) {
  const auto s = site();
  dp::StepFacts f;
  f.shape = dp::StepShape{{"n1"}, {{0, 1}}};
  f.options = with_ports("2");
  f.site = s;
  auto p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto tiles = dp::task_tiles(*p, s, 0, {});
  ASSERT_TRUE(tiles.ok());
  const dp::TaskPlace place{1, 1, 2, 0};
  auto env = dp::whole_task_environment(*p, s, place, *tiles,
                                        {"10.0.0.1", "29500", "29500", "29501,29502"});
  ASSERT_TRUE(env.ok()) << env.error().message;
  const Env e = env_of(*env);
  EXPECT_EQ(e.at(dp::env::kRank), "1");
  EXPECT_EQ(e.at(dp::env::kMasterAddr), "10.0.0.1");
  EXPECT_EQ(e.at(dp::env::kMasterPort), "29500");
  EXPECT_EQ(e.at(dp::env::kPorts), "29501,29502");
  EXPECT_EQ(e.at(dp::env::kJaxCoordinatorAddress), "10.0.0.1:29500");
  // The step's store: MASTER_* name the node's agent store; JAX keeps the coordinator.
  f.options.step_store = true;
  p = dp::plan_layout(f);
  ASSERT_TRUE(p.ok()) << p.error().message;
  env = dp::whole_task_environment(*p, s, place, *tiles, {"10.0.0.1", "41000", "29500", ""});
  ASSERT_TRUE(env.ok()) << env.error().message;
  const Env st = env_of(*env);
  EXPECT_EQ(st.at(dp::env::kMasterAddr), "127.0.0.1");
  EXPECT_EQ(st.at(dp::env::kMasterPort), "41000");
  EXPECT_EQ(st.at(dp::env::kJaxCoordinatorAddress), "10.0.0.1:29500");
  EXPECT_EQ(st.count(dp::env::kPorts), 0u);
}
