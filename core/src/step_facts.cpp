// The step's facts as Slurm states them: tasks per node, gres counts, the
// devices a node was given, tile masks. The plan is layout.cpp's.
#include <algorithm>
#include <cctype>
#include <string>

#include "dp/env_names.hpp"
#include "dp/layout.hpp"
#include "dp/shown_value.hpp"
#include "layout_text.hpp"

namespace dp {

using layout_text::join;
using layout_text::slurm_says_none;
using layout_text::split_list;

int StepShape::task_count() const noexcept {
  int n = 0;
  for (const auto& t : task_ids) n += static_cast<int>(t.size());
  return n;
}

int StepShape::host_of(int rank) const noexcept {
  for (size_t i = 0; i < task_ids.size(); ++i)
    if (std::find(task_ids[i].begin(), task_ids[i].end(), rank) != task_ids[i].end())
      return static_cast<int>(i);
  return -1;
}

Result<std::vector<int>> parse_tasks_per_node(std::string_view text) {
  std::vector<int> out;
  for (const auto& item : split_list(text)) {
    std::string_view v(item);
    long long repeat = 1;
    auto paren = v.find('(');
    if (paren != std::string_view::npos) {
      if (v.size() < paren + 4 || v.substr(paren, 2) != "(x" || v.back() != ')')
        return make_error(Errc::invalid_argument, "tasks per node '" + shown_value(text) +
                                                      "': bad item '" + shown_value(item) + "'");
      auto r = parse_integer(v.substr(paren + 2, v.size() - paren - 3), 1, 1 << 20,
                             "tasks per node repeat", "2(x3)");
      DP_TRY(r);
      repeat = *r;
      v = v.substr(0, paren);
    }
    auto n = parse_integer(v, 0, 1 << 20, "tasks per node", "2(x3),1");
    DP_TRY(n);
    for (long long i = 0; i < repeat; ++i) out.push_back(static_cast<int>(*n));
  }
  if (out.empty())
    return make_error(Errc::invalid_argument, "tasks per node '" + shown_value(text) + "': empty");
  return out;
}

std::vector<std::vector<int>> assign_task_ids(const std::vector<int>& tasks_per_node,
                                              Distribution dist) {
  std::vector<std::vector<int>> ids(tasks_per_node.size());
  int next = 0;
  if (dist == Distribution::block) {
    for (size_t i = 0; i < tasks_per_node.size(); ++i)
      for (int j = 0; j < tasks_per_node[i]; ++j) ids[i].push_back(next++);
    return ids;
  }
  bool placed = true;
  while (placed) {
    placed = false;
    for (size_t i = 0; i < tasks_per_node.size(); ++i) {
      if (static_cast<int>(ids[i].size()) < tasks_per_node[i]) {
        ids[i].push_back(next++);
        placed = true;
      }
    }
  }
  return ids;
}

int gres_count(std::string_view gres, std::string_view name) {
  // Drop "(S:0-1)" socket annotations first: they contain ':' and ','.
  std::string plain;
  int depth = 0;
  for (char c : gres) {
    if (c == '(') ++depth;
    else if (c == ')') depth = std::max(0, depth - 1);
    else if (depth == 0) plain += c;
  }
  // Bounded, however many items the string lists: never an int overflow.
  constexpr long long kMaxDevices = 1 << 20;
  long long total = 0;
  for (const auto& item : split_list(plain)) {
    auto colon = item.find(':');
    if (item.substr(0, colon) != name || colon == std::string::npos) continue;
    auto last = item.rfind(':');
    auto n =
        parse_integer(std::string_view(item).substr(last + 1), 0, kMaxDevices, "gres", "gpu:4");
    if (n) total = std::min(total + *n, kMaxDevices);
  }
  return static_cast<int>(total);
}

Result<NodeTiles> node_tiles(const SiteConfig& site, const VisibleDevices& visible) {
  NodeTiles t;
  const int declared_devices = site.devices_per_node;
  switch (site.kind) {
    case AcceleratorKind::cuda:
      if (visible.cuda && !slurm_says_none(*visible.cuda)) {
        t.entries = split_list(*visible.cuda);
      } else {
        for (int d = 0; d < declared_devices; ++d) t.entries.push_back(std::to_string(d));
      }
      break;
    case AcceleratorKind::ze: {
      std::vector<std::string> devices;
      if (visible.ze && !slurm_says_none(*visible.ze)) {
        devices = split_list(*visible.ze);
      } else {
        for (int d = 0; d < declared_devices; ++d) devices.push_back(std::to_string(d));
      }
      for (const auto& d : devices) {
        if (d.find('.') != std::string::npos) {  // already a stack: one tile
          t.entries.push_back(d);
          continue;
        }
        for (int s = 0; s < site.tiles_per_device; ++s)
          t.entries.push_back(d + "." + std::to_string(s));
      }
      break;
    }
    case AcceleratorKind::rdu:
    case AcceleratorKind::none:
      for (int i = 0; i < site.declared_tiles_per_node(); ++i)
        t.entries.push_back(std::to_string(i));
      break;
  }
  return t;
}

bool devices_named_by_position(const SiteConfig& site, const VisibleDevices& visible) {
  const std::optional<std::string>* list = nullptr;
  switch (site.kind) {
    case AcceleratorKind::cuda: list = &visible.cuda; break;
    case AcceleratorKind::ze: list = &visible.ze; break;
    case AcceleratorKind::rdu:
    case AcceleratorKind::none: return true;  // tiles are the site's numbers
  }
  if (!*list || slurm_says_none(**list)) return true;
  const auto entries = split_list(**list);
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i] != std::to_string(i)) return false;
  return true;
}

std::string tile_bitmask(const std::vector<int>& tiles) {
  int top = -1;
  for (int t : tiles) top = std::max(top, t);
  if (top < 0) return "0x0";
  std::vector<int> nibbles(static_cast<size_t>(top / 4 + 1), 0);
  for (int t : tiles)
    if (t >= 0) nibbles[static_cast<size_t>(t / 4)] |= 1 << (t % 4);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "0x";
  for (auto it = nibbles.rbegin(); it != nibbles.rend(); ++it) out += kHex[*it];
  return out;
}

}  // namespace dp

namespace dp {

namespace {

std::string lower_trimmed(std::string_view v) {
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  std::string out(v);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool slurm_confines_devices(std::string_view task_plugin, std::string_view cgroup_conf) {
  bool cgroup = false;
  for (const auto& p : split_list(task_plugin)) cgroup |= p == "task/cgroup" || p == "cgroup";
  if (!cgroup) return false;
  // cgroup.conf(5): one Key=value a line, case-insensitive, # to the line's end; the last wins.
  bool confined = false;
  for (size_t pos = 0; pos < cgroup_conf.size();) {
    const size_t end = std::min(cgroup_conf.find('\n', pos), cgroup_conf.size());
    std::string_view line = cgroup_conf.substr(pos, end - pos);
    pos = end + 1;
    line = line.substr(0, line.find('#'));
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos && lower_trimmed(line.substr(0, eq)) == "constraindevices")
      confined = lower_trimmed(line.substr(eq + 1)) == "yes";
  }
  return confined;
}

}  // namespace dp
