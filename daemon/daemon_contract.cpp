#include "daemon_contract.hpp"

#include <algorithm>
#include <cctype>

#include "dp/params.hpp"

namespace dp::daemon {
namespace {

std::string one_line(std::string v) {
  std::replace(v.begin(), v.end(), '\n', ' ');
  return v;
}

// An abstract report socket's name: "@", then what abstract_socket_name
// makes (digits, letters, '.', '-', '/', '_'), under sun_path's 108 bytes.
bool socket_name_ok(std::string_view s) {
  return s.size() >= 2 && s.size() < 108 && s[0] == '@' &&
         std::all_of(s.begin() + 1, s.end(), [](unsigned char c) {
           return std::isalnum(c) || c == '.' || c == '-' || c == '/' || c == '_';
         });
}

}  // namespace

std::vector<std::string> format_arguments(const LaunchArgs& a) {
  std::vector<std::string> v = {"--world-size", std::to_string(a.world_size),
                                "--job-id",     a.job_id,
                                "--step-id",    a.step_id,
                                "--listen",     a.listen};
  auto add = [&](const char* name, std::string value) {
    v.emplace_back(name);
    v.push_back(std::move(value));
  };
  if (!a.listen_ports.any()) {
    add("--listen-ports",
        std::to_string(a.listen_ports.low) + "-" + std::to_string(a.listen_ports.high));
    if (!a.listen_ports.setting.empty()) add("--listen-ports-from", a.listen_ports.setting);
  }
  if (a.step_nodes_on_stdin) add("--step-nodes", "-");
  if (a.nodes > 0) add("--nodes", std::to_string(a.nodes));
  if (a.heartbeat_timeout_ms >= 0)
    add("--heartbeat-timeout-ms", std::to_string(a.heartbeat_timeout_ms));
  if (a.hang_timeout_ms >= 0) add("--hang-timeout-ms", std::to_string(a.hang_timeout_ms));
  if (a.hang_timeout_by_user) add("--hang-timeout-by", "user");
  if (a.on_failure != OnFailure::end) add("--on-failure", on_failure_name(a.on_failure));
  if (a.end_on_hang) add("--end-on-hang", "1");
  if (a.straggler_pct >= 0) add("--straggler-pct", std::to_string(a.straggler_pct));
  if (a.notice_fd >= 0) add("--notice-fd", std::to_string(a.notice_fd));
  if (a.spares > 0 || a.max_restarts > 0) {
    add("--spares", std::to_string(a.spares));
    add("--max-restarts", std::to_string(a.max_restarts));
    add("--tasks-per-node", std::to_string(a.tasks_per_node));
    if (a.restart_stop_ms > 0) add("--restart-stop-ms", std::to_string(a.restart_stop_ms));
    if (!a.restart_programs) add("--restart-programs", "0");
    if (a.spare_silence_ms > 0) add("--spare-silence-ms", std::to_string(a.spare_silence_ms));
    if (a.fence_ms > 0) add("--fence-ms", std::to_string(a.fence_ms));
  }
  return v;
}

std::string format_addresses(const std::string& listen, const std::vector<std::string>& nodes) {
  std::string text = listen.empty() ? "" : listen + "\n";
  for (const auto& n : nodes) text += n + " ";
  return text + "\n";
}

std::string format_answer(const Result<DaemonAnswer>& a) {
  if (!a) return "ERROR " + one_line(a.error().message) + "\n";
  return "READY " + std::to_string(a->port) + (a->report_socket.empty() ? "" : " ") +
         a->report_socket + "\n";
}

Result<DaemonAnswer> parse_answer(std::string_view line) {
  if (line.rfind("ERROR ", 0) == 0)
    return make_error(Errc::unavailable, std::string(line.substr(6)));
  auto wrong = [&] {
    return make_error(Errc::protocol,
                      "bad answer '" + std::string(line.substr(0, 120)) + "', not READY");
  };
  if (line.rfind("READY ", 0) != 0) return wrong();
  line.remove_prefix(6);
  const size_t sp = line.find(' ');
  auto port = parse_whole_number(line.substr(0, sp), 1, 65535);
  if (!port) return wrong();
  DaemonAnswer a{static_cast<int>(*port), {}};
  if (sp != std::string_view::npos) {
    if (!socket_name_ok(line.substr(sp + 1))) return wrong();
    a.report_socket = std::string(line.substr(sp + 1));
  }
  return a;
}

}  // namespace dp::daemon
