// The short smoke run of a libFuzzer target without libFuzzer (so every
// build runs it through ctest): the seeds given as arguments, then
// pseudo-random mutations of them (flips, inserts, cuts, splices) for a
// fixed count, fed to LLVMFuzzerTestOneInput. A crash or abort is the
// finding; scripts/fuzz-daemon runs the same targets under libFuzzer.
//   <target>_smoke [--runs N] [--hex] SEED...   (--hex: the seeds after it are hex)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::string unhex(const char* text) {
  std::string out;
  for (size_t i = 0; text[i] != '\0' && text[i + 1] != '\0'; i += 2)
    out.push_back(static_cast<char>(std::strtoul(std::string(text + i, 2).c_str(), nullptr, 16)));
  return out;
}

std::string mutate(std::string s, const std::vector<std::string>& seeds, std::mt19937& rng) {
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < steps; ++i) {
    const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 6) {
      case 0:
        if (!s.empty()) s[rng() % s.size()] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1: s.insert(at, 1, static_cast<char>(rng() % 256)); break;
      case 2: s.insert(at, 1, "0123456789,-=:|.() x\n"[rng() % 21]); break;
      case 3: s = s.substr(0, at); break;
      case 4: s.insert(at, seeds[rng() % seeds.size()]); break;
      default: s.insert(at, std::string(1 + rng() % 64, static_cast<char>('0' + rng() % 10)));
    }
    if (s.size() > 4096) s.resize(4096);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 20'000;
  std::vector<std::string> seeds;
  bool hex = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--hex") == 0) {
      hex = true;
    } else {
      seeds.emplace_back(hex ? unhex(argv[i]) : std::string(argv[i]));
    }
  }
  seeds.emplace_back();
  std::mt19937 rng(20261123);  // fixed: a failure reproduces
  for (const auto& s : seeds)
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  for (long i = 0; i < runs; ++i) {
    const std::string in = mutate(seeds[rng() % seeds.size()], seeds, rng);
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(in.data()), in.size());
  }
  std::printf("%ld inputs, no crash\n", runs + static_cast<long>(seeds.size()));
  return 0;
}
