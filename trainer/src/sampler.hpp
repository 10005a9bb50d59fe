// DistributedSampler semantics (PyTorch): one permutation per epoch seeded by
// (seed, epoch), identical on every rank; the tail that does not divide by the
// world size is dropped (drop_last) and rank r takes positions r, r+W, r+2W...
// Batches take consecutive samples of that slice; a partial batch is dropped,
// so world W with batch B visits exactly the samples of world 1 with batch W*B.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dpt {

class DistributedSampler {
 public:
  DistributedSampler(size_t dataset_size, int world_size, int rank, uint64_t seed,
                     bool shuffle = true)
      : n_(dataset_size), world_(world_size), rank_(rank), seed_(seed), shuffle_(shuffle) {}

  size_t samples_per_rank() const { return n_ / static_cast<size_t>(world_); }
  size_t batches_per_epoch(int batch) const {
    return samples_per_rank() / static_cast<size_t>(batch);
  }
  // This rank's dataset indices for the epoch, in visiting order.
  void indices(int64_t epoch, std::vector<uint32_t>& out) const;

 private:
  size_t n_;
  int world_, rank_;
  uint64_t seed_;
  bool shuffle_;
};

// Fisher-Yates with the trainer's portable generator.
void seeded_permutation(size_t n, uint64_t seed, std::vector<uint32_t>& out);

}  // namespace dpt
