#!/usr/bin/env bash
# A benchmark that needs a Slurm cluster, once in its smoke mode on this
# test's cluster with the daemon under test: smoke.sh BENCH_SCRIPT ARGS...
. "$(dirname "$0")/../lib.sh"
site
"$@" || fail "$(basename "$(dirname "$1")")/$(basename "$1") $* failed"
pass "$(basename "$(dirname "$1")")/$(basename "$1") ran in smoke mode"
