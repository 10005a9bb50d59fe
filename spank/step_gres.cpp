#include "step_gres.hpp"

#include "dp/layout.hpp"

namespace dp::spank {

namespace {

// "gres:gpu:2,gres:nic:1" -> GPUs named in it (gres_count reads "gpu:2").
int gpus_in(std::string_view tres) {
  std::string plain;
  for (size_t pos = 0; pos < tres.size();) {
    size_t end = tres.find(',', pos);
    if (end == std::string_view::npos) end = tres.size();
    std::string_view item = tres.substr(pos, end - pos);
    if (item.substr(0, 5) == "gres:" || item.substr(0, 5) == "gres/") item.remove_prefix(5);
    if (!plain.empty()) plain += ',';
    plain += item;
    pos = end + 1;
  }
  return gres_count(plain, "gpu");
}

}  // namespace

int step_gpus_on_node(const StepGresRequest& req, int tasks_on_node, int nodes) {
  if (const int n = gpus_in(req.per_node); n > 0) return n;
  if (const int t = gpus_in(req.per_task); t > 0) return t * tasks_on_node;
  if (const int s = gpus_in(req.per_step); s > 0) return nodes == 1 ? s : -1;
  return 0;
}

}  // namespace dp::spank
