#!/usr/bin/env bash
# Every command in the README's ```sh blocks (and in the admin guide it links
# to, packaging/ADMIN.md), run against the test cluster as
# a user would type it (dp-trainer from the build on PATH), and checked for
# what the README says it does. A README command that is neither run here nor
# listed with the test that covers it fails this test, so the list stays in
# step with the README.
. "$(dirname "$0")/../lib.sh"
: "${DP_TRAINER:?set DP_TRAINER to the built dp-trainer}"
: "${DP_SOURCE_DIR:?set DP_SOURCE_DIR to the source tree}"
site

readme="$DP_SOURCE_DIR/README.md $DP_SOURCE_DIR/packaging/ADMIN.md"
# Command text (comment and surrounding blanks removed), one per line.
# shellcheck disable=SC2086
commands=$(awk '/^```sh$/ { on = 1; next } /^```/ { on = 0 } on' $readme |
  sed -e 's/[[:space:]]*#.*$//' -e 's/^[[:space:]]*//' | grep -v '^$')

# Commands another test runs, and why they are not run here.
declare -A covered=(
  ['./scripts/demo']='installs and builds first; its srun is e2e.lo.trainer.demo, its closing hint e2e.<mode>.docs.demo_hint'
  ['./scripts/test']='is the whole suite this test belongs to (CI runs it)'
  ['apt install ./slurm-dp_<version>-1+slurm<series>_amd64.deb']='e2e.own.packaging.install_run_purge_deb'
  ['apt install ./slurm-dp-cuda_<version>-1+slurm<series>_amd64.deb']='needs NVIDIA'"'"'s repository; e2e.own.packaging.install_run_purge_deb shows apt refuses it without one and packaging.deb_metadata checks its Depends'
  ['dnf install ./slurm-dp-<version>-1.slurm<series>.x86_64.rpm']='needs an RPM distribution; packaging/tests/compare-deb-rpm checks the rpm holds the same files'
  ['dnf install ./slurm-dp-cuda-<version>-1.slurm<series>.x86_64.rpm']='needs an RPM distribution and NVIDIA'"'"'s repository'
  ['apt remove slurm-dp']='e2e.own.packaging.install_run_purge_deb'
  ['apt purge slurm-dp']='e2e.own.packaging.install_run_purge_deb'
  ['rpm -e slurm-dp-cuda slurm-dp']='needs an RPM distribution (see dnf install)'
)

bin=$WORK/bin
mkdir -p "$bin"
ln -s "$DP_TRAINER" "$bin/dp-trainer"
chmod -R a+rx "$bin"
# As the user, in $WORK, with the trainer on PATH.
user_sh() { as_user env PATH="$bin:/usr/bin:/bin" bash -c "$1" </dev/null; }

explain_ok() {  # the layout of 4 tasks on n1,n2 and no task started
  local out=$1
  for r in 0 1 2 3; do
    grep -qE "^task $r on n[12]:.* RANK=$r( |$)" <<<"$out" || fail "--dp-explain printed no line for task $r: $out"
  done
}

run_one() {
  local cmd=$1 out
  case $cmd in
    'srun --dp-world=auto -N2 --ntasks-per-node=2 --dp-explain true' | \
    'srun -N2 --ntasks-per-node=2 --dp-world=auto --dp-explain true')
      out=$(user_sh "timeout 60 $cmd" 2>&1) || true
      explain_ok "$out" ;;
    'srun -N2 --ntasks-per-node=2 --dp-world=auto dp-trainer --task regression')
      out=$(user_sh "timeout 240 $cmd --log-every 0" 2>&1) || fail "'$cmd' failed: $out"
      # The admin guide promises: learned y = 0.70.. x + 0.30.. (to two decimals).
      awk '/^learned y = /{ ok = ($4 >= 0.695 && $4 < 0.705 && $7 >= 0.295 && $7 < 0.305) } END { exit !ok }' <<<"$out" \
        || fail "'$cmd' did not end with learned y = 0.70.. x + 0.30..: $out"
      for r in 0 1 2 3; do grep -qE "^rank $r: " <<<"$out" || fail "'$cmd': no throughput line of rank $r: $out"; done ;;
    'sbatch job.sh')
      # The README's first example: its job script and program as shown,
      # submitted as the user; the job's output must be the README's (lines in
      # any order), which readme_example.py then records for
      # docs.readme_example_output (DP_LINES_CORPUS empty: not recorded).
      python3 "$DP_SOURCE_DIR/tests/e2e/docs/readme_example.py" extract "$DP_SOURCE_DIR" "$WORK"
      out=$(user_sh "$cmd") || fail "'$cmd' was refused: $out"
      local job
      job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' <<<"$out")
      [[ -n $job ]] || fail "'$cmd': no job id in: $out"
      wait_until 120 "job $job to end" job_done "$job"
      [[ -s $WORK/slurm-$job.out ]] || fail "'$cmd': no slurm-$job.out in $WORK"
      cat "$WORK/slurm-$job.out"
      RECORD=${DP_LINES_CORPUS:+$DP_SOURCE_DIR/tests/fixtures/readme-example-output.txt} \
        python3 "$DP_SOURCE_DIR/tests/e2e/docs/readme_example.py" record "$DP_SOURCE_DIR" "$WORK/slurm-$job.out" \
        || fail "'$cmd': the job's output is not the README's (above)" ;;
    *) return 1 ;;
  esac
}

ran=0 listed=0
mapfile -t all <<<"$commands"
for cmd in "${all[@]}"; do
  if [[ -n ${covered[$cmd]+x} ]]; then
    listed=$((listed + 1))
    echo "covered elsewhere: $cmd  -> ${covered[$cmd]}"
    continue
  fi
  run_one "$cmd" || fail "README command '$cmd' is neither run by this test nor listed as covered elsewhere; add it to $0"
  echo "ran: $cmd"
  ran=$((ran + 1))
done
# A listed command that left the README is a stale entry.
for cmd in "${!covered[@]}"; do
  grep -qxF -- "$cmd" <<<"$commands" || fail "'$cmd' is listed in $0 but no longer in the README; remove it"
done
((ran >= 4)) || fail "only $ran README commands ran; the extraction is broken"
pass "$ran README commands ran as the README says, $listed covered by other tests"
