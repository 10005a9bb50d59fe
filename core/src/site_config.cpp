#include "dp/site_config.hpp"

#include <algorithm>
#include <string_view>

#include "dp/options.hpp"

namespace dp {

const char* accelerator_kind_name(AcceleratorKind k) noexcept {
  switch (k) {
    case AcceleratorKind::none: return "none";
    case AcceleratorKind::cuda: return "cuda";
    case AcceleratorKind::ze: return "ze";
    case AcceleratorKind::rdu: return "rdu";
  }
  return "?";
}

namespace {

Error site_error(std::string_view word, std::string_view why) {
  return make_error(Errc::invalid_argument, "plugstack.conf setting '" + std::string(word) +
                                                "': " + std::string(why) +
                                                " (ask the site administrator to fix it)");
}

// `word` is the whole key=value word, so the message shows what the admin wrote.
Result<int> site_int(std::string_view word, std::string_view key, std::string_view value,
                     long long min, long long max, std::string_view example) {
  auto n = parse_integer(value, min, max, key, example);
  if (!n) return site_error(word, n.error().message);
  return static_cast<int>(*n);
}

// Settings that are one bounded integer each.
struct IntSetting {
  std::string_view key;
  int SiteConfig::*field;
  long long min, max;
  std::string_view example;
};
constexpr IntSetting kIntSettings[] = {
    {"devices_per_node", &SiteConfig::devices_per_node, 0, 4096, "8"},
    {"tiles_per_device", &SiteConfig::tiles_per_device, 1, 1024, "2"},
    {"idle_timeout", &SiteConfig::idle_timeout_s, 0, 30 * 24 * 3600, "3600"},
    {"port_wait", &SiteConfig::port_wait_s, 1, 3600, "60"},
    {"hang_timeout", &SiteConfig::hang_timeout_s, 0, 24 * 3600, "120"},
    {"heartbeat_timeout", &SiteConfig::heartbeat_timeout_s, 0, 24 * 3600, "60"},
};

Result<void> apply(SiteConfig& c, std::string_view word) {
  auto eq = word.find('=');
  if (eq == std::string_view::npos || eq == 0) return site_error(word, "expected key=value");
  std::string_view key = word.substr(0, eq);
  std::string_view value = word.substr(eq + 1);
  // The list decides what is accepted, so it and the parser cannot drift.
  const auto& keys = site_config_keys();
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
    std::string known;
    for (const auto& k : keys) known += (known.empty() ? "" : ", ") + k;
    return site_error(word, "unknown key; known keys: " + known);
  }
  if (key == "kind") {
    if (value == "cuda") c.kind = AcceleratorKind::cuda;
    else if (value == "ze") c.kind = AcceleratorKind::ze;
    else if (value == "rdu") c.kind = AcceleratorKind::rdu;
    else if (value == "none") c.kind = AcceleratorKind::none;
    else return site_error(word, "kind must be cuda, ze, rdu or none");
    return {};
  }
  for (const auto& s : kIntSettings) {
    if (key != s.key) continue;
    auto n = site_int(word, key, value, s.min, s.max, s.example);
    DP_TRY(n);
    c.*s.field = *n;
    return {};
  }
  if (key == "ports") {
    auto dash = value.find('-');
    if (dash == std::string_view::npos)
      return site_error(word, "ports must be a range LOW-HIGH, e.g. ports=29400-29999");
    auto lo = site_int(word, key, value.substr(0, dash), 1024, 65535, "29400");
    DP_TRY(lo);
    auto hi = site_int(word, key, value.substr(dash + 1), 1024, 65535, "29999");
    DP_TRY(hi);
    if (*lo > *hi) return site_error(word, "the range's low end is above its high end");
    c.port_min = *lo;
    c.port_max = *hi;
    return {};
  }
  if (key == "default") {
    if (value == "on") c.default_on = true;
    else if (value == "off") c.default_on = false;
    else return site_error(word, "default must be on or off");
    return {};
  }
  if (key == "resv_ports") {
    if (value == "use") c.use_resv_ports = true;
    else if (value == "ignore") c.use_resv_ports = false;
    else return site_error(word, "resv_ports must be use or ignore");
    return {};
  }
  if (key == "report") {
    if (value.empty() || value.front() != '/')
      return site_error(word, "needs an absolute path, e.g. report=/var/log/slurm-dp/%j.%s.json");
    c.report = std::string(value);
    return {};
  }
  if (key == "daemon" || key == "lease_dir") {
    if (value.empty() || value.front() != '/') return site_error(word, "needs an absolute path");
    (key == "daemon" ? c.daemon_path : c.lease_dir) = std::string(value);
    return {};
  }
  return site_error(word, "listed in site_config_keys() but not parsed (a slurm-dp bug)");
}

}  // namespace

const std::vector<std::string>& site_config_keys() {
  static const std::vector<std::string> keys{
      "kind",         "devices_per_node", "tiles_per_device", "ports",     "default",
      "daemon",       "lease_dir",        "idle_timeout",     "port_wait", "resv_ports",
      "hang_timeout", "report",           "heartbeat_timeout"};
  return keys;
}

Result<SiteConfig> parse_site_config(const std::vector<std::string>& words) {
  SiteConfig c;
  for (const auto& w : words) DP_TRY(apply(c, w));
  if (c.kind == AcceleratorKind::cuda && c.tiles_per_device != 1)
    return site_error("tiles_per_device=" + std::to_string(c.tiles_per_device),
                      "kind=cuda has one tile per GPU (MIG slices are separate Slurm devices); "
                      "remove it or set kind=ze/rdu");
  return c;
}

}  // namespace dp
