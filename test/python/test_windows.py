"""Move only what is read: a static slice of an off-chip tensor is a DMA of its
window (strided too), and a contiguous window a kernel only passes on is a
`tier.view`, no copy. The stacked-KV-cache decode step (one [layers, ...] key
and value input, `k_cache[i]` per layer) moves the bytes the per-layer form
moves, runs one looped `@layer`, and matches eager."""

from __future__ import annotations

import models
import pytest
import torch
from torch import nn

import rducc
from rducc.dialects.tier import DmaOp, ViewOp
from rducc.model.program_walk import transfer_bytes

LAYERS = 3


@pytest.fixture(scope="module")
def stacked():
    model, inputs = models.tiny_llama_decode_stacked(layers=LAYERS)
    return model, inputs, {level: rducc.compile(model, inputs, opt_level=level) for level in (0, 2)}


def _max_error(expected, actual) -> float:
    return max(float((e - a).abs().max()) for e, a in zip(expected, actual))


def _ops(program, kind):
    return [op for op in program.module.walk() if isinstance(op, kind)]


def _reads_of(program, name: str) -> list[int]:
    """Bytes of each DMA whose source is the input `name` (or a view of it)."""
    found = []
    for op in _ops(program, DmaOp):
        source = op.source
        while isinstance(source.owner, ViewOp):
            source = source.owner.source
        if source.name_hint == name:
            found.append(transfer_bytes(op))
    return found


@pytest.mark.parametrize("level", [0, 2])
def test_stacked_cache_matches_eager(stacked, level: int) -> None:
    model, inputs, programs = stacked
    with torch.no_grad():
        expected = model(*inputs)
    assert _max_error(expected, programs[level](*inputs)) < 1e-5


@pytest.mark.parametrize("level", [0, 2])
def test_each_layer_reads_only_its_window(stacked, level: int) -> None:
    """No DMA moves the whole stacked cache: each reads one layer's window of it,
    directly or through a `tier.view` passed to the layer."""
    _, inputs, programs = stacked
    program = programs[level]
    stacked_shape = tuple(inputs[3].shape)
    layer_bytes = inputs[3][0].numel() * inputs[3].element_size()
    whole = [op for op in _ops(program, DmaOp) if op.source.type.get_shape() == stacked_shape]
    assert all(transfer_bytes(op) == layer_bytes for op in whole)
    views = [op for op in _ops(program, ViewOp) if op.source.type.get_shape() == stacked_shape]
    assert all(op.window_sizes == (1, *stacked_shape[1:]) for op in views)
    assert len(whole) + len(views) >= 2 * LAYERS
    assert program.mlir.count("func.call @layer") == LAYERS  # outlined at -O0 too


def test_stacked_cache_moves_what_the_per_layer_form_moves(stacked) -> None:
    torch.manual_seed(0)
    per_layer, per_layer_inputs = models.tiny_llama_decode(cached=16)
    if LAYERS != 2:
        from transformers import LlamaConfig

        config = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=LAYERS,
                             num_attention_heads=4, num_key_value_heads=2)
        per_layer = models.LlamaDecodeStep(config).eval()
        per_layer_inputs = models.decode_step_inputs(config, 16)
    reference = rducc.compile(per_layer, per_layer_inputs, opt_level=2).report
    report = stacked[2][2].report
    assert report.hbm_bytes + report.ddr_bytes <= 1.01 * (reference.hbm_bytes + reference.ddr_bytes)
    assert [(loop.calls, loop.looped) for loop in report.loops] == [(LAYERS, True)]


class Strided(nn.Module):
    """Reads every other column of one input and a middle block of another."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(16, 8))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x[:, ::2] @ self.weight + y[2:6, 4:12].sum()


@pytest.mark.parametrize("level", [0, 2])
def test_strided_and_block_windows(level: int) -> None:
    torch.manual_seed(0)
    model, x, y = Strided().eval(), torch.randn(4, 32), torch.randn(8, 16)
    program = rducc.compile(model, (x, y), opt_level=level)
    with torch.no_grad():
        assert float((program(x, y) - model(x, y)).abs().max()) < 1e-5
    assert _reads_of(program, "x") == [4 * 16 * 4]  # half the columns
    assert _reads_of(program, "y") == [4 * 8 * 4]  # the 4x8 block
    strided = [op for op in _ops(program, DmaOp) if op.strides is not None]
    assert [list(op.strides.get_values()) for op in strided] == [[1, 2]]


class IndexingLayer(nn.Module):
    """A layer that picks its own part of a shared input and of a stacked weight."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index
        self.fc = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, cache: torch.Tensor, stacked: torch.Tensor) -> torch.Tensor:
        return x + self.fc(x) * cache[self.index] + x @ stacked[self.index]


class IndexingStack(nn.Module):
    def __init__(self, layers: int = 3) -> None:
        super().__init__()
        self.stacked = nn.Parameter(torch.randn(layers, 16, 16) * 0.1)
        self.layers = nn.ModuleList(IndexingLayer(i) for i in range(layers))

    def forward(self, x: torch.Tensor, cache: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, cache, self.stacked)
        return x


@pytest.mark.parametrize("level", [0, 2])
def test_layers_differing_in_constant_indices_are_one_layer(level: int) -> None:
    """The index into the shared input and the stacked weight becomes an argument
    (each call passes its window): one @layer, called per layer, looped: at -O2 one
    kernel, at -O0 a loop of its several kernels (a configuration load costs a launch)."""
    torch.manual_seed(0)
    model, x, cache = IndexingStack().eval(), torch.randn(4, 16), torch.randn(3, 4, 16)
    program = rducc.compile(model, (x, cache), opt_level=level)
    with torch.no_grad():
        assert float((program(x, cache) - model(x, cache)).abs().max()) < 1e-5
    assert program.mlir.count("func.func private @layer") == 1
    assert program.mlir.count("func.call @layer") == 3
    assert [(loop.calls, loop.looped, loop.kernels > 1) for loop in program.report.loops] == [(3, True, level == 0)]


@pytest.mark.parametrize("tp", [2, 4])
def test_stacked_cache_is_split_across_sockets_by_kv_heads(stacked, tp: int) -> None:
    """Under tp the stacked cache is split along kv_heads through each layer's
    slice (4 ranks over 2 KV heads: a head a pair), nothing is all-gathered, and
    each socket's DMAs read its own heads' window of its part."""
    from rducc.api import after
    from rducc.dialects.split import Split
    from rducc.dialects.rdu.collectives import AllGatherOp
    from rducc.passes.rdu_partition import RduPartition
    from rducc.runtime.sockets import shard_specs

    model, inputs, _ = stacked
    program = rducc.compile(model, inputs, target="sn40l-8", opt_level=0,
                            passes=[after("rdu-canonicalize", RduPartition(tp=tp))])
    assert shard_specs(program.module)[0][3:] == [Split(((2, 2, tp // 2, 0),))] * 2
    assert not _ops(program, AllGatherOp)
    part = (LAYERS, 1, 1, *inputs[3].shape[3:])  # one socket's part: one KV head of every layer
    views = [op for op in _ops(program, ViewOp) if op.source.type.get_shape() == part]
    assert len(views) == 2 * LAYERS and all(op.window_sizes == (1, *part[1:]) for op in views)
    with torch.no_grad():
        expected = model(*inputs)
    assert _max_error(expected, program(*inputs)) < 1e-5
