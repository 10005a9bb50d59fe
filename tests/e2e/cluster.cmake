# The local Slurm clusters the e2e tests run against, as ctest fixtures:
#   cluster_lo  slurmd nodes sharing loopback       (ports DP_CLUSTER_PORT_BASE + 0..24)
#   cluster_ns  one network namespace per node      (ports DP_CLUSTER_PORT_BASE + 25..49)
# A plain `ctest` brings each up before its first test and down after its last.
#
# Parts register their tests with
#   dp_e2e_test(NAME <name> MODES lo ns COMMAND <cmd...> [TIMEOUT s] [ENVIRONMENT k=v ...]
#               [LABELS label...])
# which adds e2e.<mode>.<name> (label e2e, and LABELS) with DP_CLUSTER_DIR, DP_CLUSTER_MODE,
# DP_CLUSTER_PORT_BASE, DP_CLUSTER (the script), DP_BUILD_DIR and DP_SOURCE_DIR
# set; <name> is <part>.<feature>. Scripts source tests/e2e/lib.sh for the
# cluster environment and helpers. Tests that need no shared cluster (they
# start their own, or none) are named e2e.own.<part>.<feature>.

set(DP_CLUSTER_PORT_BASE 17000 CACHE STRING
    "First of the 50 ports the e2e clusters use (lo: +0..24, ns: +25..49); change it when another tree's clusters run on this machine")
# Site settings for the plugin line of the fixtures' plugstack.conf.d (key=value
# list, e.g. daemon=/path); empty by default, tests set what they need.
set(DP_CLUSTER_SITE_ARGS "" CACHE STRING "key=value words for the plugin line of the e2e clusters")

if(NOT DEFINED DP_CLUSTER)
  set(DP_CLUSTER ${PROJECT_SOURCE_DIR}/tests/cluster/dp-cluster)
endif()
set(DP_E2E_DIR ${CMAKE_CURRENT_LIST_DIR})

set(_dp_cluster_plugin "")
if(TARGET spank_dp)
  set(_dp_cluster_plugin $<TARGET_FILE:spank_dp>)
endif()

# State folders stay short: unix socket paths under them must fit in 108 bytes.
set(_dp_cluster_base_lo ${DP_CLUSTER_PORT_BASE})
math(EXPR _dp_cluster_base_ns "${DP_CLUSTER_PORT_BASE} + 25")

separate_arguments(_dp_cluster_site_args UNIX_COMMAND "${DP_CLUSTER_SITE_ARGS}")

foreach(mode lo ns)
  set(dir ${CMAKE_BINARY_DIR}/e2e-cluster-${mode})
  set(DP_CLUSTER_DIR_${mode} ${dir})
  set(env DP_CLUSTER_DIR=${dir} DP_CLUSTER_MODE=${mode}
          DP_CLUSTER_PORT_BASE=${_dp_cluster_base_${mode}}
          DP_CLUSTER_PLUGIN=${_dp_cluster_plugin})

  add_test(NAME e2e.${mode}.cluster.up
           COMMAND ${DP_E2E_DIR}/cluster/fixture_up.sh ${DP_CLUSTER} ${_dp_cluster_site_args})
  set_tests_properties(e2e.${mode}.cluster.up PROPERTIES
    LABELS e2e FIXTURES_SETUP cluster_${mode} RESOURCE_LOCK cluster_${mode}
    TIMEOUT 120 ENVIRONMENT "${env}")

  # down, then check that nothing of the cluster is left (processes, namespaces, links).
  add_test(NAME e2e.${mode}.cluster.down
           COMMAND ${DP_E2E_DIR}/cluster/fixture_down.sh ${DP_CLUSTER})
  set_tests_properties(e2e.${mode}.cluster.down PROPERTIES
    LABELS e2e FIXTURES_CLEANUP cluster_${mode} RESOURCE_LOCK cluster_${mode}
    TIMEOUT 120 ENVIRONMENT "${env}")
endforeach()

# The end-to-end subsets of the Debian lanes (scripts/test-debian-lane LANE
# runs `ctest -L LANE` in that lane's root): NAME@MODE gives the test the
# lane's label in that mode. The Debian 12 lane runs every test in both
# modes; these lanes ask what changes with their Slurm, compiler and PyTorch,
# which the network mode does not, so each test runs once, the two clusters'
# shares about even (they run side by side). A test that runs in one mode
# only is listed there. No lane repeats what another proves on the same code:
# testing's (Slurm 26.05, PyTorch 2.14) is the user-facing subset; Debian 13
# keeps what its Slurm 24.11 and PyTorch 2.6 could break alone.
set(DP_E2E_DEBIAN_TESTING
  spank.env_vars@lo               # the wiring: every variable of every task, odd layouts
  spank.batch_alloc@ns            # sbatch --dp-tiles
  spank.tiles_request@lo
  agent.step_store@ns             # unmodified DDP per task, rank 0's store and the step's (torch 2.14)
  agent.store_requests@lo         # 8 MiB, multi_set, a 6 KiB key, 64 MiB refused, a timed-out wait (2.14)
  spank.launcher_torchrun@lo      # torchrun 2.14 per node
  agent.ddp_kill_rank@lo          # a killed rank named, every node ends its tasks
  agent.kill_wait@lo              # 26.05's PMI2 end after KillWait: slurm-dp's within kill_grace
  agent.ddp_freeze_node@ns        # a frozen node ended through slurmctld (26.05's RPC)
  agent.step_signals@lo           # scancel --signal, --signal=USR1@T
  agent.step_interrupt@lo         # srun's Ctrl-C once and twice
  agent.ignore_signals@lo         # 26.05's srun --ignore-signals
  agent.ddp_outage@ns             # a 10 s stall survived, a lost node named
  spank.step_ports@ns             # --dp-ports: leased, passed and Slurm-reserved
  spank.jax_coordinator@lo        # JAX's variables
  spank.late_bind@ns              # a late JAX coordinator and --dp-ports against a stranger's probe
  spank.lease_cap@lo              # the lease share counts ports; holders' uids named in a refusal
  spank.forged_resv_ports@lo      # the step's reservation from 26.05's slurmctld, asked by slurmstepd
  apps.accelerate@ns              # accelerate launch per node, Accelerator() per task
  apps.transformers_trainer@lo    # a transformers Trainer, 2x2 against one node's torchrun
  obs.stacks_top@lo               # dp-top --stacks: Python 3.14's frames of every rank
  obs.forged_names@lo             # a forged co_qualname (3.14's frames) shown escaped
  obs.hang_named@ns               # a stalled DDP step named by its ranks' Python 3.14 frames, per task and torchrun's workers
  obs.hang_healthy@lo             # no verdict on healthy steps judged by 3.14's frames (compute, slow saves)
  docs.exit_status@lo             # srun's exit status per case: the README's 26.05 column
  docs.plugin_load_errors@lo      # 26.05's messages for an unloadable plugin line, and where they land
  obs.straggler_named@ns          # a slow rank named, where the others wait from 3.14's frames
  obs.straggler_input@lo          # a rank behind its DataLoader or its reads named, from 3.14's frames
)
set(DP_E2E_DEBIAN13
  spank.env_vars@lo               # the wiring: every variable of every task
  agent.ddp_freeze_node@ns        # a frozen node ended through slurmctld (24.11's RPC)
  spank.master_socket@ns          # MASTER_PORT's socket into torch 2.6's TCPStore
  spank.launcher_torchrun@lo      # torchrun, with the test's no_libuv shim for Debian's torch 2.6
  spank.launcher_kill@ns          # torch 2.6's torchrun reaps its workers at once
  agent.step_signals@lo           # scancel --signal, --signal=USR1@T: torch 2.6's torchrun too
  agent.step_store@ns             # the step's PyTorch store: torch 2.6's clients
  agent.store_requests@lo         # the store's limits and a timed-out wait: torch 2.6's clients
  spank.step_ports@lo             # 24.11's --resv-ports (the hold to the listen: testing's late_bind)
  obs.hang_named@ns               # a stalled DDP step named by its ranks' Python 3.13 frames
  docs.exit_status@lo             # srun's exit status per case: the README's 24.11 column
  docs.plugin_load_errors@lo      # 24.11's messages for an unloadable plugin line, and where they land
)

function(dp_e2e_test)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME;TIMEOUT" "MODES;COMMAND;ENVIRONMENT;LABELS")
  if(NOT arg_NAME OR NOT arg_COMMAND)
    message(FATAL_ERROR "dp_e2e_test: NAME and COMMAND are required")
  endif()
  if(NOT arg_MODES)
    set(arg_MODES lo ns)
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  foreach(mode IN LISTS arg_MODES)
    if(NOT mode MATCHES "^(lo|ns)$")
      message(FATAL_ERROR "dp_e2e_test(${arg_NAME}): MODES takes lo and/or ns, not '${mode}'")
    endif()
    set(test e2e.${mode}.${arg_NAME})
    add_test(NAME ${test} COMMAND ${arg_COMMAND})
    # The fixture's own variables come last so a caller cannot point a test at
    # another cluster by accident.
    set(env ${arg_ENVIRONMENT}
        DP_CLUSTER_DIR=${DP_CLUSTER_DIR_${mode}} DP_CLUSTER_MODE=${mode}
        DP_CLUSTER_PORT_BASE=${_dp_cluster_base_${mode}} DP_CLUSTER=${DP_CLUSTER}
        DP_BUILD_DIR=${CMAKE_BINARY_DIR} DP_SOURCE_DIR=${PROJECT_SOURCE_DIR})
    set(labels e2e ${arg_LABELS})
    if("${arg_NAME}@${mode}" IN_LIST DP_E2E_DEBIAN13)
      list(APPEND labels debian13)
    endif()
    if("${arg_NAME}@${mode}" IN_LIST DP_E2E_DEBIAN_TESTING)
      list(APPEND labels debian-testing)
    endif()
    set_tests_properties(${test} PROPERTIES
      LABELS "${labels}"
      FIXTURES_REQUIRED cluster_${mode}
      RESOURCE_LOCK cluster_${mode}
      TIMEOUT ${arg_TIMEOUT}
      ENVIRONMENT "${env}")
  endforeach()
endfunction()

# One test per script of a part, PART/<script>.sh as e2e.<mode>.PART.<script>;
# the other arguments are dp_e2e_test's.
function(dp_e2e_scripts)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "PART;TIMEOUT" "SCRIPTS;MODES;ENVIRONMENT;LABELS")
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)  # dp_e2e_test's default, passed on explicitly
  endif()
  foreach(s IN LISTS arg_SCRIPTS)
    dp_e2e_test(NAME ${arg_PART}.${s} MODES ${arg_MODES} TIMEOUT ${arg_TIMEOUT}
      ENVIRONMENT ${arg_ENVIRONMENT} LABELS ${arg_LABELS}
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/${arg_PART}/${s}.sh)
  endforeach()
endfunction()

# Tests of the cluster itself.
foreach(t hostnames srun_help sbatch_option user_jobs ns_network)
  set(modes lo ns)
  if(t STREQUAL ns_network)
    set(modes ns)
  endif()
  dp_e2e_test(NAME cluster.${t} MODES ${modes} TIMEOUT 120
              COMMAND ${DP_E2E_DIR}/cluster/${t}.sh)
endforeach()
dp_e2e_test(NAME cluster.refuse_taken_port MODES lo ns TIMEOUT 120
            COMMAND ${DP_E2E_DIR}/cluster/refuse_taken_port.sh)
# Needs no running cluster: a non-root caller is refused before anything starts.
add_test(NAME e2e.own.cluster.refuse_non_root COMMAND ${DP_E2E_DIR}/cluster/refuse_non_root.sh ${DP_CLUSTER})
set_tests_properties(e2e.own.cluster.refuse_non_root PROPERTIES LABELS e2e TIMEOUT 60)
