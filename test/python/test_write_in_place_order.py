"""`rdu-insert-dma`'s in-place write-back asks each block's order once (`Orders`:
a `BlockOrder` kept across its rewrites), where it walked the whole block for
every question (what reads a buffer before or after a write, asked per updated
global: quadratic in a deep training step, which updates every weight and
optimizer state). On training steps in flight, the rewrite gives the IR the
order asked afresh for every question gives, from a few walks of each block."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from training_cases import GatedStack
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block

import rducc
import rducc.passes.rdu_insert_dma as insert_dma
from rducc.dialects import liveness
from rducc.dialects.liveness import BlockOrder
from rducc.passes.rdu_insert_dma import write_in_place
from rducc.pipeline import pipeline_text

INPUTS = Path(__file__).resolve().parents[1] / "passes" / "Inputs"


class _Afresh(dict[Block, BlockOrder]):
    """The reference: every question walks the block again (the rewrite before `Orders`)."""

    def __getitem__(self, block: Block) -> BlockOrder:
        return BlockOrder(block)


@pytest.mark.parametrize("case", ["adamw, outlined, 12 kB of SRAM", "sgd momentum, inline"])
def test_in_place_rewrite_equals_asking_afresh(case: str, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    walks = {"afresh": 0, "held": 0}
    counting = ["held"]
    walk = liveness.positions

    def counted(block: Block) -> dict:  # type: ignore[type-arg]
        walks[counting[0]] += 1
        return walk(block)

    monkeypatch.setattr(liveness, "positions", counted)
    rewrite = write_in_place.write_back_in_place
    rewritten: list[tuple[str, str]] = []

    def both(module: ModuleOp, whole_over: frozenset[int] = frozenset()) -> None:
        reference = module.clone()
        with monkeypatch.context() as patch:
            patch.setattr(write_in_place, "Orders", _Afresh)
            counting[0] = "afresh"
            rewrite(reference, whole_over)
        counting[0] = "held"
        rewrite(module, whole_over)
        rewritten.append((str(module), str(reference)))

    monkeypatch.setattr(insert_dma, "write_back_in_place", both)
    torch.manual_seed(0)
    x = torch.randn(2, 8, 64)
    if case.startswith("adamw"):
        target = tmp_path / "small-sram.toml"
        target.write_text(f'inherits = "{INPUTS / "train-hbm.toml"}"\nname = "small-sram"\n'
                          "hbm_bytes = 1_000_000_000\nsram_bytes = 12_000\n")
        passes = pipeline_text(1).replace("rdu-outline-layers", "rdu-outline-layers{training=always}")
        rducc.compile_training(GatedStack(3), (x,), optimizer="adamw", lr=1e-3, opt_level=1, passes=passes,
                               target=str(target))
    else:
        rducc.compile_training(GatedStack(3), (x,), optimizer="sgd", lr=1e-2, momentum=0.9, opt_level=1)
    assert rewritten and all(new == reference for new, reference in rewritten)
    assert any("tier.scatter" in new or new.count("tier.get_global") for new, _ in rewritten)
    assert walks["afresh"] > 4 * walks["held"] > 0, walks
