"""`tier.alloc`'s overlap check sweeps each block once (`sram_overlaps`), where it
walked every later op of the block for each placed buffer (quadratic in a long
block: a deep training step's final verify). The sweep names, for every buffer,
the placement the walk named first, on a placed training step (outlined layers'
calls, tile loops, kernel body values) whose offsets are redrawn so that many
buffers overlap; and the verifier runs the sweep once per block inside
`unchanged()`, and looks up each global and callee in one index of the module."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from training_cases import GatedStack
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Operation

import rducc
from rducc.dialects import contracts, tier
from rducc.dialects.liveness import in_block, ops_while_live
from rducc.dialects.program import kernel_name
from rducc.dialects.tier import AllocOp, ComputeOp, DeallocOp, body_value_range, callee_sram, ranges_overlap
from rducc.dialects.unchanged import unchanged
from rducc.pipeline import pipeline_text

INPUTS = Path(__file__).resolve().parents[1] / "passes" / "Inputs"


@pytest.fixture(scope="module")
def placed(tmp_path_factory: pytest.TempPathFactory) -> ModuleOp:
    """An AdamW step of three outlined gated layers, placed with 12 kB of SRAM (tile loops)."""
    target = tmp_path_factory.mktemp("targets") / "small-sram.toml"
    target.write_text(f'inherits = "{INPUTS / "train-hbm.toml"}"\nname = "small-sram"\n'
                      "hbm_bytes = 1_000_000_000\nsram_bytes = 12_000\n")
    torch.manual_seed(0)
    passes = pipeline_text(1).replace("rdu-outline-layers", "rdu-outline-layers{training=always}")
    step = rducc.compile_training(GatedStack(3), (torch.randn(2, 8, 64),), optimizer="adamw", lr=1e-3,
                                  opt_level=1, passes=passes, target=str(target))
    ops = list(step.module.walk())
    assert any(isinstance(op, func.CallOp) for op in ops) and any(isinstance(op, scf.ForOp) for op in ops)
    assert any(body_value_range(op) is not None for op in ops)
    return step.module


KINDS = ("allocated after it", "allocated inside", "value at", "places, while")
"""What each kind of placement's description says: a later buffer, a loop's, a kernel's value, a callee's."""


def _walked_overlap(alloc: AllocOp) -> str | None:
    """The definition (the verifier before the sweep): the first placement met walking
    the ops that run while `alloc`'s buffer is live that shares a byte with it."""
    own = alloc.byte_range
    assert own is not None
    for op in ops_while_live(alloc, lambda op: isinstance(op, DeallocOp) and op.buffer == alloc.result):
        for other, what in _placed_by(alloc, op):
            if ranges_overlap(own, other):
                return what.format(f"[{other[0]}, {other[1]})")
    return None


def _placed_by(alloc: AllocOp, op: Operation) -> Iterator[tuple[tuple[int, int], str]]:
    if isinstance(op, AllocOp) and (placed := op.byte_range) is not None:
        if op.parent_block() is alloc.parent_block():
            yield placed, "the live buffer {} allocated after it"
        else:
            holder = in_block(op, alloc.parent_block()) or op
            yield placed, (f"the buffer {{}} allocated inside '{holder.name}'{tier._at(holder)} "
                           "while it is live around it")
    elif (placed := body_value_range(op)) is not None:
        compute = op.parent_op()
        if isinstance(compute, ComputeOp) and alloc.result not in compute.operands:
            yield placed, (f"the '{op.name}' value at {{}}{tier._at(op)} in 'tier.compute' "
                           f"\"{kernel_name(compute)}\" while it is live across the kernel")
    elif isinstance(op, func.CallOp):
        for placed in callee_sram(op):
            yield placed, (f"{{}}, which @{op.callee.string_value()} places, while it is live across the "
                           f"call{tier._at(op)}")


def _redraw_offsets(module: ModuleOp, draw: random.Random, spread: int) -> None:
    """Every SRAM buffer and kernel body value placed again at a random offset below
    `|spread|`; with `spread` < 0, each block's own buffers side by side from a random
    start (so that what overlaps them is a loop's buffer, a kernel's value or a
    callee's as often as a later buffer of the block)."""
    ends: dict[Block, int] = {}
    for op in module.walk():
        if isinstance(op, AllocOp) and op.offset is not None:
            block = op.parent_block()
            if block is not None and spread < 0:
                offset = ends.setdefault(block, draw.randrange(0, -spread, 64))
                ends[block] = offset + op.reserved_bytes
            else:
                offset = draw.randrange(0, abs(spread), 64)
            op.properties["offset"] = IntegerAttr(offset, i64)
        elif body_value_range(op) is not None:
            op.attributes[contracts.BODY_OFFSET] = IntegerAttr(draw.randrange(0, abs(spread), 64), i64)


def _blocks(module: ModuleOp) -> list[Block]:
    return list(dict.fromkeys(block for op in module.walk() if isinstance(op, AllocOp) and op.offset is not None
                              if (block := op.parent_block()) is not None))


def test_sweep_names_the_first_overlap_the_walk_names(placed: ModuleOp) -> None:
    draw = random.Random(0)
    found = kept = 0
    named: set[str] = set()
    for spread in (2_048, 16_384, 65_536, -2_048, -16_384, -65_536):  # < 0: a block's buffers side by side
        module = placed.clone()
        _redraw_offsets(module, draw, spread)
        for block in _blocks(module):
            swept = tier.sram_overlaps(block)
            for alloc in (op for op in block.ops if isinstance(op, AllocOp) and op.byte_range is not None):
                assert swept.get(alloc) == _walked_overlap(alloc), alloc
                found += alloc in swept
                kept += alloc not in swept
            named.update(kind for what in swept.values() for kind in KINDS if kind in what)
    assert found > 20 and kept > 20  # overlaps named, and buffers that share no byte
    assert "allocated after it" in named, named  # (each other kind's text: error_cases' rducc-opt overlap rows)


@pytest.fixture
def swept(monkeypatch: pytest.MonkeyPatch) -> list[Block]:
    """The blocks `tier.sram_overlaps` sweeps from here on, in order."""
    blocks: list[Block] = []
    sweep = tier.sram_overlaps

    def counted(block: Block) -> dict[AllocOp, str]:
        blocks.append(block)
        return sweep(block)

    monkeypatch.setattr(tier, "sram_overlaps", counted)
    return blocks


def test_verify_sweeps_each_block_once(placed: ModuleOp, swept: list[Block], monkeypatch: pytest.MonkeyPatch) -> None:
    indexed: list[Operation] = []
    symbols = tier._symbols

    def index(table: Operation) -> dict[str, Operation]:
        indexed.append(table)
        return symbols(table)

    monkeypatch.setattr(tier, "_symbols", index)
    module = placed.clone()
    with unchanged():
        module.verify()
    assert swept and len(swept) == len(set(swept)) == len(_blocks(module))
    assert indexed == [module]  # every `tier.get_global` and call looked up in one index of the module
    swept.clear()
    module.verify()  # outside `unchanged()`: a sweep for each buffer
    assert len(swept) > len(_blocks(module))


def test_preparing_the_step_to_run_sweeps_each_block_at_most_once(placed: ModuleOp, swept: list[Block]) -> None:
    """The runtime proves each weight DMA's aliasing by its buffers' verifiers (`_sound`): inside
    one `unchanged()` block, one sweep a block (was one a buffer, each asked again per alias: a
    one-layer Llama training test's run took 160 s of its 170)."""
    from rducc.runtime.sockets import placed_runner

    placed_runner(placed.clone())
    assert swept and len(swept) == len(set(swept)), (len(swept), len(set(swept)))
