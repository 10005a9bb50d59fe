#!/usr/bin/env bash
# ctest FIXTURES_SETUP: brings the cluster up and resets the plugin line to the
# fixture's site settings (a killed earlier run may have left other ones).
#   fixture_up.sh <dp-cluster> [key=value ...]
set -euo pipefail
cluster=$1
shift
"$cluster" up
if [[ -n ${DP_CLUSTER_PLUGIN:-} ]]; then
  "$cluster" plugstack "$@"
fi
"$cluster" status
