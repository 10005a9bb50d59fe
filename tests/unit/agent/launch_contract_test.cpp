#include "launch_contract.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "agent_core.hpp"
#include "rendezvous_client.hpp"

namespace dp::agent {
namespace {

TEST(LaunchContract, SettingsRoundTrip) {
  AgentSettings s;
  s.addr = "10.0.0.1:4242";
  s.secret = "abcd";
  s.host = "n1";
  s.job = 7;
  s.step = 2;
  s.world_size = 8;
  s.ranks = {6, 4};
  s.master = PortsRole::publish;
  s.published = MasterFailure{"n1", "no free port: widen ports= (29400-29402)"};
  s.port_wait = std::chrono::milliseconds(1500);
  s.kill_grace = std::chrono::milliseconds(2500);
  EXPECT_EQ(s.heartbeat_timeout, std::chrono::seconds(site_defaults().heartbeat_timeout_s));
  s.heartbeat_timeout = std::chrono::milliseconds(30'000);
  s.on_failure = OnFailure::keep;
  s.watch_workers = true;
  s.serve_store = true;
  s.held_ports = {29401, 29400};
  auto back = parse_settings(format_settings(s));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->held_ports, (std::vector<int>{29401, 29400})) << "the order names descriptors";
  EXPECT_EQ(back->addr, s.addr);
  EXPECT_EQ(back->ranks, (std::vector<int32_t>{4, 6}));
  EXPECT_EQ(back->master, PortsRole::publish);
  const auto& f = back->published.failure.value();
  EXPECT_EQ(f.node, "n1");
  EXPECT_EQ(f.reason, "no free port: widen ports= (29400-29402)");
  EXPECT_EQ(back->port_wait.count(), 1500);
  EXPECT_EQ(back->kill_grace.count(), 2500);
  EXPECT_EQ(back->heartbeat_timeout.count(), 30'000);
  EXPECT_EQ(back->on_failure, OnFailure::keep);
  EXPECT_TRUE(back->watch_workers);
  EXPECT_TRUE(back->serve_store);
  EXPECT_EQ(back->job, 7u);
  s.published = 29501;
  s.published.dp_ports = {29502, 29503};
  auto port = parse_settings(format_settings(s));
  ASSERT_TRUE(port) << port.error().message;
  EXPECT_EQ(port->published.coordinator, 29501);
  EXPECT_EQ(port->published.dp_ports, (std::vector<int>{29502, 29503}));
  EXPECT_FALSE(port->published.failure);
  EXPECT_FALSE(
      parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=2\nranks=0\nmaster=publish\nmaster_port=1\n"
                     "dp_ports=1,0\n\n"));
}

// One bound for every watch on a link's silence: the site table's
// heartbeat_timeout, never a literal of the agent's or the client's own.
TEST(LaunchContract, EveryLinkSilenceDefaultsToTheSiteTablesBound) {
  const std::chrono::milliseconds bound = std::chrono::seconds(site_defaults().heartbeat_timeout_s);
  EXPECT_EQ(bound.count(), 60'000);
  EXPECT_EQ(AgentSettings{}.heartbeat_timeout, bound);
  EXPECT_EQ(AgentConfig{}.daemon_silence, bound);
  // The doubt (a reconnect, nothing ended) comes well before the bound.
  EXPECT_LT(AgentConfig{}.doubt_after, bound / 2);
  EXPECT_EQ(ClientOptions{}.daemon_silence_limit.count(), param_spec(Param::rdv_silence_ms).def);
  auto zero =
      parse_settings("addr=h:1\nsecret=s\nhost=n1\nworld=1\nranks=0\nheartbeat_timeout_ms=0\n\n");
  ASSERT_TRUE(zero) << zero.error().message;
  EXPECT_EQ(zero->heartbeat_timeout.count(), 0);  // the site's 0: no bound
  EXPECT_FALSE(
      parse_settings("addr=h:1\nsecret=s\nhost=n1\nworld=1\nranks=0\nheartbeat_timeout_ms=x\n\n"));
}

TEST(LaunchContract, ATaskStartRoundTripsAndBadLinesAreNoStart) {
  const TaskStart t{3, 4242, 123456789012ull};
  auto back = parse_task_start(format_task_start(t).substr(0, format_task_start(t).size() - 1));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->start_ticks, 123456789012ull);
  EXPECT_FALSE(parse_task_start("rank 3 pid 1 start 5"));  // init is never a task
  EXPECT_FALSE(parse_task_start("rank 3 pid 42"));
  EXPECT_FALSE(parse_task_start("rank 3 exited status 0"));
  EXPECT_FALSE(parse_task_exit("rank 3 pid 42 start 7"));
}

TEST(LaunchContract, StartTicksAreThoseOfProcStat) {
  auto mine = read_start_ticks(getpid());
  ASSERT_TRUE(mine);
  EXPECT_EQ(read_start_ticks(getpid()), mine);  // the same process, the same start
  EXPECT_FALSE(read_start_ticks(0));
}

TEST(LaunchContract, SettingsRefuseBadInput) {
  EXPECT_FALSE(
      parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=1\nranks=0\non_failure=maybe\n\n"));
  EXPECT_FALSE(parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=1\nranks=0\nworkers=all\n\n"));
  EXPECT_FALSE(parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=1\nranks=0\nheld_ports=1,1\n\n"));
  EXPECT_FALSE(parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=1\nranks=0\nheld_ports=0\n\n"));
  EXPECT_FALSE(parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=2\nranks=2\n\n"));
  EXPECT_FALSE(parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=2\nranks=1,1\n\n"));
  EXPECT_FALSE(parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=2\nranks=0\nbogus=1\n\n"));
  EXPECT_FALSE(parse_settings("addr=a:1\nsecret=s\nworld=2\nranks=0\n\n"));
  EXPECT_TRUE(parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=2\nranks=0,1\n\n"));
  // The master node publishes a port or a failure, never nothing.
  EXPECT_FALSE(parse_settings("addr=a:1\nsecret=s\nhost=h\nworld=2\nranks=0\nmaster=publish\n\n"));
  EXPECT_FALSE(parse_settings(
      "addr=a:1\nsecret=s\nhost=h\nworld=2\nranks=0\nmaster=publish\nmaster_port=0\n\n"));
}

TEST(LaunchContract, RootValidatesTheAnswer) {
  auto ok = parse_answer("READY 29500 @slurm-dp-7.2-00ff");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->port, 29500);
  EXPECT_EQ(ok->socket, "@slurm-dp-7.2-00ff");
  EXPECT_FALSE(parse_answer("READY 70000 @x"));
  EXPECT_FALSE(parse_answer("READY 1 @bad/name"));
  EXPECT_FALSE(parse_answer("READY 1 noat"));
  EXPECT_FALSE(parse_answer("READY 1 @" + std::string(200, 'a')));
  EXPECT_EQ(ok->store_port, 0);
  auto store = parse_answer("READY 0 @slurm-dp-7.2-00ff store=41234");
  ASSERT_TRUE(store);
  EXPECT_EQ(store->store_port, 41234);
  EXPECT_EQ(store->socket, "@slurm-dp-7.2-00ff");
  AgentAnswer a;
  a.socket = "@s";
  a.store_port = 5;
  EXPECT_EQ(parse_answer(format_answer(a).substr(0, format_answer(a).size() - 1))->store_port, 5);
  EXPECT_FALSE(parse_answer("READY 0 @s store=0"));
  EXPECT_FALSE(parse_answer("READY 0 @s store=99999"));
  EXPECT_FALSE(parse_answer("READY 0 @s store=1 extra"));
  // The step's --dp-ports, fetched from the master node.
  a.port = 29500;
  a.dp_ports = {29501, 29502};
  auto ports = parse_answer(format_answer(a).substr(0, format_answer(a).size() - 1));
  ASSERT_TRUE(ports);
  EXPECT_EQ(ports->dp_ports, (std::vector<int>{29501, 29502}));
  EXPECT_EQ(ports->store_port, 5);
  EXPECT_EQ(ports->socket, "@s");
  EXPECT_FALSE(parse_answer("READY 1 @s dp_ports=1,70000"));
  EXPECT_FALSE(parse_answer("READY 1 @s dp_ports="));
  auto refused = parse_answer("ERROR cannot reach the step's daemon");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->refusal, "cannot reach the step's daemon");
  EXPECT_EQ(format_answer(*refused), "ERROR cannot reach the step's daemon\n");
  EXPECT_FALSE(parse_answer("ERROR "));  // a refusal says why
}

// The NCCL ranks' flight-recorder folder and RAS port (issue 57): an absolute
// path of plain characters, a port in range.
TEST(LaunchContract, TheFlightFolderAndRasPortTravelInTheAnswer) {
  AgentAnswer a;
  a.socket = "@s";
  a.store_port = 5;
  a.dp_ports = {29501};
  a.port = 29500;
  a.ras_port = 40123;
  a.flight_dir = "/tmp/slurm-dp-fr.7.0.Ab3_x-";
  const std::string line = format_answer(a);
  EXPECT_EQ(line,
            "READY 29500 @s store=5 dp_ports=29501 ras=40123 fr=/tmp/slurm-dp-fr.7.0.Ab3_x-\n");
  auto back = parse_answer(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->ras_port, 40123);
  EXPECT_EQ(back->flight_dir, "/tmp/slurm-dp-fr.7.0.Ab3_x-");
  EXPECT_EQ(back->dp_ports, std::vector<int>{29501});
  EXPECT_EQ(back->store_port, 5);
  auto plain = parse_answer("READY 0 @s");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->ras_port, 0);
  EXPECT_TRUE(plain->flight_dir.empty());
  for (const char* bad :
       {"READY 0 @s fr=relative", "READY 0 @s fr=/a b", "READY 0 @s fr=/a/../etc",
        "READY 0 @s fr=", "READY 0 @s ras=0", "READY 0 @s ras=70000", "READY 0 @s fr=/a;rm"})
    EXPECT_FALSE(parse_answer(bad)) << bad;
}

TEST(LaunchContract, TheMasterNodesFailureIsAField) {
  AgentAnswer a;
  a.master_failure = MasterFailure{"n1", "no free MASTER_PORT in 29400-29402; widen ports="};
  const std::string line = format_answer(a);
  EXPECT_EQ(line, "MASTER_FAILED n1 no free MASTER_PORT in 29400-29402; widen ports=\n");
  auto back = parse_answer(line.substr(0, line.size() - 1));
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_TRUE(back->master_failure);
  EXPECT_EQ(back->master_failure->node, "n1");
  EXPECT_EQ(back->master_failure->reason, a.master_failure->reason);
  EXPECT_FALSE(parse_answer("MASTER_FAILED n1"));         // no reason
  EXPECT_FALSE(parse_answer("MASTER_FAILED n1 bell\a"));  // not printable
}

TEST(LaunchContract, TaskExitLines) {
  auto e = parse_task_exit("rank 3 exited status 9");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->first, 3);
  EXPECT_EQ(e->second, 9);
  EXPECT_EQ(format_task_exit(3, 9), "rank 3 exited status 9\n");
  EXPECT_FALSE(parse_task_exit("rank -1 exited status 9"));
  EXPECT_FALSE(parse_task_exit("rank 1 exited status x"));
}

}  // namespace
}  // namespace dp::agent
