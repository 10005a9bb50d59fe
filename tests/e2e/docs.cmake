# The documentation stays true to the tree (label unit: no cluster needed):
# every repository path that ARCHITECTURE.md, the READMEs, packaging/ADMIN.md
# and tests/README.md name exists, and ARCHITECTURE.md stays a short read.
add_test(NAME docs.named_paths_exist
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_paths.py ${PROJECT_SOURCE_DIR})
add_test(NAME docs.architecture_fits_1500_words
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_paths.py ${PROJECT_SOURCE_DIR}
                 --words-only --max-words ARCHITECTURE.md=1500)
set_tests_properties(docs.named_paths_exist docs.architecture_fits_1500_words
                     PROPERTIES LABELS unit)

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
