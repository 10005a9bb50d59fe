#include "daemon_relink.hpp"

#include <utility>

namespace dp::agent {

DaemonRelink::~DaemonRelink() {
  cancel_ = true;
  if (thread_.joinable()) thread_.join();
}

void DaemonRelink::start(NodeHello hello, HelloRetry retry) {
  if (thread_.joinable()) return;
  cancel_ = false;
  retry.cancel = &cancel_;
  thread_ = std::thread([this, hello = std::move(hello), retry] {
    auto link = hello_daemon(hello, retry);
    const std::lock_guard<std::mutex> lock(mu_);
    result_ = std::move(link);
  });
}

std::optional<Result<DaemonLink>> DaemonRelink::take() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    if (!result_) return std::nullopt;
  }
  thread_.join();
  std::optional<Result<DaemonLink>> out = std::move(result_);
  result_.reset();
  return out;
}

}  // namespace dp::agent
