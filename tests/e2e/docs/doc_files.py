"""The documents the docs tests read: the top-level guides, the admin guide's
pages, the users' pages and every README.md."""
import os

DOCS = ["ARCHITECTURE.md", "packaging/ADMIN.md", "tests/README.md", "torchstore/PROTOCOL.md"]
# The admin guide's reference pages (packaging/ADMIN.md links each): every
# *.md there is read, and held to the rules of packaging/ADMIN.md.
ADMIN_PAGES = "packaging/admin"
# The users' pages beside the README (docs/messages.md: every slurm-dp: line,
# its cause and fix): every *.md there is read, and held to the README's rules.
USER_PAGES = "docs"


def pages(root, folder):
    """folder/*.md, as paths from root, sorted."""
    where = os.path.join(root, folder)
    if not os.path.isdir(where):
        return []
    return [f"{folder}/{f}" for f in sorted(os.listdir(where)) if f.endswith(".md")]


def admin_pages(root):
    """packaging/admin/*.md, as paths from root, sorted."""
    return pages(root, ADMIN_PAGES)


def user_pages(root):
    """docs/*.md, as paths from root, sorted."""
    return pages(root, USER_PAGES)


def listed(root):
    """DOCS, then the admin guide's pages, then the users' pages."""
    return DOCS + admin_pages(root) + user_pages(root)


def documents(root):
    """DOCS and the admin and user pages that exist, then every README.md below
    root (build folders and dot folders skipped)."""
    out = [d for d in listed(root) if os.path.isfile(os.path.join(root, d))]
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
