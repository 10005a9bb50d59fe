#!/usr/bin/env bash
# dp-cluster refuses up, down and plugstack for a non-root caller, with one
# clear line, before touching anything.
#   refuse_non_root.sh <dp-cluster>
set -euo pipefail
cluster=$1
fail() { echo "FAIL [refuse_non_root]: $*" >&2; exit 1; }
dir=/tmp/dp-nonroot.$$
for cmd in up down plugstack; do
  rc=0
  out=$(cd / && runuser -u nobody -- env DP_CLUSTER_DIR="$dir" "$cluster" "$cmd" 2>&1) || rc=$?
  ((rc != 0)) || fail "$cmd as nobody should fail, got exit 0: $out"
  [[ $out == *"must run as root"* ]] || fail "$cmd as nobody: expected 'must run as root', got: $out"
  [[ $(wc -l <<<"$out") -eq 1 ]] || fail "$cmd as nobody: expected one line, got: $out"
done
[[ ! -e $dir ]] || fail "refused commands created $dir"
echo "ok [refuse_non_root]: up, down and plugstack refuse a non-root caller with one line"
