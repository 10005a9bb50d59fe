# Helpers for dp-trainer's e2e tests on the real local cluster. Sourced by each
# test. Needs, beyond lib.sh: DP_TRAINER (the built dp-trainer).
: "${DP_TRAINER:?set DP_TRAINER to the built dp-trainer}"
. "$(dirname "$0")/../lib.sh"

site >/dev/null

# Value of a numeric field in the "final" JSON line of a metrics file.
final_field() {
  sed -n 's/.*"event":"final".*"'"$2"'":\([0-9.eE+-]*\).*/\1/p' "$1" | tail -n1
}
