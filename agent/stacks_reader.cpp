#include "stacks_reader.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <utility>

#include "dp/stacks/read_many.hpp"
#include "flight_message.hpp"
#include "stacks_message.hpp"

namespace dp::agent {

StacksReader::StacksReader() : done_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

StacksReader::~StacksReader() {
  if (thread_.joinable()) thread_.join();
}

void StacksReader::ask(uint64_t ask, const std::vector<TaskStart>& ranks,
                       std::chrono::milliseconds deadline, const std::string& flight_dir) {
  if (!done_) return;  // no reader: the daemon names this node
  asks_.push_back(ask);
  if (asks_.size() > 1) return;
  if (thread_.joinable()) thread_.join();  // finished: its answer was taken
  std::vector<stacks::Target> targets;
  std::vector<int> rank_of;
  for (const TaskStart& t : ranks) {
    targets.push_back({t.pid, t.start_ticks, ::geteuid()});
    rank_of.push_back(t.rank);
  }
  stacks::ManyLimits limits;
  limits.deadline = deadline;
  const int fd = done_.get();
  // Thread creation can fail (EAGAIN at the user's process limit): the ask
  // then goes unanswered and the daemon names this node.
  try {
    const auto until = std::chrono::steady_clock::now() + deadline;
    thread_ = std::thread([this, targets = std::move(targets), rank_of = std::move(rank_of), limits,
                           fd, flight_dir, ranks, until] {
      const auto read = stacks::read_processes(targets, limits);
      rdv::NodeStacks node;
      for (size_t i = 0; i < read.size() && i < rank_of.size(); ++i)
        node.emplace_back(rank_of[i], read[i]);
      auto answer = rdv::stacks_answer(0, node, rdv::StackCaps{});
      if (!flight_dir.empty())
        for (const auto& r : read_flights(flight_dir, ranks, until, triggers_))
          *answer.add_flights() = rdv::flight_message(r);
      {
        std::lock_guard<std::mutex> lock(mu_);
        result_ = std::move(answer);
      }
      const uint64_t one = 1;
      [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);
    });
  } catch (const std::system_error&) {
    asks_.clear();
  }
}

std::vector<proto::StacksAnswer> StacksReader::take() {
  uint64_t count = 0;
  if (::read(done_.get(), &count, sizeof count) != sizeof count) return {};
  if (thread_.joinable()) thread_.join();
  proto::StacksAnswer answer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    answer = std::move(result_);
  }
  std::vector<proto::StacksAnswer> out;
  for (uint64_t ask : asks_) {
    out.push_back(answer);
    out.back().set_ask(ask);
  }
  asks_.clear();
  return out;
}

}  // namespace dp::agent
