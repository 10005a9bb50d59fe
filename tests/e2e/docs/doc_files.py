"""The documents the docs tests read: the top-level guides and every README.md."""
import os

DOCS = ["ARCHITECTURE.md", "packaging/ADMIN.md", "tests/README.md", "torchstore/PROTOCOL.md"]


def documents(root):
    """DOCS that exist, then every README.md below root (build folders and dot folders skipped)."""
    out = [d for d in DOCS if os.path.isfile(os.path.join(root, d))]
    for here, dirs, files in os.walk(root):
        rel = os.path.relpath(here, root)
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        if "README.md" in files:
            out.append(os.path.normpath(os.path.join(rel, "README.md")))
    return out


def texts(root):
    """(document, its text) for every document."""
    for doc in documents(root):
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            yield doc, f.read()


def report(tool, problems, summary):
    """Prints each problem and the tool's summary; the exit code: 1 if any problem."""
    for p in problems:
        print(p)
    print(f"{tool}: {summary}, {len(problems)} problem(s)")
    return 1 if problems else 0
