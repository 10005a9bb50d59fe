#!/usr/bin/env python3
"""What docs/output.md shows of slurm-dp's output, against what a run printed.

    doc_samples.py record SOURCE_DIR NAME FILE   FILE (a run's output) kept as sample NAME
    doc_samples.py check SOURCE_DIR              each sample the page shows is the recorded one

docs/output.md marks each sample with an HTML comment on the line before its
fenced block: `<!-- sample: NAME -->`. A sample compares by its shape: each
line with digits as N, spaces collapsed and paths cut to their last part, so
job ids, ports, pids, times and work folders may differ, but no line, word
or column may. record: the e2e test's side (spank.explain, obs.stacks_top),
which keeps the shape of what it printed in tests/fixtures/doc-samples.txt
(NAME<TAB>LINE, commit it). check: the docs test (no cluster).
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

PAGE = "docs/output.md"
RECORDED = "tests/fixtures/doc-samples.txt"
MARK = re.compile(r"^<!-- sample: (\S+) -->\s*$")
HEADER = """\
# The shapes of the outputs docs/output.md shows, as the e2e suite printed
# them (digits as N, spaces collapsed, paths cut): NAME<TAB>LINE.
# tests/e2e/docs/doc_samples.py writes and checks it. Commit it.
"""


def shape(text):
    """Each non-empty line: paths cut to their last part, digits as N, spaces collapsed."""
    out = []
    for line in text.splitlines():
        line = re.sub(r"\S*/(\S+)", r"\1", line)
        line = re.sub(r"[0-9]+", "N", line)
        line = " ".join(line.split())
        if line:
            out.append(line)
    return out


def marked_blocks(path, mark):
    """{name: text} of the fenced blocks of file `path` that a line matching
    `mark` (its group 1 the name) comes just before."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    out, i = {}, 0
    while i < len(lines):
        m = mark.match(lines[i])
        i += 1
        if not m:
            continue
        if i >= len(lines) or not lines[i].startswith("```"):
            raise SystemExit(f"{path}:{i}: '{m.group(1)}' is not followed by a fenced block")
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        out[m.group(1)] = "\n".join(body) + "\n"
    return out


def page_samples(root):
    return marked_blocks(os.path.join(root, PAGE), MARK)


def read_recorded(root):
    rows = {}
    try:
        with open(os.path.join(root, RECORDED), encoding="utf-8") as f:
            for line in f:
                if line.startswith("#") or "\t" not in line:
                    continue
                name, text = line.rstrip("\n").split("\t", 1)
                rows.setdefault(name, []).append(text)
    except OSError:
        pass
    return rows


def record(root, name, path):
    with open(path, encoding="utf-8", errors="replace") as f:
        got = shape(f.read())
    rows = read_recorded(root)
    rows[name] = got
    with open(os.path.join(root, RECORDED), "w", encoding="utf-8") as f:
        f.write(HEADER)
        for n in sorted(rows):
            for text in rows[n]:
                f.write(f"{n}\t{text}\n")
    return 0


def check(root):
    rows, failed = read_recorded(root), 0
    samples = page_samples(root)
    for name, text in samples.items():
        want, got = shape(text), rows.get(name)
        if got is None:
            print(f"{PAGE}: sample '{name}' was never recorded by a run ({RECORDED})")
            failed = 1
        elif got != want:
            print(f"{PAGE}: sample '{name}' is not what the last run printed; the page shows\n  " +
                  "\n  ".join(want) + f"\nbut {RECORDED} holds\n  " + "\n  ".join(got))
            failed = 1
    if not failed:
        print(f"doc_samples.py: {len(samples)} samples of {PAGE} are the recorded runs' output")
    return failed


def main(argv):
    if len(argv) == 5 and argv[1] == "record":
        return record(argv[2], argv[3], argv[4])
    if len(argv) == 3 and argv[1] == "check":
        return check(argv[2])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
