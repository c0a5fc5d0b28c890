"""The docs' worked examples (README's `--report`, docs/deployment.md's deploy,
docs/generate.md's generation) are what the tools print now (issue 32,
newcomer item 5); `test/python/doc_examples.py` regenerates them."""

from __future__ import annotations

import doc_examples
import pytest


@pytest.fixture(scope="module")
def rendered() -> dict:
    return doc_examples.rendered()


def test_the_marked_docs_are_the_ones_with_worked_examples():
    names = {doc.name for doc in doc_examples.documents()}
    assert {"README.md", "deployment.md", "generate.md"} <= names


def test_every_worked_example_is_what_the_tools_print(rendered):
    stale = [doc.name for doc, text in rendered.items() if doc.read_text() != text]
    assert not stale, (f"{', '.join(stale)}: a worked example differs from what the tools print; "
                       "regenerate with `.venv/bin/python test/python/doc_examples.py`")


def test_a_stale_figure_is_caught_and_elided_output_stays_elided():
    text = "\n".join(["intro", doc_examples.MARKER, "```", "$ tool a", "old 1", "old 2", "$ tool b", "first",
                      "...", "```", "after"])
    outputs = {"tool a": "new 1\nnew 2\n", "tool b": "line 1\nline 2\nline 3\n"}
    assert doc_examples.render(text, outputs.__getitem__).split("\n") == [
        "intro", doc_examples.MARKER, "```", "$ tool a", "new 1", "new 2", "$ tool b", "line 1", "...", "```",
        "after"]
