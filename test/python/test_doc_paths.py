"""Every file README.md and docs/*.md cite is in the repository (issue 20, item
15): a fresh clone has no files outside it, and a renamed file is caught here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("compiler/", "dialects/", "passes/", "runtime/", "test/", "examples/", "docs/", "bench/", ".ci/", "../")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CODE = re.compile(r"`([^`\s]+)`")


def cited_paths(text: str) -> set[str]:
    """Relative links, and code spans that name a path under a top-level folder."""
    links = {m.group(1) for m in LINK.finditer(text) if not re.match(r"[a-z]+:", m.group(1))}
    spans = {m.group(1).rstrip(".,:;") for m in CODE.finditer(text)}
    named = {s for s in spans if s.startswith(TOP) and not re.search(r"[*{}<>%$]", s)}
    return links | {re.sub(r":\d+$", "", s) for s in named}


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_cited_files_exist(doc):
    missing = [p for p in sorted(cited_paths(doc.read_text()))
               if not (ROOT / p).exists() and not (doc.parent / p).exists()]
    assert not missing, f"{doc.name} cites files a clone does not have: {missing}"


def test_the_check_sees_a_missing_file():
    assert cited_paths("see `../shared/DESIGN.md` and [x](docs/nope.md)") == {"../shared/DESIGN.md", "docs/nope.md"}
