#include "gradient_sync.hpp"

namespace dpt {

GradientSync::GradientSync(dp::Communicator& comm, Model& model, size_t bucket_bytes,
                           size_t extra_floats)
    : comm_(comm), model_(model) {
  const size_t cap = std::max<size_t>(bucket_bytes / sizeof(float), 1);
  Bucket cur;
  bool open = false;
  for (size_t i = model.layer_count(); i-- > 0;) {
    if (model.param_end(i) == model.param_begin(i)) continue;
    if (!open) {
      cur = Bucket{model.param_begin(i), model.param_begin(i), i};
      open = true;
    }
    cur.end = model.param_end(i);
    cur.trigger_layer = i;
    if (cur.end - cur.begin >= cap) {
      buckets_.push_back(cur);
      open = false;
    }
  }
  if (open) buckets_.push_back(cur);
  if (buckets_.empty()) buckets_.push_back(Bucket{0, 0, 0});
  buckets_.back().end += extra_floats;
}

void GradientSync::begin_step() {
  pending_.clear();
  status_ = {};
}

void GradientSync::on_layer_done(size_t layer) {
  if (comm_.size() == 1 || !status_.ok()) return;
  for (const auto& b : buckets_) {
    if (b.trigger_layer != layer) continue;
    auto work = comm_.all_reduce_async(model_.grads() + b.begin, b.end - b.begin, dp::DType::f32,
                                       dp::ReduceOp::avg);
    if (!work) {
      status_ = work.error();
      return;
    }
    pending_.push_back(std::move(*work));
  }
}

dp::Result<void> GradientSync::finish() {
  for (auto& w : pending_) {
    auto r = w->wait();
    if (!r && status_.ok()) status_ = r;
  }
  pending_.clear();
  return status_;
}

}  // namespace dpt
