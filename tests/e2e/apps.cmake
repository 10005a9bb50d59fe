# Real programs from the Debian archive, unmodified, under srun
# --dp-world=auto: Hugging Face accelerate (per node and per task) and a
# transformers Trainer. Debian testing's lane has them (scripts/debian-root
# installs them there); where they are missing a test exits 77 and ctest
# shows it skipped, with the reason on its output.
dp_e2e_scripts(PART apps MODES lo ns TIMEOUT 400
  SCRIPTS accelerate transformers_trainer
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
# An MPI program (mpi4py) under srun --mpi=pmix: one world of slurm-dp's ranks.
dp_e2e_scripts(PART apps MODES ns TIMEOUT 200
  SCRIPTS mpi4py
  ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
set_tests_properties(e2e.ns.apps.mpi4py PROPERTIES SKIP_RETURN_CODE 77)
foreach(mode lo ns)
  set_tests_properties(e2e.${mode}.apps.accelerate e2e.${mode}.apps.transformers_trainer
    PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
