"""Decomposing a program of identical layers one trace per distinct node
(`rducc.frontend.local_decompose.decompose_repeated`, issue 28's compile time of
the massive models): the same ops, shapes and dtypes as torch's whole-program
`run_decompositions`, eager's numbers through rducc, and one trace per distinct
node however many layers repeat it. The threshold (`REPEATED_MIN`, 512 nodes)
is lowered here so that a 3-layer model takes the path; bench/massive.py times
it at full size."""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest
import torch

import rducc
from rducc.frontend import decompositions, local_decompose
from rducc.frontend.decompositions import decomposition_table

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import models  # noqa: E402


def _ops(ep: torch.export.ExportedProgram) -> collections.Counter[tuple[str, str, str]]:
    return collections.Counter((str(n.target), str(tuple(n.meta["val"].shape)), str(n.meta["val"].dtype))
                               for n in ep.graph.nodes if n.op == "call_function"
                               and isinstance(n.meta.get("val"), torch.Tensor))


@pytest.fixture(scope="module")
def decode_step():
    """A 3-layer Llama decode step (examples/models.py) at a tiny config, with a cache of 8."""
    from transformers import LlamaConfig

    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                         num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(0)
    model = models.LlamaDecodeStep(config).eval()
    inputs = models.decode_step_inputs(config, 8)
    return model, inputs, models.export(model, inputs)


def test_repeated_decomposition_equals_torchs_and_runs(decode_step, monkeypatch) -> None:
    model, inputs, ep = decode_step
    table = decomposition_table(ep)
    monkeypatch.setattr(local_decompose, "REPEATED_MIN", 0)
    traced: list[object] = []
    original = local_decompose._trace
    monkeypatch.setattr(local_decompose, "_trace", lambda node, t: traced.append(node.target) or original(node, t))
    repeated = local_decompose.decompose_repeated(ep, table)
    assert repeated is not None
    assert _ops(repeated) == _ops(ep.run_decompositions(table))
    decomposed = [n for n in ep.graph.nodes if n.op == "call_function" and (n.target in table or
                                                                         local_decompose._composite(n))]
    assert len(traced) * 2 < len(decomposed)  # the layers' nodes share their traces
    monkeypatch.setattr(decompositions, "_run", lambda *a: pytest.fail("retraced the whole program"))
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(rducc.compile(ep, opt_level=0)(*inputs), expected, rtol=1e-4, atol=1e-5)


def test_small_programs_keep_the_whole_retrace(decode_step) -> None:
    ep = decode_step[2]
    assert local_decompose.decompose_repeated(ep, decomposition_table(ep)) is None  # under REPEATED_MIN


def _mutating(ep: torch.export.ExportedProgram) -> list[str]:
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable]


class _SlicesFilled(torch.nn.Module):
    """Both slices taken before either is written (the second slice's view of the
    base must see the first write), then read again; and a `div_` of a product."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = x.new_zeros(x.shape[0], 6)
        left, right = out[:, :2], out[:, 2:]
        left.copy_(x)
        right.copy_(y)
        scaled = x * 2
        scaled /= 3
        return out * 1 + right.sum(1, keepdim=True) + scaled.sum(1, keepdim=True)


class _InputWritten(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return x + 1


def test_functionalizing_keeps_aliasing_and_declines_inputs() -> None:
    inputs = (torch.randn(3, 2), torch.randn(3, 4))
    ep = torch.export.export(_SlicesFilled(), inputs)
    assert _mutating(ep)
    assert local_decompose.functionalize_intermediates(ep) and not _mutating(ep)
    torch.testing.assert_close(ep.module()(*inputs), _SlicesFilled()(*inputs), rtol=0, atol=0)
    written = torch.export.export(_InputWritten(), (torch.randn(3),))
    assert not local_decompose.functionalize_intermediates(written)  # an input: only a retrace handles it
