#include "unlaunched_step.hpp"

#include <sys/socket.h>

#include <string>

#include "slurm_headers.hpp"

namespace dp::spank {

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(22, 5, 0) && \
    SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(23, 5, 0)

namespace {

// Slurm's public headers offer no call that completes a step; srun does it
// with REQUEST_STEP_COMPLETE (srun_job.c _cancel_steps, step_launch.c
// _fail_step_tasks), which slurmctld accepts from the job's user. These are
// the message's types as src/common/slurm_protocol_defs.h declares them,
// identical from 22.05.0 through 23.02.7; slurm_msg_t_init's known values
// are checked below before anything is sent.
struct Forward {
  uint16_t cnt;
  uint16_t init;
  char* nodelist;
  uint32_t timeout;
  uint16_t tree_width;
};

struct SlurmMsg {
  slurm_addr_t address;
  void* auth_cred;
  int auth_index;
  uid_t auth_uid;
  bool auth_uid_set;
  uid_t restrict_uid;
  bool restrict_uid_set;
  uint32_t body_offset;
  void* buffer;
  void* conn;
  int conn_fd;
  void* data;
  uint32_t data_size;
  uint16_t flags;
  uint8_t hash_index;
  uint16_t msg_type;
  uint16_t protocol_version;
  Forward forward;
  void* forward_struct;
  slurm_addr_t orig_addr;
  void* ret_list;
};

struct StepCompleteMsg {
  uint32_t range_first;
  uint32_t range_last;
  slurm_step_id_t step_id;
  uint32_t step_rc;
  void* jobacct;
};

constexpr uint16_t kRequestStepComplete = 5016;  // 5001 + 15 in slurm_msg_type_t
constexpr uint16_t kForwardInit = 0xfffe;
constexpr uid_t kAuthNobody = 99;

// Room past our copy of the struct: a newer Slurm with a larger one would
// write into this slack, and the checks below would refuse to send.
struct GuardedMsg {
  SlurmMsg msg;
  unsigned char slack[1024];
};

}  // namespace

}  // namespace dp::spank

extern "C" {
void slurm_msg_t_init(void* msg);
int slurm_send_recv_controller_rc_msg(void* req, int* rc, void* comm_cluster_rec);
}

namespace dp::spank {

Result<void> complete_unlaunched_step(uint32_t job_id, uint32_t step_id, uint32_t nodes,
                                      uint32_t exit_code) {
  if (nodes == 0) return make_error(Errc::internal, "a step of no nodes cannot be completed");
  GuardedMsg g{};
  slurm_msg_t_init(&g.msg);
  if (g.msg.conn_fd != -1 || g.msg.msg_type != NO_VAL16 || g.msg.protocol_version != NO_VAL16 ||
      g.msg.auth_uid != kAuthNobody || g.msg.forward.init != kForwardInit)
    return make_error(Errc::internal,
                      "this Slurm's slurm_msg_t is not the one slurm-dp was written for");
  StepCompleteMsg req{};
  req.range_first = 0;
  req.range_last = nodes - 1;
  req.step_id.job_id = job_id;
  req.step_id.step_id = step_id;
  req.step_id.step_het_comp = NO_VAL;
  req.step_rc = exit_code;
  g.msg.msg_type = kRequestStepComplete;
  g.msg.data = &req;
  int rc = 0;
  const std::string step = std::to_string(job_id) + "." + std::to_string(step_id);
  if (slurm_send_recv_controller_rc_msg(&g.msg, &rc, nullptr) != 0)
    return make_error(Errc::connection, "cannot reach slurmctld to end the unlaunched step " +
                                            step + ": " + slurm_strerror(slurm_get_errno()));
  if (rc != SLURM_SUCCESS)
    return make_error(Errc::internal, "slurmctld did not end the unlaunched step " + step + ": " +
                                          slurm_strerror(rc));
  return {};
}

#else

// Another Slurm: its message layout is unknown here, so the step is left to
// Slurm (it ends with its job).
Result<void> complete_unlaunched_step(uint32_t, uint32_t, uint32_t, uint32_t) { return {}; }

#endif

}  // namespace dp::spank
