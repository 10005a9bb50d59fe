#include "layout_fixture.hpp"

#include <fstream>
#include <sstream>

namespace dp::test {
namespace {

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// "TresPerTask=gres:gpu:2 TresBind=gpu:per_task:2", as `scontrol show step` prints them.
DeviceRequest request(const std::string& text, std::vector<std::string>& errors) {
  std::string per[4];
  const char* names[4] = {"TresPerNode=", "TresPerTask=", "TresPerStep=", "TresBind="};
  for (const auto& w : words(text)) {
    bool known = false;
    for (int i = 0; i < 4; ++i)
      if (w.rfind(names[i], 0) == 0) per[i] = w.substr(std::string(names[i]).size()), known = true;
    if (!known) errors.push_back("request: unknown word '" + w + "'");
  }
  return parse_device_request(per[0], per[1], per[2], per[3]);
}

void read_line(LayoutFixture& f, const std::string& key, const std::string& rest,
               const std::string& line) {
  if (key == "site") f.site = words(rest);
  else if (key == "options") f.options = words(rest);
  else if (key == "hosts") f.hosts = rest;
  else if (key == "tasks_per_node") f.tasks_per_node = rest;
  else if (key == "distribution") f.distribution = rest;
  else if (key == "node_gres") f.node_gres = rest;
  else if (key == "visible" && rest.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0)
    f.visible = VisibleDevices{rest.substr(21), {}};
  else if (key == "visible" && rest.rfind("ZE_AFFINITY_MASK=", 0) == 0)
    f.visible = VisibleDevices{{}, rest.substr(17)};
  else if (key == "request") f.request = request(rest, f.errors);
  else if (key == "devices_confined") f.devices_confined = rest == "yes";
  else if (key == "master_addr") f.master_addr = rest;
  else if (key == "master_port") f.master_port = rest;
  else if (key == "refused") f.refused = rest;
  else if (key == "hint") f.hint = rest;
  else if (key == "command") f.command = words(rest);
  else if (key == "task" || key == "launcher") f.expected.push_back(line);
  else f.errors.push_back("unknown line '" + line + "'");
}

}  // namespace

LayoutFixture load_layout_fixture(const std::filesystem::path& path) {
  LayoutFixture f;
  f.name = path.stem().string();
  std::ifstream in(path);
  if (!in) f.errors.push_back("cannot read " + path.string());
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.find(' ');
    read_line(f, line.substr(0, sp), sp == std::string::npos ? "" : line.substr(sp + 1), line);
  }
  return f;
}

LayoutReplay replay_layout_fixture(const LayoutFixture& f, const HostListExpander& expand) {
  auto site = parse_site_config(f.site);
  if (!site) return {{}, {}, "site: " + site.error().message};
  Options opts;
  for (const auto& o : f.options) {
    const auto eq = o.find('=');
    const std::string name = o.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const std::string value = eq == std::string::npos ? "" : o.substr(eq + 1);
    auto r = apply_option(opts, name, eq == std::string::npos ? nullptr : value.c_str());
    if (!r) return {{}, {}, "option: " + r.error().message};
  }
  auto hosts = expand(f.hosts);
  if (!hosts) return {{}, {}, "hosts: " + hosts.error().message};
  auto counts = parse_tasks_per_node(f.tasks_per_node);
  if (!counts) return {{}, {}, "tasks_per_node: " + counts.error().message};
  const auto dist = f.distribution == "cyclic" ? Distribution::cyclic : Distribution::block;
  StepFacts facts;
  facts.shape = StepShape{*hosts, assign_task_ids(*counts, dist)};
  facts.options = opts;
  facts.site = *site;
  facts.request = f.request;
  facts.command = f.command;
  facts.devices_confined = f.devices_confined;
  // Each node as the plugin sees it: its gres (srun), or what Slurm put in
  // the task's environment (slurmstepd).
  NodeDevices node;
  if (!f.node_gres.empty()) node.gres = f.node_gres;
  node.given = f.visible;
  facts.nodes.assign(facts.shape.hosts.size(), node);
  auto plan = plan_layout(facts);
  if (!plan) return {{}, {}, "refused: " + plan.error().message};
  const auto& shape = facts.shape;
  const std::string master =
      f.master_addr.empty() ? shape.hosts[static_cast<size_t>(shape.host_of(0))] : f.master_addr;
  auto tasks = step_environment(*plan, *site, shape, master, f.master_port);
  if (!tasks) return {{}, {}, "refused: " + tasks.error().message};
  return {explain_lines(*tasks), plan->device_hint, {}};
}

}  // namespace dp::test
