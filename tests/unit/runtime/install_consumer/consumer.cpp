// Uses libdp's C++ API as an outside program would.
#include <dp/dp.h>
#include <dp/communicator.hpp>

#include <cstdio>

int main() {
  auto comm = dp::init();
  if (!comm) {
    std::fprintf(stderr, "init failed: %s: %s\n", dp::errc_name(comm.error().code),
                 comm.error().message.c_str());
    return 1;
  }
  float v[2] = {1.0f, 2.0f};
  if (!(*comm)->all_reduce(v, 2, dp::DType::f32, dp::ReduceOp::sum).ok()) return 1;
  std::printf("cxx consumer ok: libdp %s, rank %d of %d, backend %s, sum %g\n", dp_version(),
              (*comm)->rank(), (*comm)->size(), dp::backend_name((*comm)->backend()),
              static_cast<double>(v[0] + v[1]));
  return 0;
}
