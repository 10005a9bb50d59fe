/* A stand-in for pyxis in the test cluster's plugstack: in task_init it
 * overwrites the variables a container image's environment carries (NGC
 * images with enroot's PyTorch hook set MASTER_ADDR, MASTER_PORT as
 * 61000 + job id % 4536, WORLD_SIZE, RANK), as pyxis's import of that
 * environment does. It acts only in a step whose environment has
 * DP_TEST_CONTAINER_ENV=1, and marks the task so that a test knows it ran. */
#include <stdint.h>
#include <stdio.h>

#include <slurm/spank.h>

SPANK_PLUGIN(dp_test_container_env, 1)

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  char on[8] = "";
  if (spank_getenv(sp, "DP_TEST_CONTAINER_ENV", on, sizeof on) != ESPANK_SUCCESS || on[0] != '1')
    return 0;
  uint32_t job = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) return -1;
  char port[16];
  snprintf(port, sizeof port, "%u", 61000u + job % 4536u);
  if (spank_setenv(sp, "MASTER_ADDR", "container-master", 1) != ESPANK_SUCCESS ||
      spank_setenv(sp, "MASTER_PORT", port, 1) != ESPANK_SUCCESS ||
      spank_setenv(sp, "WORLD_SIZE", "1", 1) != ESPANK_SUCCESS ||
      spank_setenv(sp, "RANK", "0", 1) != ESPANK_SUCCESS ||
      spank_setenv(sp, "DP_TEST_CONTAINER_HOOK", port, 1) != ESPANK_SUCCESS)
    return -1;
  return 0;
}
