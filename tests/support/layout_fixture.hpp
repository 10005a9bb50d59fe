// A recorded step (tests/fixtures/layouts/*.txt, format in tests/README.md)
// and its replay through the layout core's one entry, as srun's
// --dp-explain prints it: shared by the fixtures' unit test and
// dp_layout_explain (gpu-check's tasks get their variables from it).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dp/layout.hpp"

namespace dp::test {

struct LayoutFixture {
  std::string name;
  std::vector<std::string> site, options, expected, command;
  std::string hosts, tasks_per_node, distribution = "block", node_gres, master_addr,
                                     master_port = "29500", refused, hint;
  std::optional<VisibleDevices> visible;
  std::optional<DeviceRequest> request;
  bool devices_confined = false;
  std::vector<std::string> errors;  // lines the loader did not understand
};

LayoutFixture load_layout_fixture(const std::filesystem::path& path);

// Slurm's host list expanded (the unit test: libslurm, as the plugin does).
using HostListExpander = std::function<Result<std::vector<std::string>>(const std::string&)>;

struct LayoutReplay {
  std::vector<std::string> lines;  // the task (and launcher) lines
  std::string hint;                // the plan's device hint, if any
  std::string refused;             // non-empty: the core refused the step, or the fixture's error
};
LayoutReplay replay_layout_fixture(const LayoutFixture& f, const HostListExpander& expand);

}  // namespace dp::test
