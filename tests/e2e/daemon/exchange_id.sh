#!/usr/bin/env bash
# srun --dp-world=auto -N2 --ntasks-per-node=2: the four ranks exchange a
# 128-byte ID through the step's dp-rendezvousd, and no daemon is left after.
. "$(dirname "$0")/../lib.sh"
: "${DP_RDV_PROBE:?set DP_RDV_PROBE to the built dp-rdv-probe}"
site

out=$(as_user timeout 60 srun --dp-world=auto -N2 --ntasks-per-node=2 "$DP_RDV_PROBE" exchange) \
  || fail "srun failed: $out"
echo "$out"
[[ $(grep -c "id ok" <<<"$out") -eq 4 ]] || fail "expected 4 ranks with the id, got: $out"
# Everyone fetched the same id that rank 0 published.
[[ $(grep -o "id ok [0-9a-f]*" <<<"$out" | sort -u | wc -l) -eq 1 ]] || fail "ranks disagree on the id: $out"
pass "4 ranks on 2 nodes exchanged one 128-byte id"
