/* A stand-in for a container plugin's image pull in the test cluster's
 * plugstack: in user_init (where pyxis imports and starts the image, after
 * every plugin's init_post_opt) it sleeps DP_TEST_LATE_MS milliseconds on
 * the step's node DP_TEST_LATE_NODEID, so that node's tasks start that much
 * later than the others'. It acts only in a step whose environment has both,
 * and writes DP_TEST_LATE_MARK.<node id> when done, so a test knows it ran. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <slurm/spank.h>

SPANK_PLUGIN(dp_test_late_node, 1)

static long env_number(spank_t sp, const char* name) {
  char text[32] = "";
  if (spank_getenv(sp, name, text, sizeof text) != ESPANK_SUCCESS) return -1;
  char* end = NULL;
  const long n = strtol(text, &end, 10);
  return end != text && *end == '\0' && n >= 0 ? n : -1;
}

int slurm_spank_user_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  const long node = env_number(sp, "DP_TEST_LATE_NODEID");
  const long ms = env_number(sp, "DP_TEST_LATE_MS");
  uint32_t me = 0;
  if (node < 0 || ms < 0 || spank_get_item(sp, S_JOB_NODEID, &me) != ESPANK_SUCCESS) return 0;
  if ((long)me != node) return 0;
  struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
  char mark[4096] = "";
  if (spank_getenv(sp, "DP_TEST_LATE_MARK", mark, sizeof mark) != ESPANK_SUCCESS) return 0;
  char path[4200];
  snprintf(path, sizeof path, "%s.%u", mark, me);
  FILE* f = fopen(path, "w");
  if (f == NULL) return -1;
  fprintf(f, "%ld\n", ms);
  return fclose(f) == 0 ? 0 : -1;
}
