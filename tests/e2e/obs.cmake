# Seeing the job, on the real cluster (label e2e): the start-up
# timing line of a 2x2 --dp-verbose step, the first failure named on every
# rank and in srun's last line, a hanging rank named within the site's bound,
# a straggler in dp-top and in the --dp-report file (libdp's counters and
# the node agents' looks agreeing), a slow rank of an unmodified program
# named and its recovery, healthy steps never named, dp-top refused for
# another user's step. dp_obs_worker is a small training loop linking libdp.
add_executable(dp_obs_worker ${CMAKE_CURRENT_LIST_DIR}/obs/obs_worker.cpp)
target_link_libraries(dp_obs_worker PRIVATE dp_comm)
dp_warnings(dp_obs_worker)
if(COMMAND dp_e2e_test)
  set(_obs_env DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
               DP_OBS_WORKER=$<TARGET_FILE:dp_obs_worker> DP_TOP=$<TARGET_FILE:dp-top>)
  dp_e2e_scripts(PART obs MODES lo ns TIMEOUT 300
    SCRIPTS timing_line first_failure foreign_report squatted_folder ENVIRONMENT ${_obs_env})
  # A hanging rank and a straggler are named from the ranks' own reports,
  # whatever the network: one cluster each.
  dp_e2e_scripts(PART obs MODES lo TIMEOUT 300 SCRIPTS hang ENVIRONMENT ${_obs_env})
  # dp-top --stacks on an unmodified DDP step: read by the agents, merged by the daemon.
  dp_e2e_scripts(PART obs MODES lo TIMEOUT 300 SCRIPTS stacks_top ENVIRONMENT ${_obs_env})
  # An NCCL hang named from PyTorch's flight recorder, a stand-in recorder on CPUs (issue 57).
  dp_e2e_scripts(PART obs MODES lo TIMEOUT 300 SCRIPTS flight_recorder ENVIRONMENT ${_obs_env})
  # Ranks in containers of their own (a user and mount namespace, Debian 11's
  # root) read from the host with their frames.
  dp_e2e_scripts(PART obs MODES lo TIMEOUT 300 SCRIPTS container_stacks ENVIRONMENT ${_obs_env})
  set_tests_properties(e2e.lo.obs.container_stacks PROPERTIES SKIP_RETURN_CODE 77)
  # A rank's own text (its functions' names, its mapped paths) shown escaped.
  dp_e2e_scripts(PART obs MODES lo TIMEOUT 300 SCRIPTS forged_names ENVIRONMENT ${_obs_env})
  # Its controls: healthy steps with long computes and slow saves get no verdict.
  dp_e2e_scripts(PART obs MODES lo TIMEOUT 300 SCRIPTS hang_healthy ENVIRONMENT ${_obs_env})
  # A stalled unmodified DDP step named from its ranks' stacks (and ended with --dp-on-hang=end).
  dp_e2e_scripts(PART obs MODES ns TIMEOUT 420 SCRIPTS hang_named ENVIRONMENT ${_obs_env})
  dp_e2e_scripts(PART obs MODES ns TIMEOUT 300 SCRIPTS straggler_top ENVIRONMENT ${_obs_env})
  # A slow rank of an unmodified DDP step named from its node agents' looks,
  # and its recovery (an extra sleep, a busy process on its CPU, torchrun's
  # worker); and the controls: healthy, jittery and checkpointing steps unnamed.
  dp_e2e_scripts(PART obs MODES ns TIMEOUT 420 SCRIPTS straggler_named ENVIRONMENT ${_obs_env})
  # It tells rank 3 from its node-mate by their shares of the step: run
  # beside unit tests on a 2-core machine, rank 2 lagged too and the verdict
  # named both (a fresh-clone CI run, 2026-11-29). It runs alone.
  set_tests_properties(e2e.ns.obs.straggler_named PROPERTIES PROCESSORS 2)
  dp_e2e_scripts(PART obs MODES lo TIMEOUT 420 SCRIPTS straggler_healthy ENVIRONMENT ${_obs_env})
  # A rank behind its own input (a slow DataLoader, slow reads) named, not the
  # root of the broadcast the others wait in, and not recovered while behind.
  dp_e2e_scripts(PART obs MODES lo TIMEOUT 420 SCRIPTS straggler_input ENVIRONMENT ${_obs_env})
endif()
