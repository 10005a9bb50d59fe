#!/usr/bin/env python3
"""Every test the documentation names exists.

    doc_tests.py SOURCE_DIR BUILD_DIR

A claim of behaviour names the test that shows it (a part README's
"Verified by" lines); when that test is renamed or removed, the claim must
follow. Reads ARCHITECTURE.md, packaging/ADMIN.md, its pages
packaging/admin/*.md, the users' pages docs/*.md and every README.md, takes
each word in backticks that has the shape of a test name, and looks it up in
BUILD_DIR's tests (`ctest --show-only=json-v1`):

  e2e.MODE.PART.FEATURE       that test (MODE <mode> or *: in any mode)
  PART.FEATURE                an e2e test of any mode (obs.hang_named), or a
                              test of that exact name (docs.named_paths_exist)
  docs.*, fuzz.*, bench.*, packaging.*, stacks.*, trainer.*, house.*
                              a test of that name
  Suite.Case, Prefix/Suite.Case/Param
                              a GoogleTest test of that name
and in a "Verified by" section or sentence also
  Suite, Prefix/Suite         a GoogleTest suite with at least one test
  dp_*_tests                  a test program (a GoogleTest executable)

A `*` matches any text (at least one test must match); a word with a
placeholder (`<name>`) or a file extension is no test name. Prints each
missing test with the document and line that name it; exits 1 if any.
"""
import fnmatch
import json
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from doc_files import report, texts  # noqa: E402

E2E_PARTS = ("cluster", "spank", "daemon", "agent", "runtime", "trainer", "packaging", "docs",
             "obs", "bench", "apps")
PLAIN_PREFIXES = ("docs", "fuzz", "bench", "packaging", "stacks", "trainer", "house")
FILE_EXTENSIONS = ("cpp", "hpp", "h", "c", "cu", "py", "sh", "md", "cmake", "proto", "txt", "in",
                   "json", "map", "so", "deb", "rpm", "conf", "service", "log", "out")
E2E = re.compile(r"^e2e\.(lo|ns|own|<mode>|\*)\.([a-z0-9_*]+)\.([a-z0-9_*-]+)$")
PART_FEATURE = re.compile(r"^(%s)\.([a-z0-9_*][a-z0-9_*.-]*)$" % "|".join(E2E_PARTS))
PLAIN = re.compile(r"^(%s)\.[\w*.-]+$" % "|".join(PLAIN_PREFIXES))
GTEST = re.compile(r"^([A-Z]\w*/)?[A-Z]\w*[a-z]\w*\.[A-Z*][\w*]*(/\S+)?$")
SUITE = re.compile(r"^([A-Z]\w*/)?[A-Z][a-z]\w*$")
PROGRAM = re.compile(r"^dp_\w+_tests$")


def ctest_tests(build):
    """Every test name, and every test program, of the build."""
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                         capture_output=True, text=True).stdout
    names, programs = set(), set()
    for t in json.loads(out).get("tests", []):
        names.add(t["name"])
        command = t.get("command") or []
        if command:
            programs.add(os.path.basename(command[0]))
    return names, programs


def named_words(text):
    """(line number, word, in a "Verified by" context) for every word in backticks."""
    verified_section = False
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            verified_section = "verified by" in line.lower()
        verified = verified_section or "verified by" in line.lower()
        for span in re.findall(r"`([^`]+)`", line):
            for word in span.split():
                yield lineno, word.strip("(),;:"), verified


def kind(word, verified):
    """How a word names a test, or None when it names none."""
    if re.search(r"[<>{}$]", word) and not word.startswith("e2e.<mode>."):
        return None
    if word.rsplit(".", 1)[-1] in FILE_EXTENSIONS:
        return None
    if E2E.match(word):
        return "e2e"
    if PART_FEATURE.match(word):
        return "part"
    if PLAIN.match(word):
        return "plain"
    if GTEST.match(word):
        return "gtest"
    if verified and SUITE.match(word):
        return "suite"
    if verified and PROGRAM.match(word):
        return "program"
    return None


def exists(word, how, names, programs):
    def any_match(pattern):
        return any(fnmatch.fnmatchcase(n, pattern) for n in names)

    if how == "e2e":
        m = E2E.match(word)
        mode = "*" if m.group(1) in ("<mode>", "*") else m.group(1)
        return any_match(f"e2e.{mode}.{m.group(2)}.{m.group(3)}")
    if how == "part":
        return any_match(word) or any_match("e2e.*." + word)
    if how == "plain":
        return any_match(word)
    if how == "gtest":
        return any_match(word) or any_match(word + "/*") or any_match("*/" + word) or \
            any_match("*/" + word + "/*")
    if how == "suite":
        return any_match(word + ".*") or any_match("*/" + word + ".*")
    return word in programs


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root, build = argv[1], argv[2]
    names, programs = ctest_tests(build)
    problems, named = [], 0
    for doc, text in texts(root):
        for lineno, word, verified in named_words(text):
            how = kind(word, verified)
            if how is None:
                continue
            named += 1
            if not exists(word, how, names, programs):
                problems.append(f"{doc}:{lineno}: {word}: no such test in {build} "
                                f"(ctest -N); name the test that shows the claim")
    return report("doc_tests.py", problems,
                  f"{named} test name(s) in the docs, {len(names)} tests in the build")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
