#!/usr/bin/env python3
"""The README's first example: its job script, its program and their output.

    readme_example.py extract SOURCE_DIR DIR       job.sh and train.py into DIR
    readme_example.py record SOURCE_DIR OUTPUT     OUTPUT (the job's) is the README's
    readme_example.py check SOURCE_DIR             the README's is the recorded one

The README marks each part with an HTML comment on the line before its fenced
block: `<!-- readme_example: job.sh -->`, `<!-- readme_example: train.py -->`,
`<!-- readme_example: output -->`. The lines of the output may come in any
order (the ranks print at once), so outputs compare as sorted lines.

extract: the e2e test's side (tests/e2e/docs/readme_commands.sh, for the
README's `sbatch job.sh`): writes the script and the program as shown.
record: the e2e test's side once the job ended: OUTPUT (the job's output
file) must be the README's output, and is kept as the recorded output,
tests/fixtures/readme-example-output.txt (unless RECORD is given empty).
check: the docs test (no cluster): the README's output must be the recorded
one, so an edit of the example that no run has printed fails here.
"""
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from doc_samples import marked_blocks  # noqa: E402 (after the line above)

RECORDED = "tests/fixtures/readme-example-output.txt"
MARK = re.compile(r"^<!-- readme_example: (\S+) -->\s*$")


def parts(root):
    """{name: text} of the README's marked blocks."""
    out = marked_blocks(os.path.join(root, "README.md"), MARK)
    for name in ("job.sh", "train.py", "output"):
        if name not in out:
            raise SystemExit(f"README.md has no block marked <!-- readme_example: {name} -->")
    return out


def sorted_lines(text):
    return sorted(line.rstrip() for line in text.splitlines() if line.strip())


def differ(what, got, want):
    print(f"{what}: the README shows\n  " + "\n  ".join(want) + "\nbut the run printed\n  " +
          "\n  ".join(got))
    return 1


def main(argv):
    if len(argv) == 4 and argv[1] == "extract":
        p = parts(argv[2])
        for name in ("job.sh", "train.py"):
            path = os.path.join(argv[3], name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(p[name])
            os.chmod(path, 0o755 if name.endswith(".sh") else 0o644)
        return 0
    if len(argv) == 4 and argv[1] == "record":
        want = sorted_lines(parts(argv[2])["output"])
        with open(argv[3], encoding="utf-8", errors="replace") as f:
            got = sorted_lines(f.read())
        if got != want:
            return differ("README.md's example output", got, want)
        record = os.environ.get("RECORD", os.path.join(argv[2], RECORDED))
        if record:
            with open(record, "w", encoding="utf-8") as f:
                f.write("\n".join(got) + "\n")
        return 0
    if len(argv) == 3 and argv[1] == "check":
        want = sorted_lines(parts(argv[2])["output"])
        try:
            with open(os.path.join(argv[2], RECORDED), encoding="utf-8") as f:
                got = sorted_lines(f.read())
        except OSError:
            got = []
        if got != want:
            return differ(f"README.md's example output against {RECORDED} (recorded by "
                          "e2e.ns.docs.readme_commands)", got, want)
        print(f"readme_example.py: the README's output is the recorded run's ({len(got)} lines)")
        return 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
