// Finding a step's report socket: the user's folder when usable, and the
// abstract socket every daemon also listens on, found by prefix among this
// namespace's listeners created by the caller's uid (sock_diag; its random
// tail cannot be guessed, the prefix can: another user's decoys are never
// connected to). query checks the server's uid again, under one deadline.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "dp/bounded_read.hpp"
#include "dp/hex.hpp"
#include "dp/list_text.hpp"
#include "dp/random_bytes.hpp"
#include "step_socket.hpp"
#include "unix_listeners.hpp"

namespace dp::obs {
namespace {

std::string abstract_prefix(uid_t owner = getuid()) {
  return "@slurm-dp-" + std::to_string(owner) + "/";
}

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

// More than any user runs steps on one host at once; bounds what a client asks.
constexpr size_t kMostSockets = 64;
constexpr size_t kUnixTableBytes = 4u << 20;  // /proc/net/unix, without sock_diag

// Abstract names in this network namespace that start with prefix: the
// owner's listeners; without sock_diag, every one /proc/net/unix shows
// (query still checks the uid, within its deadline).
std::vector<std::string> abstract_names(const std::string& prefix, uid_t owner) {
  std::vector<std::string> out;
  if (auto found = abstract_listeners(prefix, owner, kMostSockets); found) {
    for (auto& l : *found)
      if (!l.uid || *l.uid == owner) out.push_back(std::move(l.name));
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  // Any user can make the table long: what the bound holds is looked at.
  const std::string table = read_bounded("/proc/net/unix", kUnixTableBytes);
  for (std::string_view line : list_items(table, '\n')) {
    // Num RefCount Protocol Flags Type St Inode Path: the path is the 8th word.
    const size_t at = line.find(" @");
    if (at == std::string_view::npos) continue;
    const std::string_view name = line.substr(at + 1);
    if (name.rfind(prefix, 0) == 0 && name.find(' ') == std::string_view::npos)
      out.emplace_back(name);
    if (out.size() == kMostSockets) break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

Result<std::string> abstract_socket_name(const std::string& job, const std::string& step) {
  auto raw = random_bytes(8);
  DP_TRY(raw);
  return abstract_prefix() + socket_name(job, step) + "." +
         to_hex({reinterpret_cast<const unsigned char*>(raw->data()), raw->size()});
}

std::vector<std::string> step_sockets(const std::string& job, const std::string& step,
                                      uid_t owner) {
  std::vector<std::string> out;
  // The caller's own folder; root asking for a user goes by the abstract
  // sockets alone and never walks a user's folder.
  if (auto p = socket_path(job, step, false);
      owner == getuid() && p && access(p->c_str(), F_OK) == 0)
    out.push_back(*p);
  for (auto& n : abstract_names(abstract_prefix(owner) + socket_name(job, step) + ".", owner))
    out.push_back(std::move(n));
  return out;
}

std::vector<std::string> running_steps(const std::string& job, uid_t owner) {
  std::set<std::string> steps;
  const std::string prefix = abstract_prefix(owner) + job + ".";
  for (const auto& n : abstract_names(prefix, owner)) {
    const size_t a = prefix.size(), b = n.find('.', a);
    if (b == std::string::npos) continue;
    const std::string step = n.substr(a, b - a);
    if (all_digits(step) && n.rfind(abstract_prefix(owner) + socket_name(job, step) + ".", 0) == 0)
      steps.insert(step);
  }
  return {steps.begin(), steps.end()};
}

Result<proto::Stats> query_step(const std::string& job, const std::string& step,
                                std::chrono::milliseconds timeout) {
  auto r = ask_step(job, step, stats_request(), timeout);
  if (!r) return r.error();
  return r->stats();
}

Result<proto::Response> ask_step(const std::string& job, const std::string& step,
                                 const proto::Request& req, std::chrono::milliseconds timeout,
                                 uid_t owner) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  std::string why;
  for (const auto& s : step_sockets(job, step, owner)) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      if (why.empty()) why = "no answer within " + std::to_string(timeout.count()) + " ms";
      break;
    }
    auto st = ask(s, req, left, owner);
    if (st) return st;
    if (why.empty()) why = st.error().message;
  }
  auto dir = user_dir(false);
  if (!dir && dir.error().code == Errc::unauthorized)
    why += (why.empty() ? "" : "; ") + dir.error().message;
  if (why.empty())
    why = "no running step daemon of " +
          (owner == getuid() ? std::string("yours") : "uid " + std::to_string(owner)) +
          " for step " + job + "." + step;
  return make_error(Errc::not_found, why);
}

}  // namespace dp::obs
