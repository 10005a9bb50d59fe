#include "slurm_step.hpp"

#include <cerrno>
#include <fstream>
#include <optional>
#include <set>
#include <string_view>

#include "host_list.hpp"
#include "slurm_headers.hpp"

namespace dp::spank {

Result<StepShape> load_step_shape(uint32_t job_id, uint32_t step_id) {
  slurm_step_id_t id{};
  id.job_id = job_id;
  id.step_id = step_id;
  id.step_het_comp = NO_VAL;
  slurm_step_layout_t* layout = slurm_job_step_layout_get(&id);
  if (layout == nullptr)
    return make_error(Errc::unavailable,
                      "cannot read the layout of step " + std::to_string(job_id) + "." +
                          std::to_string(step_id) + " from slurmctld: " + slurm_strerror(errno));
  auto hosts = expand_host_list(layout->node_list);
  if (!hosts) {
    slurm_job_step_layout_free(layout);
    return hosts.error();
  }
  StepShape shape;
  shape.hosts = std::move(*hosts);
  if (shape.hosts.size() != layout->node_cnt) {
    slurm_job_step_layout_free(layout);
    return make_error(Errc::internal, "step node list and node count disagree");
  }
  for (uint32_t n = 0; n < layout->node_cnt; ++n) {
    std::vector<int> ids;
    for (uint16_t t = 0; t < layout->tasks[n]; ++t)
      ids.push_back(static_cast<int>(layout->tids[n][t]));
    shape.task_ids.push_back(std::move(ids));
  }
  slurm_job_step_layout_free(layout);
  return shape;
}

namespace {

Error step_unreadable(uint32_t job_id, uint32_t step_id) {
  return make_error(Errc::unavailable, "cannot read step " + std::to_string(job_id) + "." +
                                           std::to_string(step_id) +
                                           " from slurmctld: " + slurm_strerror(errno));
}

}  // namespace

Result<DeviceRequest> load_step_request(uint32_t job_id, uint32_t step_id) {
  job_step_info_response_msg_t* resp = nullptr;
  if (slurm::get_step_info(job_id, step_id, &resp) != SLURM_SUCCESS || resp == nullptr)
    return step_unreadable(job_id, step_id);
  std::optional<DeviceRequest> req;
  auto text = [](const char* s) { return std::string_view(s ? s : ""); };
  for (uint32_t i = 0; i < resp->job_step_count; ++i) {
    const job_step_info_t& s = resp->job_steps[i];
    if (s.step_id.job_id != job_id || s.step_id.step_id != step_id) continue;
    req = parse_device_request(text(s.tres_per_node), text(s.tres_per_task), text(s.tres_per_step),
                               text(s.tres_bind));
  }
  slurm_free_job_step_info_response_msg(resp);
  if (!req)
    return make_error(Errc::unavailable, "slurmctld does not know step " + std::to_string(job_id) +
                                             "." + std::to_string(step_id));
  return *req;
}

Result<std::string> load_step_resv_ports(uint32_t job_id, uint32_t step_id) {
  job_step_info_response_msg_t* resp = nullptr;
  if (slurm::get_step_info(job_id, step_id, &resp) != SLURM_SUCCESS || resp == nullptr)
    return step_unreadable(job_id, step_id);
  std::optional<std::string> ports;
  for (uint32_t i = 0; i < resp->job_step_count; ++i) {
    const job_step_info_t& s = resp->job_steps[i];
    if (s.step_id.job_id == job_id && s.step_id.step_id == step_id)
      ports = s.resv_ports ? s.resv_ports : "";
  }
  slurm_free_job_step_info_response_msg(resp);
  if (!ports)
    return make_error(Errc::unavailable, "slurmctld does not know step " + std::to_string(job_id) +
                                             "." + std::to_string(step_id));
  return *ports;
}

Result<bool> step_listed(uint32_t job_id, uint32_t step_id) {
  job_step_info_response_msg_t* resp = nullptr;
  if (slurm::get_step_info(job_id, step_id, &resp) != SLURM_SUCCESS || resp == nullptr)
    return step_unreadable(job_id, step_id);
  bool listed = false;
  for (uint32_t i = 0; i < resp->job_step_count; ++i)
    listed = listed || (resp->job_steps[i].step_id.job_id == job_id &&
                        resp->job_steps[i].step_id.step_id == step_id);
  slurm_free_job_step_info_response_msg(resp);
  return listed;
}

Result<std::map<std::string, NodeFacts>> load_nodes(const std::vector<std::string>& names) {
  node_info_msg_t* msg = nullptr;
  int rc = names.size() == 1
               ? slurm_load_node_single(&msg, const_cast<char*>(names[0].c_str()), SHOW_ALL)
               : slurm_load_node(0, &msg, SHOW_ALL);
  if (rc != SLURM_SUCCESS || msg == nullptr)
    return make_error(
        Errc::unavailable,
        std::string("cannot read node information from slurmctld: ") + slurm_strerror(errno));
  std::set<std::string> wanted(names.begin(), names.end());
  std::map<std::string, NodeFacts> out;
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    const node_info_t& n = msg->node_array[i];
    if (n.name == nullptr || !wanted.count(n.name)) continue;
    out[n.name] = NodeFacts{n.node_addr ? n.node_addr : n.name, n.gres ? n.gres : ""};
  }
  slurm_free_node_info_msg(msg);
  for (const auto& name : names)
    if (!out.count(name))
      return make_error(Errc::unavailable, "node " + name + " is not known to slurmctld");
  return out;
}

bool devices_confined_here() {
  const std::string conf = slurm::config_file();
  const auto slash = conf.rfind('/');
  if (slash == std::string::npos) return false;
  // Root's or the site's file: bounded all the same.
  std::ifstream in(conf.substr(0, slash) + "/cgroup.conf");
  std::string text(64 * 1024, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return slurm_confines_devices(slurm::task_plugin(), text);
}

}  // namespace dp::spank
