# The documentation stays true to the tree and to what it does (label unit:
# no cluster needed): every repository path that ARCHITECTURE.md, the
# READMEs, packaging/ADMIN.md and tests/README.md name exists; every test
# they name as showing a claim exists (ctest -N of this build; with the unit
# tests, whose names it lists); every slurm-dp: line they show is a line the
# e2e suite printed (tests/fixtures/slurm-dp-lines.txt, which the suite
# refreshes); ARCHITECTURE.md stays a short read.
add_test(NAME docs.named_paths_exist
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_paths.py ${PROJECT_SOURCE_DIR})
add_test(NAME docs.architecture_fits_1400_words
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_paths.py ${PROJECT_SOURCE_DIR}
                 --words-only --max-words ARCHITECTURE.md=1400)
add_test(NAME docs.slurm_dp_lines_shown
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_lines.py check ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.named_paths_exist docs.architecture_fits_1400_words
                     docs.slurm_dp_lines_shown PROPERTIES LABELS unit)
if(DP_UNIT_TESTS)
  add_test(NAME docs.named_tests_exist
           COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_tests.py ${PROJECT_SOURCE_DIR}
                   ${CMAKE_BINARY_DIR})
  set_tests_properties(docs.named_tests_exist PROPERTIES LABELS unit)
endif()

# The documentation's commands (label e2e): every command of the README's
# shell blocks runs against the cluster (or names the test that covers it),
# and the hint scripts/demo prints works when pasted into a fresh shell.
if(COMMAND dp_e2e_test)
  # The commands are the same on either network: the namespaced cluster only.
  dp_e2e_test(NAME docs.readme_commands MODES ns TIMEOUT 600
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
                DP_TRAINER=$<TARGET_FILE:dp-trainer>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/readme_commands.sh)
  dp_e2e_test(NAME docs.demo_hint MODES lo ns TIMEOUT 120
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/demo_hint.sh)
endif()
