// libFuzzer target: slurmstepd's reading of the device variables Slurm set
// (CUDA_VISIBLE_DEVICES, ZE_AFFINITY_MASK: node_tiles), of the step's
// device request (parse_device_request) and of a node's Gres= (gres_count).
// The input's first byte picks the site's kind; the rest is split on '|'.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dp/layout.hpp"
#include "dp/site_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::vector<std::string_view> part;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  while (part.size() < 5) {
    const size_t bar = rest.find('|');
    part.push_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) break;
    rest = rest.substr(bar + 1);
  }
  part.resize(5);
  auto site = dp::parse_site_config({"kind=" + std::string(data[0] % 2 ? "cuda" : "ze")});
  if (!site) std::abort();
  dp::VisibleDevices v;
  if (data[0] & 2) v.cuda = std::string(part[0]);
  if (data[0] & 4) v.ze = std::string(part[0]);
  if (auto t = dp::node_tiles(*site, v); t && t->entries.size() > size) std::abort();
  (void)dp::parse_device_request(part[1], part[2], part[3], part[4]);
  const int n = dp::gres_count(part[1], "gpu");
  if (n < 0 || n > (1 << 20)) std::abort();
  return 0;
}
