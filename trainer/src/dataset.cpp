#include "dataset.hpp"

namespace dpt {
namespace {

// Fashion-MNIST training-set pixel mean and standard deviation (of x / 255).
constexpr float kMean = 0.2860f;
constexpr float kStd = 0.3530f;
constexpr int kClasses = 10;

dp::Result<Dataset> load_split(const std::string& dir, const std::string& prefix, size_t limit) {
  const std::string images_path = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labels_path = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  size_t n_images = 0, n_labels = 0;
  int rows = 0, cols = 0;
  auto images = read_idx_images(images_path, n_images, rows, cols);
  if (!images) return images.error();
  auto labels = read_idx_labels(labels_path, n_labels);
  if (!labels) return labels.error();
  if (n_images != n_labels)
    return dp::make_error(dp::Errc::invalid_argument,
                          "fashion-mnist: " + images_path + " has " + std::to_string(n_images) +
                              " images but " + labels_path + " has " + std::to_string(n_labels) +
                              " labels; the files do not belong together");
  for (size_t i = 0; i < n_labels; ++i)
    if ((*labels)[i] >= kClasses)
      return dp::make_error(dp::Errc::invalid_argument,
                            "fashion-mnist: " + labels_path + ": label " +
                                std::to_string((*labels)[i]) + " at index " + std::to_string(i) +
                                " is not a class 0-9");
  Dataset d;
  d.count = limit > 0 && limit < n_images ? limit : n_images;
  d.shape = Shape{rows, cols, 1};
  d.classes = kClasses;
  const size_t per = d.shape.size();
  d.x.resize(d.count * per);
  d.y.resize(d.count);
  for (size_t i = 0; i < d.count * per; ++i)
    d.x[i] = ((*images)[i] * (1.0f / 255.0f) - kMean) * (1.0f / kStd);
  for (size_t i = 0; i < d.count; ++i) d.y[i] = (*labels)[i];
  return d;
}

}  // namespace

dp::Result<FashionMnist> load_fashion_mnist(const std::string& dir, size_t train_limit) {
  auto train = load_split(dir, "train", train_limit);
  if (!train) return train.error();
  auto test = load_split(dir, "t10k", 0);
  if (!test) return test.error();
  return FashionMnist{std::move(*train), std::move(*test)};
}

Dataset make_regression(size_t count, uint64_t seed) {
  Dataset d;
  d.count = count;
  d.shape = Shape{1, 1, 1};
  d.x.resize(count);
  d.y.resize(count);
  Rng rng(seed ^ 0x5eed5eedULL);
  for (size_t i = 0; i < count; ++i) {
    d.x[i] = 2.0f * rng.uniform() - 1.0f;
    d.y[i] = 0.7f * d.x[i] + 0.3f;
  }
  return d;
}

}  // namespace dpt
