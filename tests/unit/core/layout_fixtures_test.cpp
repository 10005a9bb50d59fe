// Replays the recorded step environments of tests/fixtures/layouts through
// the layout core, as srun (--dp-explain) and slurmstepd would: the host list
// is expanded by libslurm, the rest is the core's. Each fixture's expected
// task lines must come out exactly. The format is in tests/README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "dp/layout.hpp"
#include "host_list.hpp"

namespace {

struct Fixture {
  std::string name;
  std::vector<std::string> site, options, expected;
  std::string hosts, tasks_per_node, distribution = "block", node_gres, master_addr,
                                     master_port = "29500", refused;
  dp::VisibleDevices visible;
};

// ctest shows the parameter: the fixture's name, not its bytes.
void PrintTo(const Fixture& f, std::ostream* os) { *os << f.name; }

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
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
      f.visible.cuda = rest.substr(21);
    else if (key == "visible" && rest.rfind("ZE_AFFINITY_MASK=", 0) == 0)
      f.visible.ze = rest.substr(17);
    else if (key == "master_addr") f.master_addr = rest;
    else if (key == "master_port") f.master_port = rest;
    else if (key == "refused") f.refused = rest;
    else if (key == "task") f.expected.push_back(line);
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
  dp::StepShape shape{*hosts, dp::assign_task_ids(*counts, dist)};
  // Each node as the plugin sees it: the site's counts, else the node's gres
  // (srun), narrowed by what Slurm put in the task's environment (slurmstepd).
  dp::SiteConfig as_node = *site;
  if (site->declared_tiles_per_node() == 0 && !f.node_gres.empty())
    as_node.devices_per_node = dp::gres_count(f.node_gres, "gpu");
  auto tiles = dp::node_tiles(as_node, f.visible);
  if (!tiles) return {"refused: " + tiles.error().message};
  std::vector<int> node_counts(shape.hosts.size(), static_cast<int>(tiles->entries.size()));
  auto plan = dp::plan_step(opts, *site, shape, node_counts);
  if (!plan) return {"refused: " + plan.error().message};
  const std::string master =
      f.master_addr.empty() ? shape.hosts[static_cast<size_t>(shape.host_of(0))] : f.master_addr;
  auto tasks = dp::step_environment(*plan, *site, shape,
                                    std::vector<dp::NodeTiles>(shape.hosts.size(), *tiles), master,
                                    f.master_port);
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
