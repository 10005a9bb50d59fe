/* slurm-dp runtime, C API: for C programs and other languages' FFIs.
 *
 * Every function that can fail returns 0 on success or a positive DP_E*
 * code; dp_last_error() then gives the one-line message (per thread).
 * No C++ exception ever leaves these functions. */
#ifndef SLURM_DP_DP_H
#define SLURM_DP_DP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dp_comm dp_comm;
typedef struct dp_work dp_work;

/* Same values as dp::Errc. */
enum dp_status {
  DP_OK = 0,
  DP_EINVAL = 1, /* bad option, setting or environment value */
  DP_ETIMEOUT = 2,
  DP_EABORTED = 3, /* the job was aborted: a rank died or called abort */
  DP_EUNAUTHORIZED = 4,
  DP_EPROTOCOL = 5,
  DP_ELIMIT = 6,
  DP_ENOTFOUND = 7,
  DP_ECONFLICT = 8,
  DP_ECONNECTION = 9,
  DP_EUNAVAILABLE = 10, /* backend or device not usable here */
  DP_EINTERNAL = 11
};

enum dp_dtype { DP_F32 = 0, DP_F64 = 1, DP_F16 = 2, DP_BF16 = 3, DP_I32 = 4, DP_I64 = 5 };
enum dp_reduce_op { DP_SUM = 0, DP_AVG = 1 };
enum dp_backend {
  DP_BACKEND_AUTO = 0,
  DP_BACKEND_GLOO = 1,
  DP_BACKEND_NCCL = 2,
  DP_BACKEND_SINGLE = 3
};

const char* dp_version(void);
/* Message of this thread's last failed call ("" if none). */
const char* dp_last_error(void);

/* From the environment (srun --dp-world=auto, torchrun-style, or nothing:
 * world 1). backend: enum dp_backend; timeout_ms <= 0: the default. */
int dp_init(dp_comm** out);
int dp_init_with(int backend, int timeout_ms, dp_comm** out);
void dp_finalize(dp_comm* comm); /* NULL is fine */

int dp_rank(const dp_comm* comm);
int dp_size(const dp_comm* comm);
const char* dp_backend_name(const dp_comm* comm);

int dp_all_reduce(dp_comm* comm, void* buf, size_t count, int dtype, int op);
/* *out must be passed to dp_work_wait exactly once, which frees it. */
int dp_all_reduce_async(dp_comm* comm, void* buf, size_t count, int dtype, int op, dp_work** out);
int dp_work_wait(dp_work* work);
int dp_broadcast(dp_comm* comm, void* buf, size_t count, int dtype, int root);
/* recv holds dp_size() * count elements, rank-major. */
int dp_all_gather(dp_comm* comm, const void* send, void* recv, size_t count, int dtype);
int dp_barrier(dp_comm* comm);

#ifdef __cplusplus
}
#endif

#endif /* SLURM_DP_DP_H */
