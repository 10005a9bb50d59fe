/* A plugin before slurm-dp in the test cluster's plugstack that makes every
 * task but rank 0 come late to slurm-dp's task_init: in its own task_init it
 * sleeps DP_TEST_LATE_TASK_MS (the step's environment) first, as a loaded
 * node or a slow plugin (a container's set-up) does. Without the variable it
 * does nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <slurm/spank.h>

SPANK_PLUGIN(dp_test_late_task, 1)

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  char ms[16] = "";
  uint32_t rank = 0;
  if (spank_getenv(sp, "DP_TEST_LATE_TASK_MS", ms, sizeof ms) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS || rank == 0)
    return 0;
  const long late = strtol(ms, NULL, 10);
  struct timespec t = {late / 1000, (late % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
  return 0;
}
