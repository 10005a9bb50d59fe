# dp-trainer on the real local cluster (label e2e): srun --dp-world=auto with
# the plugin loaded, Gloo through the plugin's daemon, jobs run as `dptest`.
dp_e2e_scripts(PART trainer MODES lo TIMEOUT 300
  SCRIPTS mlp_accuracy preempt_resume demo
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_TRAINER=$<TARGET_FILE:dp-trainer>)
# scripts/gpu-check without a GPU: the same checks with Gloo in NCCL's place
# (world 2 against world 1, repeatability, a killed rank), so the command a
# GPU machine runs is known to work before one is at hand. No cluster.
add_test(NAME trainer.gpu_check_dry_run
         COMMAND ${PROJECT_SOURCE_DIR}/scripts/gpu-check --cpu --build ${PROJECT_BINARY_DIR})
set_tests_properties(trainer.gpu_check_dry_run PROPERTIES LABELS e2e TIMEOUT 600 RUN_SERIAL ON)
# kill -9 of rank 2 in a 2x2 trainer step: the survivors exit naming it, none
# by a signal (in both network modes and in the Debian 13 lane: gloo differs).
dp_e2e_test(NAME trainer.kill_rank MODES lo ns TIMEOUT 300
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd> DP_TRAINER=$<TARGET_FILE:dp-trainer>
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/trainer/kill_rank.sh)
