#include "sampler.hpp"

#include <numeric>
#include <utility>

#include "layers.hpp"

namespace dpt {

void seeded_permutation(size_t n, uint64_t seed, std::vector<uint32_t>& out) {
  out.resize(n);
  std::iota(out.begin(), out.end(), 0u);
  Rng rng(seed);
  for (size_t i = n; i > 1; --i) std::swap(out[i - 1], out[rng.below(i)]);
}

void DistributedSampler::indices(int64_t epoch, std::vector<uint32_t>& out) const {
  std::vector<uint32_t> all;
  if (shuffle_) {
    // Mixing the epoch into the seed like PyTorch's seed + epoch, but
    // through the generator so nearby seeds do not share epochs.
    seeded_permutation(n_, seed_ * 0x100000001b3ULL + static_cast<uint64_t>(epoch), all);
  } else {
    all.resize(n_);
    std::iota(all.begin(), all.end(), 0u);
  }
  const size_t per = samples_per_rank();
  out.resize(per);
  for (size_t i = 0; i < per; ++i) out[i] = all[static_cast<size_t>(rank_) + i * world_];
}

}  // namespace dpt
