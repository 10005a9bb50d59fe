// In-memory datasets: Fashion-MNIST from IDX files and the synthetic
// regression task. Features are normalised floats, targets are floats
// (class indices for classification).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dp/result.hpp"
#include "layers.hpp"

namespace dpt {

struct Dataset {
  size_t count = 0;
  Shape shape;           // per sample
  int classes = 0;       // 0: regression
  std::vector<float> x;  // count * shape.size()
  std::vector<float> y;  // count
};

struct FashionMnist {
  Dataset train, test;
};

// Raw IDX tensors (gzip or plain). Errors name the file and the fix.
dp::Result<std::vector<uint8_t>> read_idx_images(const std::string& path, size_t& count, int& rows,
                                                 int& cols);
dp::Result<std::vector<uint8_t>> read_idx_labels(const std::string& path, size_t& count);

// Loads {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from dir. limit > 0
// keeps only the first `limit` training samples (quick runs and tests).
dp::Result<FashionMnist> load_fashion_mnist(const std::string& dir, size_t train_limit = 0);

// Points on y = 0.7 x + 0.3 with x uniform in [-1, 1], seeded.
Dataset make_regression(size_t count, uint64_t seed);

}  // namespace dpt
