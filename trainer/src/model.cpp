#include "model.hpp"

#include <algorithm>

namespace dpt {

std::string ModelSpec::describe() const {
  auto join = [](const std::vector<int>& v) {
    std::string s;
    for (int x : v) {
      if (!s.empty()) s += ',';
      s += std::to_string(x);
    }
    return s;
  };
  switch (kind) {
    case ModelKind::mlp: return "mlp[" + join(hidden) + "]";
    case ModelKind::cnn:
      return "cnn[" + join(channels) + ";k" + std::to_string(kernel) + ";fc" + std::to_string(fc) +
             "]";
    case ModelKind::linear: return "linear";
  }
  return "?";
}

dp::Result<std::unique_ptr<Model>> Model::create(const ModelSpec& spec, Ops& ops, int max_batch,
                                                 uint64_t seed, size_t extra_grad_floats) {
  std::unique_ptr<Model> m(new Model(ops));
  Shape s = spec.input;
  m->input_shape_ = s;
  auto add = [&](std::unique_ptr<Layer> l) {
    s = l->output_shape();
    m->layers_.push_back(std::move(l));
  };
  switch (spec.kind) {
    case ModelKind::mlp:
      for (int w : spec.hidden) add(make_linear(s, w, true));
      add(make_linear(s, spec.outputs, false));
      break;
    case ModelKind::cnn:
      if (spec.channels.size() != 2)
        return dp::make_error(dp::Errc::invalid_argument,
                              "--channels: the CNN has exactly two conv layers; give two counts, "
                              "e.g. --channels 16,32");
      if (spec.input.h % 4 != 0 || spec.input.w % 4 != 0)
        return dp::make_error(dp::Errc::invalid_argument,
                              "cnn: input height and width must be multiples of 4");
      for (int c : spec.channels) {
        add(make_conv(s, c, spec.kernel, true));
        add(make_maxpool(s));
      }
      add(make_linear(s, spec.fc, true));
      add(make_linear(s, spec.outputs, false));
      break;
    case ModelKind::linear: add(make_linear(s, spec.outputs, false)); break;
  }
  m->output_shape_ = s;

  // Reverse layout: the last layer's parameters come first.
  m->offsets_.assign(m->layers_.size(), 0);
  size_t off = 0, workspace = 0, max_act = 0;
  for (size_t i = m->layers_.size(); i-- > 0;) {
    m->offsets_[i] = off;
    off += m->layers_[i]->param_count();
    workspace += m->layers_[i]->workspace_floats(max_batch);
  }
  m->param_count_ = off;

  m->params_ = DeviceBuffer(ops, off);
  m->grads_ = DeviceBuffer(ops, off + extra_grad_floats);
  m->workspace_ = DeviceBuffer(ops, std::max<size_t>(workspace, 1));
  Shape a = m->input_shape_;
  m->acts_.emplace_back(ops, a.size() * max_batch);
  max_act = a.size();
  for (auto& l : m->layers_) {
    a = l->output_shape();
    max_act = std::max(max_act, a.size());
    m->acts_.emplace_back(ops, a.size() * max_batch);
  }
  m->dacts_[0] = DeviceBuffer(ops, max_act * max_batch);
  m->dacts_[1] = DeviceBuffer(ops, max_act * max_batch);
  bool ok = m->params_.valid() && m->grads_.valid() && m->workspace_.valid() &&
            m->dacts_[0].valid() && m->dacts_[1].valid();
  for (auto& b : m->acts_) ok = ok && b.valid();
  if (!ok)
    return dp::make_error(dp::Errc::limit, std::string("model: out of ") + ops.name() +
                                               " memory for batch " + std::to_string(max_batch) +
                                               "; use a smaller --batch");

  std::vector<float> host(off);
  Rng rng(seed);
  float* ws = m->workspace_.data();
  for (size_t i = 0; i < m->layers_.size(); ++i) {
    auto& l = m->layers_[i];
    l->init_params(rng, host.data() + m->offsets_[i]);
    l->bind(m->params_.data() + m->offsets_[i], m->grads_.data() + m->offsets_[i]);
    l->bind_workspace(ws);
    ws += l->workspace_floats(max_batch);
  }
  ops.upload(m->params_.data(), host.data(), off);
  return m;
}

std::string Model::describe() const {
  std::string s;
  for (auto& l : layers_) {
    if (!s.empty()) s += " | ";
    s += l->describe();
  }
  return s + " (" + std::to_string(param_count_) + " parameters)";
}

const float* Model::forward(int batch) {
  for (size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->forward(ops_, acts_[i].data(), acts_[i + 1].data(), batch);
  return acts_.back().data();
}

void Model::backward(int batch, const std::function<void(size_t)>& on_layer_done) {
  // dy of layer i lives in dacts_[(i + 1) % 2]; its dx goes to dacts_[i % 2].
  for (size_t i = layers_.size(); i-- > 0;) {
    float* dy = dacts_[(i + 1) % 2].data();
    float* dx = i == 0 ? nullptr : dacts_[i % 2].data();
    layers_[i]->backward(ops_, acts_[i].data(), acts_[i + 1].data(), dy, dx, batch);
    if (layers_[i]->param_count() > 0) on_layer_done(i);
  }
}

}  // namespace dpt
