#!/usr/bin/env python3
"""Every repository path the documentation names exists.

    doc_paths.py SOURCE_DIR [--max-words FILE=N ...] [--max-cell-words FILE=N ...]
                 [--words-only]

Reads ARCHITECTURE.md, every README.md of the tree, packaging/ADMIN.md, its
pages packaging/admin/*.md, the users' pages docs/*.md and tests/README.md,
and checks each path they name in backticks or links (and, in code blocks,
each word that starts with a top-level folder of the tree):
a path with a `/` whose first folder is one of the tree's (or of the
document's own folder), and a bare file name with a source or text
extension (`layout.cpp`, `run.sh`). A relative path is looked up from the
top of the tree and from the document's folder; `dp/x.hpp` is an include
path; a bare name may live anywhere below the document's folder (for the
top-level documents: anywhere), and in the first column of a folder's
README table (the part's own files) nowhere else. Globs (`daemon/step_report.*`,
`unit/runtime/{client,shm}`) must match at least one path; a `:LINE` or
`:FIRST-LAST` suffix must name lines the file has. Ignored: installed paths
(`/usr/...`), URLs, placeholders (`<part>`, `$VAR`, `%j`) and folders of
other projects (`jax/_src/...`). Prints each missing path with the document
and line that name it; exits 1 if any.

--max-words FILE=N: FILE (from the top of the tree) has at most N words,
as `wc -w` counts them (ARCHITECTURE.md's promise of a short read).
--max-cell-words FILE=N: no cell of FILE's Markdown tables has more than N
words (a table is read across; its detail belongs below it); the limit
given for packaging/ADMIN.md holds for its pages packaging/admin/*.md too,
the one given for README.md for the users' pages docs/*.md.
--words-only: only the word counts.
"""
import fnmatch
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from doc_files import admin_pages, listed, report, user_pages  # noqa: E402

# Files of other projects that a document names by their bare file name.
FOREIGN = {
    "TCPStore.cpp",  # PyTorch (torchstore/README.md)
    "TCPStoreBackend.hpp",
    "TCPStoreLibUvBackend.cpp",
    "slurm-dp.conf",  # the installed snippet (packaging/plugstack/slurm-dp.conf.in)
    "pyxis.conf",  # pyxis's plugstack snippet
    "sitecustomize.py",  # a user's file of that name (ours: tests/e2e/pytorch/no_libuv)
    "train.py",  # a user's program in the examples
    "spank.h",  # Slurm's headers
    "slurm.h",
    "slurm_version.h",
}
EXTENSIONS = ("cpp", "hpp", "h", "c", "cu", "py", "sh", "md", "cmake", "proto", "map", "txt",
              "in", "json")
BARE = re.compile(r"^[\w.*-]+\.(%s|\*)$" % "|".join(EXTENSIONS))
LINE_REF = re.compile(r"^(.*?):(\d+)(?:-(\d+))?$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
SKIP_DIRS = {".git", ".cache"}
# A cell limit given for a guide holds for its pages too: the admin guide's
# reference pages, and the users' pages beside the README (docs/messages.md).
PAGES_OF = {"packaging/ADMIN.md": admin_pages, "README.md": user_pages}


def index_tree(root):
    """Every file and folder below root, as paths relative to it."""
    paths = set()
    for here, dirs, files in os.walk(root):
        rel = os.path.relpath(here, root)
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS
                   and not (rel == "." and d.startswith("build"))]
        for name in dirs + files:
            paths.add(os.path.normpath(os.path.join(rel, name)))
    return paths


def documents(root, paths):
    readmes = sorted(p for p in paths if os.path.basename(p) == "README.md")
    docs = [d for d in listed(root) if d in paths]
    return docs + [r for r in readmes if r not in docs]


def expand_braces(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(word[:m.start()] + alt + word[m.end():])
    return out


class Checker:
    def __init__(self, root):
        self.root = root
        self.paths = index_tree(root)
        self.top = {p.split("/")[0] for p in self.paths}
        self.lines_of = {}

    def candidate(self, word, doc_dir):
        """The word as a path of the tree to check, or None."""
        word = word.strip("`'\"()[],;")
        word = word.rstrip(".:")
        if not word or word.startswith(("/", "-", "~", "#")) or "://" in word:
            return None
        if re.search(r"[<>$%@=\\|&^!]", word):
            return None
        if word.startswith("./"):
            word = word[2:]
        if "/" in word:
            first = word.split("/")[0]
            in_doc_dir = doc_dir and os.path.normpath(os.path.join(doc_dir, first)) in self.paths
            if first in self.top or in_doc_dir or first == "dp":
                return word
            return None
        plain = LINE_REF.match(word).group(1) if LINE_REF.match(word) else word
        if BARE.match(plain) and plain not in FOREIGN and not plain.startswith("*"):
            return word
        return None

    def lines(self, rel):
        if rel not in self.lines_of:
            with open(os.path.join(self.root, rel), encoding="utf-8", errors="replace") as f:
                self.lines_of[rel] = sum(1 for _ in f)
        return self.lines_of[rel]

    def resolve(self, path, doc_dir, link, own=False):
        """The tree's paths that `path` names (empty: none); `own`: a bare name
        only below doc_dir."""
        bases = [doc_dir] if link else ["", doc_dir]
        found = []
        for alt in expand_braces(path):
            alt = alt.rstrip("/")
            hits = []
            glob = any(c in alt for c in "*?[")
            if "/" in alt:
                for base in bases:
                    want = os.path.normpath(os.path.join(base, alt))
                    if glob:
                        hits += [p for p in self.paths if fnmatch.fnmatchcase(p, want)]
                    elif want in self.paths:
                        hits.append(want)
                if not hits and alt.startswith("dp/"):  # an include path
                    hits = [p for p in self.paths if p.endswith("/" + alt)]
            else:  # a bare name: below the document's folder, else anywhere
                below = [p for p in self.paths
                         if fnmatch.fnmatchcase(os.path.basename(p), alt)]
                near = [p for p in below if not doc_dir or p.startswith(doc_dir + "/")]
                hits = near if own else near or below
            if not hits:
                return []
            found += hits
        return found

    def check_word(self, word, doc, doc_dir, lineno, link, problems, own=False):
        path = self.candidate(word, doc_dir)
        if path is None:
            return
        first = last = None
        m = LINE_REF.match(path)
        if m:
            path, first = m.group(1), int(m.group(2))
            last = int(m.group(3)) if m.group(3) else first
        hits = self.resolve(path, doc_dir, link, own)
        if not hits:
            where = f" in {doc_dir}/" if own else ""
            problems.append(f"{doc}:{lineno}: {path}: no such file or folder{where}")
            return
        if first is not None:
            files = [h for h in hits if os.path.isfile(os.path.join(self.root, h))]
            if files and all(self.lines(f) < last for f in files):
                problems.append(f"{doc}:{lineno}: {path}:{first}"
                                f"{'-%d' % last if last != first else ''}: "
                                f"{files[0]} has {self.lines(files[0])} lines")

    def check_document(self, doc):
        problems = []
        doc_dir = os.path.dirname(doc)
        fenced = False
        previous_blank = True
        with open(os.path.join(self.root, doc), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                stripped = line.strip()
                if stripped.startswith(("```", "~~~")):
                    fenced = not fenced
                    previous_blank = False
                    continue
                indented = line.startswith("    ") and previous_blank
                previous_blank = stripped == "" or (indented and line.startswith("    "))
                # (word, link, own): `own` for a folder README table's first cell
                own_cell, rest = "", line
                if doc_dir and not fenced and stripped.startswith("|") and stripped.count("|") > 1:
                    _, own_cell, rest = stripped.split("|", 2)
                words = [(w, False, True) for span in re.findall(r"`([^`]+)`", own_cell)
                         for w in span.split()]
                words += [(w, False, False) for span in re.findall(r"`([^`]+)`", rest)
                          for w in span.split()]
                words += [(target.split("#")[0], True, False) for target in LINK.findall(line)]
                if fenced or indented:
                    words += [(w, False, False) for w in re.split(r"[\s`]+", line)
                              if w.lstrip("./").split("/")[0] in self.top and "/" in w]
                for word, link, own in words:
                    if word:
                        self.check_word(word, doc, doc_dir, lineno, link, problems, own)
        return problems


def word_count(path):
    with open(path, encoding="utf-8") as f:
        return len(f.read().split())


def long_cells(root, doc, most):
    """A problem for each table cell of `doc` over `most` words."""
    found = []
    fenced = False
    with open(os.path.join(root, doc), encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip().startswith(("```", "~~~")):
                fenced = not fenced
            if fenced or not line.startswith("|"):
                continue
            for cell in re.split(r"(?<!\\)\|", line.strip().strip("|")):
                words = cell.split()
                if len(words) > most:
                    found.append(f"{doc}:{lineno}: a table cell of {len(words)} words, more than "
                                 f"{most} ('{' '.join(words[:6])} ...'); move the detail below "
                                 "the table")
    return found


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    root = argv[1]
    limits, cell_limits = [], []
    args = argv[2:]
    words_only = "--words-only" in args
    args = [a for a in args if a != "--words-only"]
    while args:
        if args[0] not in ("--max-words", "--max-cell-words") or len(args) < 2 \
                or "=" not in args[1]:
            print(f"doc_paths.py: unknown argument {args[0]}", file=sys.stderr)
            return 2
        name, n = args[1].rsplit("=", 1)
        (limits if args[0] == "--max-words" else cell_limits).append((name, int(n)))
        args = args[2:]
    docs, problems = [], []
    if not words_only:
        checker = Checker(root)
        docs = documents(root, checker.paths)
        for doc in docs:
            problems += checker.check_document(doc)
    for name, n in limits:
        words = word_count(os.path.join(root, name))
        if words > n:
            problems.append(f"{name}: {words} words, more than {n}; move the detail to the part's "
                            "README.md")
    for name, n in cell_limits:
        pages = PAGES_OF[name](root) if name in PAGES_OF else []
        for doc in [name] + pages:
            problems += long_cells(root, doc, n)
    return report("doc_paths.py", problems,
                  f"{len(docs)} documents, {len(limits) + len(cell_limits)} word limit(s)")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
