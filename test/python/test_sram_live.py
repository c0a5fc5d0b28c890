"""The SRAM overlap check is whole-program: the `tier.alloc` verifier, the
independent checker (sram_checker.py) and the allocator agree on buffers
live across a kernel, around a loop and across a call (issue 20, item 4).

The programs are the chunks of test/dialects/tier-sram-live.mlir: three
shapes of overlap (a kernel's value, a buffer inside a loop, what a called
function places, each over a buffer live around it) and a valid program.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from rducc.diagnostics import LocatedError
from rducc.dialects.contracts import module_target
from rducc.passes.rdu_sram_alloc import RduSramAlloc
from rducc.tools.opt import RduccOptMain
from sram_checker import check_placed

CHUNKS = (Path(__file__).resolve().parents[1] / "dialects" / "tier-sram-live.mlir").read_text().split("// -----")
SHAPES = {"kernel value": (0, "in 'tier.compute'"), "call": (1, "which @layer places"), "loop": (2, "inside 'scf.for'")}
CAPACITY = 1024


def _parse(text: str) -> ModuleOp:
    context: Context = RduccOptMain(args=["-"]).ctx
    return Parser(context, text).parse_module()


@pytest.mark.parametrize("shape", SHAPES)
def test_the_verifier_and_the_checker_reject_each_shape(shape: str) -> None:
    chunk, message = SHAPES[shape]
    module = _parse(CHUNKS[chunk])
    with pytest.raises(VerifyException, match=message):
        module.verify()
    with pytest.raises(AssertionError, match="overlap|over it"):
        check_placed(module, CAPACITY)


def test_the_valid_program_passes_both() -> None:
    module = _parse(CHUNKS[-1])
    module.verify()
    check_placed(module, CAPACITY)


def _unplaced(text: str) -> ModuleOp:
    """The chunk before SRAM allocation: no offsets, at level memory."""
    text = re.sub(r"\{tier\.offset = \d+ : i64\} |offset \d+ ", "", text)
    return _parse(f"builtin.module attributes {{rdu.level = #rdu<level memory>}} {{\n{text}\n}}")


@pytest.mark.parametrize("shape", ["kernel value", "loop"])
def test_the_allocator_places_around_what_is_live(shape: str) -> None:
    """Unplaced, the same programs get offsets the verifier and the checker accept."""
    module = _unplaced(CHUNKS[SHAPES[shape][0]])
    RduSramAlloc().apply(Context(), module)
    module.verify()
    check_placed(module, module_target(module).sram_bytes)


@pytest.mark.parametrize("chunk", [SHAPES["call"][0], -1])
def test_the_allocator_keeps_nothing_live_across_a_call(chunk: int) -> None:
    """A called function's buffers start at offset 0: a caller's buffer live
    across the call is refused, with the call's location."""
    with pytest.raises(LocatedError, match="is live across the call of @layer"):
        RduSramAlloc().apply(Context(), _unplaced(CHUNKS[chunk]))
