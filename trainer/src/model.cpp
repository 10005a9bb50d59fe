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
  auto layers = m->add_layers(spec);
  DP_TRY(layers);
  auto buffers = m->allocate(max_batch, extra_grad_floats);
  DP_TRY(buffers);
  m->init_params(max_batch, seed);
  return m;
}

dp::Result<void> Model::add_layers(const ModelSpec& spec) {
  Shape s = spec.input;
  input_shape_ = s;
  auto add = [&](std::unique_ptr<Layer> l) {
    s = l->output_shape();
    layers_.push_back(std::move(l));
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
  output_shape_ = s;
  return {};
}

dp::Result<void> Model::allocate(int max_batch, size_t extra_grad_floats) {
  // Reverse layout: the last layer's parameters come first.
  offsets_.assign(layers_.size(), 0);
  size_t off = 0, workspace = 0, max_act = 0;
  for (size_t i = layers_.size(); i-- > 0;) {
    offsets_[i] = off;
    off += layers_[i]->param_count();
    workspace += layers_[i]->workspace_floats(max_batch);
  }
  param_count_ = off;
  params_ = DeviceBuffer(ops_, off);
  grads_ = DeviceBuffer(ops_, off + extra_grad_floats);
  workspace_ = DeviceBuffer(ops_, std::max<size_t>(workspace, 1));
  Shape a = input_shape_;
  acts_.emplace_back(ops_, a.size() * max_batch);
  max_act = a.size();
  for (auto& l : layers_) {
    a = l->output_shape();
    max_act = std::max(max_act, a.size());
    acts_.emplace_back(ops_, a.size() * max_batch);
  }
  dacts_[0] = DeviceBuffer(ops_, max_act * max_batch);
  dacts_[1] = DeviceBuffer(ops_, max_act * max_batch);
  bool ok = params_.valid() && grads_.valid() && workspace_.valid() && dacts_[0].valid() &&
            dacts_[1].valid();
  for (auto& b : acts_) ok = ok && b.valid();
  if (!ok)
    return dp::make_error(dp::Errc::limit, std::string("model: out of ") + ops_.name() +
                                               " memory for batch " + std::to_string(max_batch) +
                                               "; use a smaller --batch");
  return {};
}

void Model::init_params(int max_batch, uint64_t seed) {
  std::vector<float> host(param_count_);
  Rng rng(seed);
  float* ws = workspace_.data();
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto& l = layers_[i];
    l->init_params(rng, host.data() + offsets_[i]);
    l->bind(params_.data() + offsets_[i], grads_.data() + offsets_[i]);
    l->bind_workspace(ws);
    ws += l->workspace_floats(max_batch);
  }
  ops_.upload(params_.data(), host.data(), param_count_);
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
