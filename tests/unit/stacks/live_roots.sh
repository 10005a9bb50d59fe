#!/usr/bin/env bash
# dp-stacks against real interpreters (ctest stacks.live.*, label unit: no
# cluster): a python sleeping in a known function at a known line, with a
# second thread blocked in a known function, is read from outside by pid and
# its frames checked by name and line.
#
#   live_roots.sh DP_STACKS debian-testing|debian13|host
#
# debian-testing (Python 3.14) and debian13 (Python 3.13): the Debian roots of
# scripts/debian-root (DP_DEBIAN_ROOTS, default /var/cache/slurm-dp). The
# python runs chrooted in the root, in a mount namespace of its own (its
# /proc and /tmp exist only there, so nothing is left mounted in the shared
# root); dp-stacks, built here, reads it from outside: a process's memory is
# read by pid whatever root it sees. On 3.14 the standard library's reader
# (_remote_debugging, run in the same namespace) must agree frame for frame.
# host: this machine's python3 (Debian 12: 3.11, no debug offsets): every
# thread by its kernel state and a line that says why there are no frames;
# inside a lane's root, that root's python3, checked as above.
# Needs root (unshare, mount, chroot); exits 77 (skipped) without it or
# without the root.
set -euo pipefail
readonly STACKS=$1 LANE=$2
readonly ROOTS=${DP_DEBIAN_ROOTS:-/var/cache/slurm-dp}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# Lines the checks name: the sleep, the call of sleeper(), the blocked wait.
readonly SLEEP_LINE=12 CALL_LINE=14 BLOCKED_LINE=5
readonly SCRIPT="import threading, time

def blocked(ready):
    ready.set()
    threading.Event().wait()

def sleeper():
    ready = threading.Event()
    threading.Thread(target=blocked, args=(ready,), name='blocker', daemon=True).start()
    ready.wait()
    print('ready', flush=True)
    time.sleep(600)

sleeper()"
# The standard library's reader, in the format to_ref_format prints ours in.
readonly REFERENCE="import sys
import _remote_debugging as rd
for t in rd.RemoteUnwinder(int(sys.argv[1]), all_threads=True).get_stack_trace():
    print('T', t.thread_id)
    for f in t.frame_info:
        print('F %s|%s|%d' % (f.funcname, f.filename, f.lineno))"

# Inside the private mount namespace: the root's /proc and a fresh /tmp with
# the script, the python chrooted, then (when the test says go) the
# reference read of it from the same root.
if [[ $LANE == __inner ]]; then
  root=$3 python=$4 work=$5
  mount -t proc proc "$root/proc"
  mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
  printf '%s\n' "$SCRIPT" >"$root/tmp/hang.py"
  chroot "$root" "$python" /tmp/hang.py >"$work/py.log" 2>&1 &
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
case $LANE in
  debian-testing) ROOT=$ROOTS/debian-testing PYTHON=/usr/bin/python3.14 ;;
  debian13) ROOT=$ROOTS/debian13 PYTHON=/usr/bin/python3.13 ;;
  host) ROOT= PYTHON=$(command -v python3 || true) ;;
  *) fail "unknown lane '$LANE'" ;;
esac
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
  SHOWN=/tmp/hang.py
else
  [[ -n $PYTHON ]] || skip "no python3 here"
  printf '%s\n' "$SCRIPT" >"$WORK/hang.py"
  "$PYTHON" "$WORK/hang.py" >"$WORK/py.log" 2>&1 &
  PY_PID=$!
  SHOWN=$WORK/hang.py
fi
[[ -n $PY_PID ]] || fail "the python did not start"
for _ in $(seq 300); do grep -q ready "$WORK/py.log" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$WORK/py.log" || fail "the python never got ready: $(cat "$WORK/py.log")"
in_root=()
[[ -z $ROOT ]] || in_root=(chroot "$ROOT")
version=$("${in_root[@]}" "$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# Our view in the reference's format: "T tid", then "F function|file|line".
to_ref_format() {
  awk '/^  thread / { print "T", $2; next }
       /^      [^ ]+ [^ ]+:[0-9]+$/ { n = split($2, p, ":"); file = substr($2, 1, length($2) - length(p[n]) - 1)
                                      print "F " $1 "|" file "|" p[n] }'
}
# The frames of thread $1 in a reference-format text on stdin.
frames_of() { awk -v t="$1" '$1 == "T" { on = $2 == t; next } on'; }

# The main thread reaches the sleep's line right after it printed "ready".
for _ in $(seq 50); do
  "$STACKS" --each "$PY_PID" >"$WORK/ours.txt"
  grep -q "^      sleeper $SHOWN:$SLEEP_LINE\$" "$WORK/ours.txt" && break
  ! grep -q 'no Python frames' "$WORK/ours.txt" || break
  sleep 0.1
done
cat "$WORK/ours.txt"
"$STACKS" "$PY_PID:3" | tee "$WORK/merged.txt"
# What one read costs once warm: the median of 20 (the first, in a fresh
# process, also pays for its start and cold caches).
read_ms=$("$STACKS" --each --repeat 20 "$PY_PID" | sed -n 's/.*, \([0-9.]*\) ms per read$/\1/p')

if [[ $version == 3.1[3-9] ]]; then
  to_ref_format <"$WORK/ours.txt" >"$WORK/ours.ref"
  main=$(frames_of "$PY_PID" <"$WORK/ours.ref")
  [[ $main == "F sleeper|$SHOWN|$SLEEP_LINE"$'\n'"F <module>|$SHOWN|$CALL_LINE" ]] ||
    fail "Python $version: main thread's frames are not sleeper:$SLEEP_LINE <- <module>:$CALL_LINE"
  grep -q "^      blocked $SHOWN:$BLOCKED_LINE\$" "$WORK/ours.txt" ||
    fail "Python $version: no thread in blocked at line $BLOCKED_LINE"
  grep -q "^  thread $PY_PID (.*) sleeping in clock_nanosleep" "$WORK/ours.txt" ||
    fail "Python $version: the main thread's kernel state is not a sleep in clock_nanosleep"
  grep -q "^rank 3 (.*, pid $PY_PID): .*sleeper hang.py:$SLEEP_LINE <- <module> hang.py:$CALL_LINE" "$WORK/merged.txt" ||
    fail "Python $version: the merged view does not show rank 3 in sleeper"
  if [[ $version != 3.13 ]]; then
    if [[ -n $ROOT ]]; then  # read from inside the root's namespace
      touch "$WORK/go"
      for _ in $(seq 300); do [[ -s $WORK/ref.rc ]] && break; sleep 0.1; done
    else
      rc=0
      "$PYTHON" -c "$REFERENCE" "$PY_PID" >"$WORK/ref.txt" 2>&1 || rc=$?
      echo "$rc" >"$WORK/ref.rc"
    fi
    [[ $(cat "$WORK/ref.rc" 2>/dev/null) == 0 ]] || fail "_remote_debugging failed: $(cat "$WORK/ref.txt")"
    compared=0
    while read -r _ tid; do
      ref=$(frames_of "$tid" <"$WORK/ref.txt")
      ours=$(frames_of "$tid" <"$WORK/ours.ref")
      # The reference stops at a C boundary (Context.run under Thread.run); ours goes on.
      [[ -n $ref && $ours == "$ref"* ]] ||
        fail "thread $tid: _remote_debugging reads"$'\n'"$ref"$'\n'"ours"$'\n'"$ours"
      compared=$((compared + $(grep -c '^F' <<<"$ref")))
    done < <(grep '^T ' "$WORK/ref.txt")
    ((compared >= 5)) || fail "only $compared frames compared: $(cat "$WORK/ref.txt")"
    echo "agrees with _remote_debugging on $compared frames"
  fi
  echo "PASS: Python $version read in ${read_ms:-?} ms (median of 20)"
else
  grep -q "^pid $PY_PID: no Python frames (no_debug_offsets): " "$WORK/ours.txt" ||
    fail "Python $version: not shown as a Python without debug offsets"
  grep -q "^  thread $PY_PID (.*) sleeping in clock_nanosleep" "$WORK/ours.txt" ||
    fail "Python $version: the main thread's kernel state is not a sleep in clock_nanosleep"
  [[ $(grep -c '^  thread ' "$WORK/ours.txt") -ge 2 ]] || fail "Python $version: not every thread shown"
  grep -q "pid $PY_PID" "$WORK/merged.txt" || fail "Python $version: the merged view does not name it"
  echo "PASS: Python $version shown by its threads' kernel state"
fi
