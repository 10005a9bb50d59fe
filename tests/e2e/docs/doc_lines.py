#!/usr/bin/env python3
"""The `slurm-dp:` lines the documentation shows are lines the suite printed.

    doc_lines.py check SOURCE_DIR
    doc_lines.py record CORPUS TEST LANE FILE...

check: every `slurm-dp:` line that ARCHITECTURE.md, packaging/ADMIN.md, its
pages packaging/admin/*.md, the users' pages docs/*.md and the README.md
files show (a line of a code block that starts with it, or a backtick span
that does) must have the shape of a line in the corpus,
tests/fixtures/slurm-dp-lines.txt; and every shape of the corpus must match
the Message of a row of docs/messages.md (a `slurm-dp:` span in a table
row's first cell, which must name at least two words of the line besides
`...` and `<word>`), so that no line reaches a user without its cause and
fix. Prints each documented line the suite never printed, with its document
and line, and each line the suite printed that no row explains, with the
test that printed it; exits 1 if any.

record: the e2e suite's side (tests/e2e/lib.sh, when a test passes): the
`slurm-dp:` lines of FILE... (its output, the files of its $WORK) replace
what the corpus held for TEST in LANE. Under a lock: the lo and ns tests run
side by side.

A line's shape is the line with every run of digits written N (job and step
ids, pids, ports, times, hosts' numbers change from run to run), from its
`slurm-dp:` on. A documented line may leave out what varies beyond digits
with `...` (any text) and name a value with `<word>` (any text).
"""
import fcntl
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from doc_files import report, texts  # noqa: E402

CORPUS = "tests/fixtures/slurm-dp-lines.txt"
MESSAGES = "docs/messages.md"  # the users' table: each line, its cause and fix
PREFIX = "slurm-dp: "
VALUE = r"\.\.\.|…|<[A-Za-z_ -]+>"  # what a documented line leaves open
MAX_FILE_BYTES = 4 << 20  # a $WORK file read for lines (a dataset is not)
HEADER = """\
# The slurm-dp: lines the e2e suite printed, one per test, lane and shape
# (digits written N): TEST<TAB>LANE<TAB>SHAPE. tests/e2e/lib.sh refreshes a
# test's rows when it passes; docs.slurm_dp_lines_shown checks the lines the
# documentation shows against them (tests/e2e/docs/doc_lines.py). Commit it.
"""


# A line slurm-dp printed starts with its prefix, or has one label before it
# (srun --label's "0: ", a log's "slurmstepd: "); a test's own words about a
# line ("ok [test]: ... (slurm-dp: ...)") are no line of slurm-dp's.
PRINTED = re.compile(r"^\s*(?:[\w.\[\]-]+: )?(slurm-dp: .*)$")


def shape(line):
    """The line from its `slurm-dp: ` on, digits as N, spaces collapsed; None: none."""
    m = PRINTED.match(line.rstrip("\n"))
    if not m:
        return None
    return re.sub(r"\d+", "N", " ".join(m.group(1).split()))


def pattern(documented):
    """A documented line's shape as a regex: `...` and `<word>` match any text."""
    text = re.sub(r"\d+", "N", " ".join(documented.split()))
    parts = re.split(f"({VALUE})", text)
    return re.compile("".join(".*" if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def shown_lines(text):
    """(line number, documented line) of a Markdown text."""
    found = []
    fenced = False
    paragraph = []  # (line number, text) of the current paragraph, for spans across lines

    def spans():
        joined = " ".join(t for _, t in paragraph)
        for m in re.finditer(r"`([^`]+)`", joined):
            span = m.group(1).strip()
            if span.startswith(PREFIX) and len(span) > len(PREFIX):
                # The line the span starts on: count the characters before it.
                before = joined[: m.start()]
                i, used = 0, 0
                while i + 1 < len(paragraph) and used + len(paragraph[i][1]) + 1 <= len(before):
                    used += len(paragraph[i][1]) + 1
                    i += 1
                found.append((paragraph[i][0], span))

    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or line.startswith("    "):
            if stripped.startswith(PREFIX):
                found.append((lineno, stripped))
            continue
        if not stripped:
            spans()
            paragraph = []
        else:
            paragraph.append((lineno, stripped))
    spans()
    return found


def message_patterns(text):
    """(line number, documented line) of each `slurm-dp:` span in the first cell
    of a Markdown table row: the Message column of docs/messages.md."""
    found = []
    fenced = False
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not stripped.startswith("|"):
            continue
        first = re.split(r"(?<!\\)\|", stripped[1:])[0]
        for span in re.findall(r"`([^`]+)`", first):
            span = span.strip()
            if span.startswith(PREFIX) and len(span) > len(PREFIX):
                found.append((lineno, span))
    return found


def unexplained(root, rows):
    """Problems: the corpus's shapes that no Message of docs/messages.md matches,
    and Messages so open that they would match any line."""
    path = os.path.join(root, MESSAGES)
    if not os.path.isfile(path):
        return [f"{MESSAGES}: missing: the users' table of every slurm-dp: line, its cause "
                "and fix"], 0
    with open(path, encoding="utf-8") as f:
        messages = message_patterns(f.read())
    problems, patterns = [], []
    for lineno, line in messages:
        if len(re.findall(r"[A-Za-z]{2,}", re.sub(VALUE, " ", line[len(PREFIX):]))) < 2:
            problems.append(f"{MESSAGES}:{lineno}: a Message that names too little of its line "
                            f"(two words at least besides ... and <word>): {line}")
        else:
            patterns.append(pattern(line))
    printed_by = {}
    for test, lane, s in rows:
        printed_by.setdefault(s, set()).add(f"{test} ({lane})")
    for s in sorted(printed_by):
        if not any(rx.fullmatch(s) for rx in patterns):
            tests = sorted(printed_by[s])
            more = f" and {len(tests) - 1} more" if len(tests) > 1 else ""
            problems.append(f"{CORPUS}: {tests[0]}{more} printed a line no row of {MESSAGES} "
                            f"explains; add a row to {MESSAGES} (Message, Cause, Fix): {s}")
    return problems, len(messages)


def read_corpus(path):
    rows = []
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                parts = line.rstrip("\n").split("\t", 2)
                if len(parts) == 3:
                    rows.append(tuple(parts))
    return rows


def check(root):
    rows = read_corpus(os.path.join(root, CORPUS))
    corpus = {s for _, _, s in rows}
    problems, shown = [], 0
    for doc, text in texts(root):
        for lineno, line in shown_lines(text):
            shown += 1
            rx = pattern(line)
            if not any(rx.fullmatch(s) for s in corpus):
                problems.append(f"{doc}:{lineno}: the suite never printed a line of this shape "
                                f"({CORPUS}): {line}")
    missing, rows_of_messages = unexplained(root, rows)
    return report("doc_lines.py", problems + missing,
                  f"{shown} documented slurm-dp: line(s), {len(corpus)} recorded shape(s), "
                  f"{rows_of_messages} message(s) in {MESSAGES}")


def record(corpus_path, test, lane, files):
    shapes = set()
    for name in files:
        try:
            if os.path.getsize(name) > MAX_FILE_BYTES:
                continue
            with open(name, encoding="utf-8", errors="replace") as f:
                for line in f:
                    s = shape(line)
                    if s and len(s) > len(PREFIX):
                        shapes.add(s)
        except OSError:
            continue
    with open(corpus_path, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        rows = [r for r in read_corpus(corpus_path) if (r[0], r[1]) != (test, lane)]
        rows += [(test, lane, s) for s in shapes]
        f.seek(0)
        f.truncate()
        f.write(HEADER)
        for r in sorted(set(rows)):
            f.write("\t".join(r) + "\n")
    return 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "check":
        return check(argv[2])
    if len(argv) >= 5 and argv[1] == "record":
        return record(argv[2], argv[3], argv[4], argv[5:])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
