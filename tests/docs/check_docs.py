#!/usr/bin/env python3
"""The repository's documents stand alone and agree with each other.

Checks, over the files git tracks:
- nothing refers to the developers' notes outside the repository (the shared folder beside it)
  or to issue numbers of a tracker that is not in the repository;
- every relative link in README.md and docs/*.md names a file that exists;
- every citation of a docs page in code, scripts and docs (`docs/x.md`, optionally followed by
  `, "Section"`) names a page that exists, and the section is one of that page's headings.
Prints each problem with its place; exits 1 if there is any, 77 (a skip) outside a git checkout.
Usage: check_docs.py [REPOSITORY_ROOT]
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), "..", ".."))
# The patterns are split so that this file does not match itself.
OUTSIDE = re.compile(r"\.\./" + r"shared|\bissues?[- ]#?[0-9]+", re.IGNORECASE)
CITATION = re.compile(r'docs/([A-Za-z0-9_-]+\.md)(?:, "([^"]+)")?')
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked_files():
    """The files git tracks, or None where the sources are not a git checkout (a tarball)."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [p for p in out.decode().split("\0") if p]


def read_text(path):
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return None  # binary, or a submodule / deleted file in the index


def headings(text):
    return [re.sub(r"[`*]", "", h).strip() for h in re.findall(r"^#+\s+(.*)$", text, re.M)]


def check_links(path, text, problems):
    for n, line in enumerate(text.splitlines(), 1):
        for target in MD_LINK.findall(line):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor in the same page
            file_part = target.split("#", 1)[0]
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(os.path.join(ROOT, resolved)):
                problems.append(f"{path}:{n}: link to {target}: no such file")


def check_citations(path, text, pages, problems):
    for n, line in enumerate(text.splitlines(), 1):
        for page, section in CITATION.findall(line):
            if page not in pages:
                problems.append(f"{path}:{n}: cites docs/{page}: no such page")
            elif section and not any(section in h for h in pages[page]):
                problems.append(f'{path}:{n}: cites docs/{page}, "{section}": no such heading')


def main():
    files = tracked_files()
    if files is None:
        print(f"check_docs: skipped: {ROOT} is not a git checkout, so which files count is unknown")
        return 77
    texts = {p: read_text(p) for p in files}
    pages = {os.path.basename(p): headings(t) for p, t in texts.items()
             if t is not None and p.startswith("docs/") and p.endswith(".md")}
    problems = []
    for path, text in texts.items():
        if text is None or path == "tests/docs/check_docs.py":
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                problems.append(f"{path}:{n}: refers outside the repository: {line.strip()[:100]}")
        if path.endswith(".md"):
            check_links(path, text, problems)
        check_citations(path, text, pages, problems)
    for p in problems:
        print(p)
    print(f"check_docs: {len(files)} files, {len(pages)} docs pages, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
