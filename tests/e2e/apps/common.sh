# shellcheck shell=bash
# What the apps tests share: skip (exit 77, ctest shows it skipped) where a
# program from the archive is missing, and the check of one world of ranks.

# needs_modules MODULE...: exit 77 naming the first Python module missing.
needs_modules() {
  local m
  for m in "$@"; do
    /usr/bin/python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$m') is None)" ||
      { echo "SKIP [$TEST_NAME]: Python module '$m' is not installed here (Debian testing's lane installs it: scripts/debian-root)"; exit 77; }
  done
}

# check_world OUTPUT WHAT TAG: one world of 4 from TAG's lines
# ("TAG rank=R world=W ... host=H ... params=P"): ranks 0..3 once each,
# ranks 0,1 on n1 (Slurm's first node) and 2,3 on n2, every rank the same
# params. Unanchored: a launcher's workers share one pipe, so another
# worker's unfinished print may sit before a line (each line is one write).
check_world() {
  local out=$1 what=$2 tag=$3 lines ranks
  lines=$(grep -oE "$tag rank=[0-9]+ world=[0-9]+ .*params=[0-9a-f]{16}" <<<"$out") ||
    fail "$what: no rank finished: $out"
  [[ $(wc -l <<<"$lines") -eq 4 ]] || fail "$what: 4 ranks expected: $out"
  ranks=$(sed -E 's/.* rank=([0-9]+) .*/\1/' <<<"$lines" | sort -n | tr '\n' ' ')
  expect_eq "$ranks" "0 1 2 3 " "$what: ranks"
  [[ $(grep -c ' world=4 ' <<<"$lines") -eq 4 ]] || fail "$what: every rank must see world 4: $lines"
  [[ $(grep -cE " rank=[01] .*host=n1 " <<<"$lines") -eq 2 ]] || fail "$what: ranks 0,1 must be on n1: $lines"
  [[ $(grep -cE " rank=[23] .*host=n2 " <<<"$lines") -eq 2 ]] || fail "$what: ranks 2,3 must be on n2: $lines"
  [[ $(grep -o 'params=[0-9a-f]*' <<<"$lines" | sort -u | wc -l) -eq 1 ]] ||
    fail "$what: parameters differ between ranks: $lines"
}
