# The documentation stays true to the tree and to what it does (label unit:
# no cluster needed): every repository path that ARCHITECTURE.md, the
# READMEs, packaging/ADMIN.md and tests/README.md name exists; every test
# they name as showing a claim exists (ctest -N of this build; with the unit
# tests, whose names it lists); every slurm-dp: line they show is a line the
# e2e suite printed (tests/fixtures/slurm-dp-lines.txt, which the suite
# refreshes); ARCHITECTURE.md stays a short read.
add_test(NAME docs.named_paths_exist
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_paths.py ${PROJECT_SOURCE_DIR})
add_test(NAME docs.architecture_fits_1300_words
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_paths.py ${PROJECT_SOURCE_DIR}
                 --words-only --max-words ARCHITECTURE.md=1300)
add_test(NAME docs.slurm_dp_lines_shown
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_lines.py check ${PROJECT_SOURCE_DIR})
# A user under pressure reads the README through: 1 900 words at most; no
# table cell of the README or the admin guide runs past 40 words.
add_test(NAME docs.readme_fits_1900_words
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_paths.py ${PROJECT_SOURCE_DIR}
                 --words-only --max-words README.md=1900)
add_test(NAME docs.table_cells_fit
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_paths.py ${PROJECT_SOURCE_DIR}
                 --words-only --max-cell-words README.md=40 --max-cell-words packaging/ADMIN.md=40)
# The README's example output is the one its job script printed on the test
# cluster (e2e.ns.docs.readme_commands records it there).
add_test(NAME docs.readme_example_output
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/readme_example.py check ${PROJECT_SOURCE_DIR})
# docs/output.md's samples (--dp-explain, dp-top) are what a run printed
# (e2e spank.explain and obs.stacks_top record their shapes).
add_test(NAME docs.output_samples
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/docs/doc_samples.py check ${PROJECT_SOURCE_DIR})
set_tests_properties(docs.named_paths_exist docs.architecture_fits_1300_words
                     docs.slurm_dp_lines_shown docs.readme_fits_1900_words
                     docs.table_cells_fit docs.readme_example_output docs.output_samples
                     PROPERTIES LABELS unit)
get_property(_dp_every_unit_test GLOBAL PROPERTY DP_EVERY_UNIT_TEST)
if(DP_UNIT_TESTS AND _dp_every_unit_test)
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
  # The README's and ADMIN.md's Troubleshooting against this lane's Slurm:
  # srun's exit status per case (the README's table, its column for this
  # series) and where Slurm writes a plugin line's load errors.
  dp_e2e_scripts(PART docs MODES lo TIMEOUT 300 SCRIPTS exit_status plugin_load_errors
    ENVIRONMENT DP_DAEMON=$<TARGET_FILE:dp-rendezvousd>)
endif()
