// The inventory of what slurmstepd's root reads from the job's environment
// (packaging/admin/security.md, "What root reads from the job's environment"), one
// test per entry, each with a hostile value: root does with it only what the
// user could do without slurm-dp, or refuses it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dp/env_names.hpp"
#include "dp/layout.hpp"
#include "dp/options.hpp"
#include "dp/slurm_reservation.hpp"
#include "dp/step_ports.hpp"
#include "job_environment.hpp"
#include "launch_contract.hpp"

namespace {

using dp::spank::JobEnvironment;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

dp::SiteConfig site() {
  auto s = dp::parse_site_config({});
  EXPECT_TRUE(s.ok());
  return *s;
}

// The section of the admin guide's security page that lists what root reads.
std::string admin_inventory() {
  std::ifstream in(DP_ADMIN_MD);
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  const size_t at = text.find("## What root reads from the job's environment");
  if (at == std::string::npos) return {};
  return text.substr(at, text.find("\n## ", at + 1) - at);
}

// Every variable read_job_environment asks for is the inventory's, and
// the security page's section names each: adding a read without its entry fails here.
TEST(RootReads, TheInventoryIsEveryVariableRootReadsAndAdminMdNamesEach) {
  std::vector<std::string> asked;
  dp::spank::read_job_environment([&](const char* name) {
    asked.emplace_back(name);
    return std::optional<std::string>();
  });
  const auto& inventory = dp::spank::root_read_variables();
  ASSERT_EQ(asked.size(), inventory.size());
  const std::string doc = admin_inventory();
  ASSERT_FALSE(doc.empty()) << DP_ADMIN_MD
                            << " has no section \"What root reads from the job's environment\"";
  for (size_t i = 0; i < asked.size(); ++i) {
    EXPECT_EQ(asked[i], inventory[i]);
    EXPECT_TRUE(has(doc, "`" + asked[i] + "`"))
        << asked[i] << " is not in " << DP_ADMIN_MD << "'s inventory";
  }
}

// DP_OPTIONS: parsed strictly by the options table; it shapes only the
// user's own step, its ports capped by the site, and names no privileged
// port (--dp-master-port is the user's own bind, 1024 and up).
TEST(RootReads, OptionsAreParsedStrictlyAndCappedBySite) {
  for (const char* bad :
       {"--dp-world=auto\n--dp-ports=1", "--dp-ports=65", "--dp-master-port=22",
        "--dp-master-port=1023", "--dp-world=auto --dp-nothing=1", "--dp-world=\x1b[2J"}) {
    auto o = dp::parse_node_options(bad, dp::env::kOptions);
    EXPECT_FALSE(o.ok()) << bad;
    if (!o.ok()) {
      for (char c : o.error().message) EXPECT_TRUE(c >= 0x20 && c <= 0x7e) << o.error().message;
    }
  }
  EXPECT_FALSE(dp::parse_node_options(std::string(100'000, 'x'), dp::env::kOptions).ok());
  // Within the option's own bound, beyond the site's: the plan refuses it.
  auto many = dp::parse_node_options("--dp-world=auto --dp-ports=64", dp::env::kOptions);
  ASSERT_TRUE(many.ok()) << many.error().message;
  dp::StepFacts f;
  f.shape = dp::StepShape{{"n1"}, {{0}}};
  f.options = *many;
  f.site = site();
  auto plan = dp::plan_layout(f);
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(has(plan.error().message, "max_ports")) << plan.error().message;
}

// DP_JOB_ID, DP_STEP_ID: compared with Slurm's ids, never acted on; a
// mismatch fails only the user's own tasks.
TEST(RootReads, SrunsIdsAreOnlyCompared) {
  JobEnvironment e;
  e.options = "--dp-world=auto";
  e.job_id = "7";
  e.step_id = "0";
  EXPECT_TRUE(dp::spank::check_srun_prepared(e, 7, 0).ok());
  for (auto [job, step] : std::vector<std::pair<const char*, const char*>>{
           {"7 ", "0"}, {"07", "0"}, {"7", "0\n"}, {"6", "0"}, {"7", "1"}, {"", ""}}) {
    e.job_id = job;
    e.step_id = step;
    EXPECT_FALSE(dp::spank::check_srun_prepared(e, 7, 0).ok()) << job << "." << step;
  }
  e.job_id = "7";
  e.step_id = "0";
  e.options.reset();
  EXPECT_FALSE(dp::spank::check_srun_prepared(e, 7, 0).ok()) << "no DP_OPTIONS";
}

// DP_RDV_ADDR, DP_RDV_SECRET: handed over the pipe to the node agent (the
// job's user), one line each: a newline cannot add a setting (the held
// ports' descriptors, the agent's role).
TEST(RootReads, DaemonAddressAndSecretReachTheAgentAsOneSettingEach) {
  dp::agent::AgentSettings s;
  s.addr = "10.0.0.1:1\nheld_ports=29400";
  s.secret = "00\nmaster=publish\nmaster_port=22";
  s.host = "n1";
  s.world_size = 1;
  s.ranks = {0};
  auto back = dp::agent::parse_settings(dp::agent::format_settings(s));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->addr, "10.0.0.1:1 held_ports=29400");
  EXPECT_EQ(back->secret, "00 master=publish master_port=22");
  EXPECT_TRUE(back->held_ports.empty());
  EXPECT_EQ(back->master, dp::PortsRole::none);
}

// MASTER_ADDR: set again in the user's own tasks, as srun wrote it; it
// reaches no other variable than MASTER_ADDR, a per-node launcher's
// PET_MASTER_ADDR and JAX's coordinator address.
TEST(RootReads, MasterAddrGoesOnlyToTheUsersTasks) {
  dp::StepFacts f;
  f.shape = dp::StepShape{{"n1"}, {{0}}};
  f.options = *dp::parse_node_options("--dp-world=auto", dp::env::kOptions);
  f.site = site();
  auto plan = dp::plan_layout(f);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto tiles = dp::task_tiles(*plan, f.site, 0, {});
  ASSERT_TRUE(tiles.ok());
  const std::string hostile = "evil\nLD_PRELOAD=/tmp/x.so";
  auto env = dp::whole_task_environment(*plan, f.site, dp::TaskPlace{0, 0, 1, 0}, *tiles,
                                        {hostile, "29500", "29500", ""});
  ASSERT_TRUE(env.ok()) << env.error().message;
  for (const auto& [name, value] : *env) {
    EXPECT_NE(name, "LD_PRELOAD");
    if (has(value, "evil")) {
      EXPECT_TRUE(name == dp::env::kMasterAddr || name == "PET_MASTER_ADDR" ||
                  name == dp::env::kJaxCoordinatorAddress)
          << name;
    }
  }
}

// CUDA_VISIBLE_DEVICES, ZE_AFFINITY_MASK: only narrow the user's own tasks'
// masks (Slurm's device cgroup, not the mask, confines devices): a hostile
// list is refused naming the variable, or every mask is drawn from it.
TEST(RootReads, DeviceListsOnlyNarrowTheUsersOwnMasks) {
  auto ok = dp::parse_site_config({"kind=cuda"});
  ASSERT_TRUE(ok.ok());
  for (const char* hostile : {"0,1\n2", "\x1b[2J", "0,0,0", "-1", "99999999999999999999", ",,,",
                              "GPU-../../etc/passwd"}) {
    dp::StepFacts f;
    f.shape = dp::StepShape{{"n1"}, {{0, 1}}};
    f.options = *dp::parse_node_options("--dp-world=auto --dp-tiles=1", dp::env::kOptions);
    f.site = *ok;
    f.nodes = {dp::NodeDevices{std::nullopt, dp::VisibleDevices{hostile, std::nullopt}}};
    auto plan = dp::plan_layout(f);
    if (!plan.ok()) continue;  // refused: the node's tasks fail naming it
    auto tiles = dp::task_tiles(*plan, f.site, 0, {});
    if (!tiles.ok()) continue;
    for (const auto& entry : tiles->entries)
      EXPECT_TRUE(has(hostile, entry)) << "'" << entry << "' is not in '" << hostile << "'";
  }
}

// DP_SKIP_STEP, SLURM_HET_SIZE, SLURM_EXIT_ERROR: only ever make root do
// less (the user's own tasks end before their program), with a status 0..255.
TEST(RootReads, TheSkipMarkerOnlyEndsTheUsersOwnTasks) {
  JobEnvironment e;
  for (const char* hostile :
       {"7.0:256", "7.0:-1", "7.0:0\n", "7.1:0", "6.0:0", "7.0:", "7.0:1x", "x", ""}) {
    e.skip_step = hostile;
    EXPECT_FALSE(dp::spank::skipped_status(e, 7, 0)) << hostile;
  }
  e.skip_step = "7.0:3";
  EXPECT_EQ(dp::spank::skipped_status(e, 7, 0), 3);
  e.skip_step.reset();
  e.het_size = "\x1b";
  for (const char* status : {"999", "-1", "0", "abc", ""}) {
    e.exit_error = status;
    EXPECT_EQ(dp::spank::skipped_status(e, 7, 0), 1) << status;
  }
  e.exit_error = "42";
  EXPECT_EQ(dp::spank::skipped_status(e, 7, 0), 42);
}

// SLURM_STEP_RESV_PORTS: only compared with what slurmctld recorded for the
// step; never bound unless Slurm reserved it, never privileged.
TEST(RootReads, ReservedPortsAreSlurmsOrRefused) {
  for (const std::string& hostile :
       std::vector<std::string>{"879", "1-65535", "22,12000", "12000-12001", "12000\n111", "999999",
                                std::string(10'000, '1')}) {
    dp::ReservationSources s;
    s.job_env = hostile;
    s.slurmctld = "";  // Slurm reserved none for this step
    const auto r = dp::slurm_reservation(s);
    EXPECT_EQ(r.ports, "") << hostile.substr(0, 64);
    EXPECT_TRUE(has(r.refusal, "SLURM_STEP_RESV_PORTS=")) << r.refusal;
    EXPECT_LT(r.refusal.size(), 1000u);
  }
}

}  // namespace
