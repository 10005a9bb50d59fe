// Replays the recorded step environments of tests/fixtures/layouts through
// the layout core's one entry, as srun (--dp-explain) and slurmstepd call it:
// the host list is expanded by libslurm, the rest is the core's. Each
// fixture's expected task lines must come out exactly. The format is in
// tests/README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "dp/layout.hpp"
#include "host_list.hpp"

namespace {

struct Fixture {
  std::string name;
  std::vector<std::string> site, options, expected, command;
  std::string hosts, tasks_per_node, distribution = "block", node_gres, master_addr,
                                     master_port = "29500", refused;
  std::optional<dp::VisibleDevices> visible;
  std::optional<dp::DeviceRequest> request;
};

// ctest shows the parameter: the fixture's name, not its bytes.
void PrintTo(const Fixture& f, std::ostream* os) { *os << f.name; }

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "TresPerTask=gres:gpu:2 TresBind=gpu:per_task:2", as `scontrol show step` prints them.
dp::DeviceRequest request(const std::string& text) {
  std::string per[4];
  const char* names[4] = {"TresPerNode=", "TresPerTask=", "TresPerStep=", "TresBind="};
  for (const auto& w : words(text)) {
    bool known = false;
    for (int i = 0; i < 4; ++i)
      if (w.rfind(names[i], 0) == 0) per[i] = w.substr(std::string(names[i]).size()), known = true;
    if (!known) ADD_FAILURE() << "request: unknown word '" << w << "'";
  }
  return dp::parse_device_request(per[0], per[1], per[2], per[3]);
}

Fixture load(const std::filesystem::path& path) {
  Fixture f;
  f.name = path.stem().string();
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "site") f.site = words(rest);
    else if (key == "options") f.options = words(rest);
    else if (key == "hosts") f.hosts = rest;
    else if (key == "tasks_per_node") f.tasks_per_node = rest;
    else if (key == "distribution") f.distribution = rest;
    else if (key == "node_gres") f.node_gres = rest;
    else if (key == "visible" && rest.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0)
      f.visible = dp::VisibleDevices{rest.substr(21), {}};
    else if (key == "visible" && rest.rfind("ZE_AFFINITY_MASK=", 0) == 0)
      f.visible = dp::VisibleDevices{{}, rest.substr(17)};
    else if (key == "request") f.request = request(rest);
    else if (key == "master_addr") f.master_addr = rest;
    else if (key == "master_port") f.master_port = rest;
    else if (key == "refused") f.refused = rest;
    else if (key == "command") f.command = words(rest);
    else if (key == "task" || key == "launcher") f.expected.push_back(line);
    else ADD_FAILURE() << path << ": unknown line '" << line << "'";
  }
  return f;
}

std::vector<Fixture> all_fixtures() {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(DP_LAYOUT_FIXTURES))
    if (e.path().extension() == ".txt") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<Fixture> out;
  for (const auto& p : paths) out.push_back(load(p));
  return out;
}

// What the core says about the fixture's step: the task lines, or the refusal.
std::vector<std::string> replay(const Fixture& f) {
  auto site = dp::parse_site_config(f.site);
  if (!site) return {"site: " + site.error().message};
  dp::Options opts;
  for (const auto& o : f.options) {
    const auto eq = o.find('=');
    const std::string name = o.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const std::string value = eq == std::string::npos ? "" : o.substr(eq + 1);
    auto r = dp::apply_option(opts, name, eq == std::string::npos ? nullptr : value.c_str());
    if (!r) return {"option: " + r.error().message};
  }
  auto hosts = dp::spank::expand_host_list(f.hosts.c_str());
  if (!hosts) return {"hosts: " + hosts.error().message};
  auto counts = dp::parse_tasks_per_node(f.tasks_per_node);
  if (!counts) return {"tasks_per_node: " + counts.error().message};
  const auto dist = f.distribution == "cyclic" ? dp::Distribution::cyclic : dp::Distribution::block;
  dp::StepFacts facts;
  facts.shape = dp::StepShape{*hosts, dp::assign_task_ids(*counts, dist)};
  facts.options = opts;
  facts.site = *site;
  facts.request = f.request;
  facts.command = f.command;
  // Each node as the plugin sees it: its gres (srun), or what Slurm put in
  // the task's environment (slurmstepd).
  dp::NodeDevices node;
  if (!f.node_gres.empty()) node.gres = f.node_gres;
  node.given = f.visible;
  facts.nodes.assign(facts.shape.hosts.size(), node);
  auto plan = dp::plan_layout(facts);
  if (!plan) return {"refused: " + plan.error().message};
  const auto& shape = facts.shape;
  const std::string master =
      f.master_addr.empty() ? shape.hosts[static_cast<size_t>(shape.host_of(0))] : f.master_addr;
  auto tasks = dp::step_environment(*plan, *site, shape, master, f.master_port);
  if (!tasks) return {"refused: " + tasks.error().message};
  return dp::explain_lines(*tasks);
}

class Recorded : public ::testing::TestWithParam<Fixture> {};

TEST_P(Recorded, EveryTaskGetsTheRecordedVariables) {
  const Fixture& f = GetParam();
  const auto got = replay(f);
  if (!f.refused.empty()) {
    ASSERT_EQ(got.size(), 1u) << "expected a refusal containing '" << f.refused << "'";
    EXPECT_EQ(got[0].rfind("refused: ", 0), 0u) << got[0];
    EXPECT_NE(got[0].find(f.refused), std::string::npos) << got[0];
    return;
  }
  ASSERT_FALSE(f.expected.empty()) << f.name << ": no task lines and no 'refused' line";
  ASSERT_EQ(got.size(), f.expected.size()) << (got.empty() ? "" : got[0]);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], f.expected[i]);
}

INSTANTIATE_TEST_SUITE_P(Layouts, Recorded, ::testing::ValuesIn(all_fixtures()),
                         [](const auto& info) { return info.param.name; });

TEST(Recorded, AtLeastElevenShapesAreRecorded) { EXPECT_GE(all_fixtures().size(), 11u); }

}  // namespace
