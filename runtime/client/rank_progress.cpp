#include "rank_progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dp/env_names.hpp"
#include "dp/proto/rendezvous.pb.h"
#include "frame_codec.hpp"

namespace dp::detail {

RankProgress::RankProgress() {
  const char* v = std::getenv(env::kProgress);
  enabled_ = !(v && std::strcmp(v, "off") == 0);
}

int64_t RankProgress::now_us() noexcept {
  // +1: 0 stays free to mean "not set".
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
             .count() +
         1;
}

void RankProgress::op_begin() noexcept {
  if (!enabled_) return;
  const int64_t t = now_us();
  if (first_op_us_.load(std::memory_order_relaxed) == 0) {  // a plain load on every later op
    int64_t zero = 0;
    first_op_us_.compare_exchange_strong(zero, t, std::memory_order_relaxed);
  }
  op_start_us_.store(t, std::memory_order_relaxed);
  started_.fetch_add(1, std::memory_order_relaxed);
}

void RankProgress::op_end() noexcept {
  if (!enabled_) return;
  const int64_t t = now_us();
  const int64_t s = op_start_us_.exchange(0, std::memory_order_relaxed);
  if (s > 0 && t > s) wait_us_.fetch_add(static_cast<uint64_t>(t - s), std::memory_order_relaxed);
  done_.fetch_add(1, std::memory_order_relaxed);
  // The first collective of the program, not the ones dp::init runs itself.
  if (first_done_us_.load(std::memory_order_relaxed) == 0 &&
      init_total_us_.load(std::memory_order_relaxed) != 0) {
    const int64_t i = init_start_us_.load(std::memory_order_relaxed);
    if (i > 0) first_done_us_.store(t - i, std::memory_order_relaxed);
  }
}

void RankProgress::init_begin() noexcept {
  int64_t zero = 0;
  init_start_us_.compare_exchange_strong(zero, now_us(), std::memory_order_relaxed);
}

void RankProgress::init_connected() noexcept {
  const int64_t i = init_start_us_.load(std::memory_order_relaxed);
  if (i > 0 && init_connect_us_.load(std::memory_order_relaxed) == 0)
    init_connect_us_.store(now_us() - i, std::memory_order_relaxed);
}

void RankProgress::init_done() noexcept {
  const int64_t i = init_start_us_.load(std::memory_order_relaxed);
  if (i > 0 && init_total_us_.load(std::memory_order_relaxed) == 0)
    init_total_us_.store(now_us() - i, std::memory_order_relaxed);
}

bool RankProgress::fill(proto::Progress& out) const {
  if (!enabled_) return false;
  const int64_t t = now_us();
  out.set_ops_started(started_.load(std::memory_order_relaxed));
  out.set_ops_done(done_.load(std::memory_order_relaxed));
  out.set_wait_us(wait_us_.load(std::memory_order_relaxed));
  const int64_t s = op_start_us_.load(std::memory_order_relaxed);
  out.set_in_op_us(s > 0 && t > s ? static_cast<uint64_t>(t - s) : 0);
  const int64_t f = first_op_us_.load(std::memory_order_relaxed);
  out.set_since_first_op_us(f > 0 && t > f ? static_cast<uint64_t>(t - f) : 0);
  out.set_init_connect_us(static_cast<uint64_t>(init_connect_us_.load(std::memory_order_relaxed)));
  out.set_init_total_us(static_cast<uint64_t>(init_total_us_.load(std::memory_order_relaxed)));
  out.set_first_op_done_us(static_cast<uint64_t>(first_done_us_.load(std::memory_order_relaxed)));
  return true;
}

void heartbeat_frame(std::string& frame) {
  proto::Request hb;
  rank_progress().fill(*hb.mutable_heartbeat()->mutable_progress());
  if (!rank_progress().enabled()) hb.mutable_heartbeat()->clear_progress();
  frame.clear();
  rdv::append_frame(hb, frame);
}

void end_hanging_rank(int rank, const std::string& message) {
  std::fprintf(stderr, "slurm-dp: rank %d: %s; ending this process (exit code 124)\n", rank,
               message.c_str());
  std::fflush(stderr);
  _exit(124);
}

RankProgress& rank_progress() noexcept {
  static RankProgress p;
  return p;
}

}  // namespace dp::detail
