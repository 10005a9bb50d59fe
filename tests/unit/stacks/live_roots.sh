#!/usr/bin/env bash
# dp-stacks against real interpreters, frame for frame against their own
# view (ctest stacks.live.*, label unit: no cluster). frames_target.py stops
# three threads at known places (a lambda under a generator and two methods
# in time.sleep; the bottom of a 300-call recursion in lock.acquire; a
# ThreadPoolExecutor worker in Event.wait) and writes what
# sys._current_frames() says of them; dp-stacks, run here, reads the process
# from outside by pid, and every thread's frames must be the interpreter's
# (function, qualified name where the version has one, file, line), the
# recursion cut at the reader's bound.
#
#   live_roots.sh DP_STACKS LANE
#
# LANE: host (this machine's /usr/bin/python3: Debian 12's 3.11; inside a
# lane's root that root's: 3.14 in the testing lane), host-dbg (its debug
# build, python3-dbg: before 3.13 named a debug build, its threads shown by
# their kernel state; from 3.13, which publishes its own offsets, read),
# debian11 (3.9), debian13 (3.13), debian-testing (3.14: also frame for frame
# equal to its standard library's _remote_debugging), all roots of
# scripts/debian-root (DP_DEBIAN_ROOTS, default /var/cache/slurm-dp); or
# root:PATH, any root with a python3 (by hand: Ubuntu's 3.8, 3.10, 3.12).
# A root's python runs chrooted, in a mount namespace of its own (its /proc
# and a fresh /tmp exist only there; this test's folder is bound in at
# /tmp/work, so both sides see the target and its truth). DP_STACKS_RECORD=DIR
# also records the process (dp_stacks_record, next to dp-stacks' build, as
# DIR/python-3.X.img) for tests/fixtures/stacks/images.
# Needs root for a root (unshare, mount, chroot); exits 77 (skipped) without
# it or without the root.
set -euo pipefail
readonly STACKS=$1 LANE=$2
readonly ROOTS=${DP_DEBIAN_ROOTS:-/var/cache/slurm-dp}
readonly TARGET=$(dirname "$(realpath "$0")")/frames_target.py
readonly MAX_FRAMES=256  # WalkLimits::max_frames
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# The standard library's reader (3.14), in the truth's format.
readonly REFERENCE="import sys
import _remote_debugging as rd
for t in rd.RemoteUnwinder(int(sys.argv[1]), all_threads=True).get_stack_trace():
    print('T', t.thread_id)
    for f in t.frame_info:
        print('F %s|%s|%d' % (f.funcname, f.filename, f.lineno))"

# Inside the private mount namespace: the root's /proc, a fresh /tmp with this
# test's folder at /tmp/work, the python chrooted; then (when the test says
# go) the reference read of it from the same root.
if [[ $LANE == __inner ]]; then
  root=$3 python=$4 work=$5
  mount -t proc proc "$root/proc"
  mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
  mkdir "$root/tmp/work"
  mount --bind "$work" "$root/tmp/work"
  chroot "$root" "$python" /tmp/work/frames_target.py /tmp/work/truth.txt >"$work/py.log" 2>&1 &
  echo $! >"$work/pid"
  exec 2>/dev/null  # no "Killed" notice when the test ends the python
  for _ in $(seq 600); do [[ -e $work/go ]] && break; sleep 0.1; done
  rc=0
  chroot "$root" "$python" -c "$REFERENCE" "$(cat "$work/pid")" >"$work/ref.txt" 2>&1 || rc=$?
  echo "$rc" >"$work/ref.rc"
  kill -9 "$(cat "$work/pid")"
  exit 0
fi

WORK=$(mktemp -d /tmp/dp-stacks-live.XXXXXX)
chmod 755 "$WORK"
readonly WORK
PY_PID=
cleanup() {
  exec 2>/dev/null  # no "Killed" notice for the python ended here
  [[ -z $PY_PID ]] || kill -9 "$PY_PID" 2>/dev/null || true
  touch "$WORK/go"  # a namespace still waiting for the reference read ends
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

[[ -x $STACKS ]] || fail "no dp-stacks at '$STACKS'"
ROOT= PYTHON=/usr/bin/python3
case $LANE in
  host) ;;
  host-dbg) PYTHON=/usr/bin/python3-dbg ;;
  debian11 | debian13 | debian-testing) ROOT=$ROOTS/$LANE ;;
  root:*) ROOT=${LANE#root:} ;;
  *) fail "unknown lane '$LANE'" ;;
esac
cp "$TARGET" "$WORK/frames_target.py"
if [[ -n $ROOT ]]; then
  [[ $(id -u) -eq 0 ]] || skip "needs root to enter $ROOT (unshare, mount, chroot)"
  [[ -x $ROOT$PYTHON ]] || skip "no $ROOT$PYTHON: build it with scripts/debian-root $LANE ensure"
  # Not while scripts/debian-root builds the root or runs a lane in it (CI
  # builds the roots while the Debian 12 lane runs this); held shared until
  # the end, so none starts under the test.
  exec 8>>"$ROOT.lock"
  flock -n -s 8 || skip "$ROOT is in use by scripts/debian-root (being built, or a lane runs in it)"
  unshare --mount --propagation private -- bash "$0" "$STACKS" __inner "$ROOT" "$PYTHON" "$WORK" &
  for _ in $(seq 100); do [[ -s $WORK/pid ]] && break; sleep 0.1; done
  PY_PID=$(cat "$WORK/pid" 2>/dev/null || true)
  SHOWN=/tmp/work/frames_target.py
else
  [[ -x $PYTHON ]] || skip "no $PYTHON here (scripts/setup installs python3-dbg)"
  "$PYTHON" "$WORK/frames_target.py" "$WORK/truth.txt" >"$WORK/py.log" 2>&1 &
  PY_PID=$!
  SHOWN=$WORK/frames_target.py
fi
[[ -n $PY_PID ]] || fail "the python did not start"
in_root=()
[[ -z $ROOT ]] || in_root=(chroot "$ROOT")
version=$("${in_root[@]}" "$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# The truth is written, and its writer gone: three threads stand still.
for _ in $(seq 300); do
  grep -q '^truth$' "$WORK/py.log" 2>/dev/null && [[ $(ls "/proc/$PY_PID/task" | wc -l) == 3 ]] && break
  sleep 0.1
done
grep -q '^truth$' "$WORK/py.log" || fail "Python $version never wrote its truth: $(cat "$WORK/py.log")"
[[ $(ls "/proc/$PY_PID/task" | wc -l) == 3 ]] || fail "Python $version: not 3 threads"

"$STACKS" --each "$PY_PID" >"$WORK/ours.txt"
"$STACKS" "$PY_PID:3" >"$WORK/merged.txt"
# What one read costs once warm: the median of 20 (the first, in a fresh
# process, also pays for its start and cold caches).
read_ms=$("$STACKS" --each --repeat 20 "$PY_PID" | sed -n 's/.*, \([0-9.]*\) ms per read$/\1/p')
head -n 4 "$WORK/ours.txt"
grep -qE "^  thread $PY_PID \(.*\) sleeping in (clock_nanosleep|select|pselect6) " "$WORK/ours.txt" ||
  fail "Python $version: the main thread's kernel state is not time.sleep's (clock_nanosleep; select before 3.11)"
[[ $(grep -c '^  thread ' "$WORK/ours.txt") -ge 3 ]] || fail "Python $version: not every thread shown"

if [[ $LANE == host-dbg && $version == 3.1[0-2] ]]; then
  grep -q "^pid $PY_PID: no Python frames (debug_build): a debug build of Python $version" "$WORK/ours.txt" ||
    fail "Python $version's debug build is not named: $(head -n 1 "$WORK/ours.txt")"
  grep -q "pid $PY_PID" "$WORK/merged.txt" || fail "the merged view does not name it"
  echo "PASS: the debug build of Python $version named, its threads shown by their kernel state"
  exit 0
fi

# Ours in the truth's format: "T tid", "F function|file|line", and "F ..." where cut.
awk '/^  thread / { print "T", $2; next }
     /^      \.\.\.$/ { print "F ..."; next }
     /^      [^ ]+ [^ ]+:[0-9-]+$/ { n = split($2, p, ":"); file = substr($2, 1, length($2) - length(p[n]) - 1)
                                     print "F " $1 "|" file "|" p[n] }' "$WORK/ours.txt" >"$WORK/ours.ref"
frames_of() { awk -v t="$1" '$1 == "T" { on = $2 == t; next } on' "$2"; }
compared=0 cut=0
while read -r _ tid; do
  theirs=$(frames_of "$tid" "$WORK/truth.txt")
  ours=$(frames_of "$tid" "$WORK/ours.ref")
  [[ -n $ours ]] || fail "Python $version: thread $tid is not in ours"$'\n'"$(cat "$WORK/ours.txt")"
  if [[ $(tail -n 1 <<<"$ours") == "F ..." ]]; then  # cut at the bound: the first frames
    cut=$((cut + 1))
    ours=$(head -n -1 <<<"$ours")
    [[ $(wc -l <<<"$ours") == "$MAX_FRAMES" ]] || fail "thread $tid: cut at $(wc -l <<<"$ours") frames"
    theirs=$(head -n "$MAX_FRAMES" <<<"$theirs")
  fi
  [[ $ours == "$theirs" ]] ||
    fail "Python $version, thread $tid: the interpreter says"$'\n'"$theirs"$'\n'"we read"$'\n'"$ours"
  compared=$((compared + $(wc -l <<<"$ours")))
done < <(grep '^T ' "$WORK/truth.txt")
((cut == 1)) || fail "Python $version: the 300-deep recursion was not cut at $MAX_FRAMES frames"
echo "Python $version: $compared frames of 3 threads equal to sys._current_frames()"
lambda=$([[ $version == 3.[89] || $version == 3.10 ]] && echo '<lambda>' || echo 'Trainer.batches.<locals>.<lambda>')
grep -qE "^rank 3 \(.*, pid $PY_PID\): .*\[(clock_nanosleep|select|pselect6)\] <- time.sleep <- $lambda frames_target.py:" "$WORK/merged.txt" ||
  fail "Python $version: the merged view does not show rank 3 in time.sleep under the lambda: $(cat "$WORK/merged.txt")"
grep -q "calls lock.acquire" "$WORK/ours.txt" || fail "Python $version: the recursion's call is not named"

if [[ -n ${DP_STACKS_RECORD:-} ]]; then
  "$(dirname "$STACKS")/../stacks/dp_stacks_record" "$PY_PID" "$DP_STACKS_RECORD/python-$version.img" "$WORK/truth.txt"
fi
if [[ $version == 3.1[4-9] ]]; then  # the standard library's own reader agrees
  if [[ -n $ROOT ]]; then  # read from inside the root's namespace
    touch "$WORK/go"
    for _ in $(seq 300); do [[ -s $WORK/ref.rc ]] && break; sleep 0.1; done
  else
    rc=0
    "$PYTHON" -c "$REFERENCE" "$PY_PID" >"$WORK/ref.txt" 2>&1 || rc=$?
    echo "$rc" >"$WORK/ref.rc"
  fi
  [[ $(cat "$WORK/ref.rc" 2>/dev/null) == 0 ]] || fail "_remote_debugging failed: $(cat "$WORK/ref.txt")"
  agreed=0
  while read -r _ tid; do
    ref=$(frames_of "$tid" "$WORK/ref.txt")
    ours=$(frames_of "$tid" "$WORK/ours.ref")
    # Each cuts a deep stack its own way: the recursion was compared above.
    [[ $(tail -n 1 <<<"$ours") != "F ..." ]] || continue
    # The reference stops at a C boundary (Context.run under Thread.run); ours goes on.
    [[ -n $ref && $ours == "$ref"* ]] ||
      fail "thread $tid: _remote_debugging reads"$'\n'"$ref"$'\n'"ours"$'\n'"$ours"
    agreed=$((agreed + $(grep -c '^F' <<<"$ref")))
  done < <(grep '^T ' "$WORK/ref.txt")
  echo "agrees with _remote_debugging on $agreed frames"
fi
echo "PASS: Python $version read in ${read_ms:-?} ms (median of 20), frame for frame the interpreter's"
