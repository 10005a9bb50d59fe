/* Uses libdp's C API, built with pkg-config. */
#include <dp/dp.h>
#include <stdio.h>

int main(void) {
  dp_comm* comm = NULL;
  if (dp_init(&comm) != DP_OK) {
    fprintf(stderr, "dp_init: %s\n", dp_last_error());
    return 1;
  }
  double v[3] = {1.0, 2.0, 3.0};
  dp_work* w = NULL;
  if (dp_all_reduce_async(comm, v, 3, DP_F64, DP_AVG, &w) != DP_OK || dp_work_wait(w) != DP_OK) {
    fprintf(stderr, "all_reduce: %s\n", dp_last_error());
    return 1;
  }
  int bad = dp_broadcast(comm, v, 3, 99, 0); /* not a dtype: must fail with a message */
  printf("c consumer ok: rank %d of %d, backend %s, bad dtype -> %d (%s)\n", dp_rank(comm),
         dp_size(comm), dp_backend_name(comm), bad, dp_last_error());
  dp_finalize(comm);
  return bad == DP_EINVAL ? 0 : 1;
}
