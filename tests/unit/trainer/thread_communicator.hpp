// An in-process dp::Communicator for N threads (shared memory + barriers), so
// multi-rank logic of the trainer is testable without the runtime's backends.
// Reductions add in rank order, so every rank gets bit-identical results.
#pragma once

#include <barrier>
#include <cstring>
#include <memory>
#include <vector>

#include "dp/communicator.hpp"

namespace dpt::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), barrier_(size), slots_(size) {}
  int size() const { return size_; }
  void sync() { barrier_.arrive_and_wait(); }
  std::vector<const void*>& slots() { return slots_; }

 private:
  int size_;
  std::barrier<> barrier_;
  std::vector<const void*> slots_;
};

class ThreadCommunicator final : public dp::Communicator {
 public:
  ThreadCommunicator(ThreadGroup& g, int rank) : g_(g), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return g_.size(); }
  dp::Backend backend() const override { return dp::Backend::single; }
  std::string describe() const override { return "threads (test)"; }

  dp::Result<void> all_reduce(void* buf, size_t count, dp::DType type, dp::ReduceOp op) override {
    if (type != dp::DType::f32) return dp::make_error(dp::Errc::invalid_argument, "f32 only");
    g_.slots()[rank_] = buf;
    g_.sync();
    std::vector<float> out(count, 0.0f);
    for (int r = 0; r < size(); ++r) {
      const float* in = static_cast<const float*>(g_.slots()[r]);
      for (size_t i = 0; i < count; ++i) out[i] += in[i];
    }
    if (op == dp::ReduceOp::avg)
      for (auto& v : out) v /= static_cast<float>(size());
    g_.sync();
    std::memcpy(buf, out.data(), count * sizeof(float));
    return {};
  }
  dp::Result<std::unique_ptr<dp::Work>> all_reduce_async(void* buf, size_t count, dp::DType type,
                                                         dp::ReduceOp op) override {
    struct Done : dp::Work {
      dp::Result<void> r;
      dp::Result<void> wait() override { return r; }
    };
    auto w = std::make_unique<Done>();
    w->r = all_reduce(buf, count, type, op);
    return std::unique_ptr<dp::Work>(std::move(w));
  }
  dp::Result<void> broadcast(void* buf, size_t count, dp::DType, int root) override {
    g_.slots()[rank_] = buf;
    g_.sync();
    if (rank_ != root) std::memcpy(buf, g_.slots()[root], count * sizeof(float));
    g_.sync();
    return {};
  }
  dp::Result<void> all_gather(const void* send, void* recv, size_t count, dp::DType) override {
    g_.slots()[rank_] = send;
    g_.sync();
    for (int r = 0; r < size(); ++r)
      std::memcpy(static_cast<float*>(recv) + r * count, g_.slots()[r], count * sizeof(float));
    g_.sync();
    return {};
  }
  dp::Result<void> barrier() override {
    g_.sync();
    return {};
  }

 private:
  ThreadGroup& g_;
  int rank_;
};

}  // namespace dpt::testing
