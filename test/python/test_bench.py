"""The benchmarks' own logic: the decode-step model, compulsory bytes, BENCHMARKS.md.

The benchmarks themselves are too slow for the suite; these check what their
figures are computed from.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO

sys.path.insert(0, str(REPO / "bench"))

import models  # noqa: E402

import rducc  # noqa: E402
from rducc.driver import import_exported, lower  # noqa: E402
from rducc.targets import load_target  # noqa: E402


@pytest.fixture(scope="module")
def decode_step():
    model, inputs = models.tiny_llama_decode()
    return model, inputs, models.export(model, inputs)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_decode_step_matches_eager(decode_step, opt_level: int) -> None:
    model, inputs, exported = decode_step
    program = rducc.compile(exported, opt_level=opt_level)
    with torch.no_grad():
        expected = model(*inputs)
    got = program(*inputs)
    assert len(got) == len(expected) == 1 + 2 * 2  # logits, then (k, v) of each layer
    for ours, theirs in zip(got, expected):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


def test_decode_step_attends_to_the_cache(decode_step) -> None:
    """The cache is an input that matters: changing it changes the logits."""
    model, inputs, exported = decode_step
    program = rducc.compile(exported)
    changed = list(inputs)
    changed[3] = changed[3] + 1.0  # layer 0's key cache
    assert not torch.allclose(program(*inputs)[0], program(*changed)[0])


def test_compulsory_bytes_count_each_weight_input_output_once() -> None:
    from model_llama8b import compulsory_bytes

    model, inputs = models.mlp()
    module = import_exported(models.export(model, inputs))
    lower(module, load_target("sn40l"), 2)
    read, written = compulsory_bytes(module)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    assert read == weights + inputs[0].numel() * 4
    assert written == 4 * 10 * 4  # the [4, 10] f32 logits


def test_compulsory_bytes_of_an_embedding_are_the_rows_gathered(decode_step) -> None:
    from model_llama8b import compulsory_bytes

    model, inputs, exported = decode_step
    module = import_exported(exported)
    lower(module, load_target("sn40l"), 2)
    read, written = compulsory_bytes(module)
    table = model.embed_tokens.weight
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    row = table.shape[1] * table.element_size()
    assert read == weights - table.numel() * table.element_size() + row + sum(
        t.numel() * t.element_size() for t in inputs
    )
    assert written == sum(t.numel() * t.element_size() for t in model(*inputs))


def test_benchmarks_md_lists_every_goal_with_its_verdict() -> None:
    from common import Section
    from run_all import document

    section = Section("Speed: a test", "python bench/x.py")
    section.add("fast figure", "0.50x", "<= 1.0x", True)
    section.add("slow figure", "2.00x", "<= 1.5x", False)
    section.add("plain figure", "12 kernels")
    text = document([section], "python bench/run_all.py --quick", 3.0)
    assert "Written by `python bench/run_all.py --quick`" in text
    assert "torch " + torch.__version__ in text and "cores" in text
    assert "| Speed | fast figure | 0.50x | <= 1.0x | met |" in text
    assert "| Speed | slow figure | 2.00x | <= 1.5x | NOT met |" in text
    assert "| plain figure | 12 kernels | - |  |" in text


def test_only_a_full_run_rewrites_benchmarks_md() -> None:
    """A quick or partial run never replaces the committed BENCHMARKS.md; -o still writes."""
    from common import REPO
    from run_all import output_path

    assert output_path(None, quick=False, only=False) == REPO / "BENCHMARKS.md"
    assert output_path(None, quick=True, only=False) is None
    assert output_path(None, quick=False, only=True) is None
    assert output_path(Path("q.md"), quick=True, only=False) == Path("q.md")


def test_update_replaces_only_its_sections_and_goal_rows() -> None:
    """`run_all.py --only NAME --update`: that benchmark's section and goal rows are
    replaced, every other section kept, the notes taken from bench/notes.md."""
    from common import Section
    from run_all import NOTES, document, splice

    def section(title: str, value: str) -> Section:
        made = Section(title, f"python bench/{title[:1]}.py")
        made.add("figure", value, ">= 1", True)
        made.details.append(f"details {value}")
        return made

    old = document([section("Alpha: a", "1"), section("Beta: b", "2")], "python bench/run_all.py", 1.0)
    new = splice(old, [section("Beta: b", "3"), section("Gamma: c", "4")])
    assert "| Alpha | figure | 1 | >= 1 | met |" in new and "details 1" in new
    assert "| Beta | figure | 3 | >= 1 | met |" in new and "details 3" in new
    assert "| Beta | figure | 2 |" not in new and "details 2" not in new
    assert new.index("## Alpha") < new.index("## Beta") < new.index("## Gamma")
    assert new.index("| Gamma | figure | 4 |") < new.index("## Alpha")  # in the goals table
    assert new.endswith(NOTES.read_text()) and new.count("## Notes") == old.count("## Notes")


def test_a_cell_whose_eager_training_diverges_fails_as_the_cases_fault() -> None:
    """Two diverging trainings differ by their blow-up (NaN against NaN fails every bar): the
    training matrix names eager's divergence instead of comparing (autoencoder_kl, round 7)."""
    import train_matrix

    finite = {"w": torch.ones(2)}
    assert train_matrix.eager_diverged([2.0, 1.5], finite) is None
    assert "at step 3" in str(train_matrix.eager_diverged([2.0, 9e13, float("nan")], finite))
    assert "w and 0 more" in str(train_matrix.eager_diverged([2.0], {"w": torch.tensor([1.0, float("inf")])}))
