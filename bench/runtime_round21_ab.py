"""Same-process A/B of round 21's placement changes at one and two threads (issue 32).

`--change slice-views`: `rdu-sram-alloc` places a slice of a body value on
its operand's bytes (`tier.views_operand_bytes`), so the runtime binds it as
a NumPy view; before, each slice had bytes of its own and its step copied
into them every call (Mixtral's gate and up halves of each grouped product,
the rotary halves of q and k). Undone while the before program is compiled:
it is placed with slices copied.

`--change epilogue-reads`: `rdu-sram-alloc` keeps a product's operands live
up to its bias add (`rducc.dialects.bias_adds`); before, the add could take
their bytes, the runtime then ran the folded `addmm` into the product's bytes
(the add's own were its operand's), and the reshape placed on the add's
bytes copied the value there every call (ConvNeXt's and Swin's fc1: a linear
layer's `[tokens, 4C]` back to `[1, H, W, 4C]`). Undone while the before
program is compiled.

`--change attention-values`: an attention chain's kernel reads its values
before reshapes that regroup only their batch dims (`fused_attention._unmerged`):
Swin's `[windows, heads, tokens, E]`, a transposed view, reshaped to
`[windows * heads, tokens, E]` for the batched product, copied every call;
after, SDPA reads the strided view, as eager's does. Undone while the before
program is compiled and first run.

`--change all`: the three undone together (main's placement and chains).

Each chosen full-size zoo model is compiled twice in one process (before,
after), both checked against eager; at each thread count eager, before and
after are timed interleaved (`runtime_threads_ab.best_clocks`: least
calling-thread CPU, process CPU and wall over N rounds), and the changed
steps (each step's least calling-thread CPU over N calls, interleaved). The
table and options are `runtime_round18_ab.main`'s. Run with
`OMP_WAIT_POLICY=PASSIVE` on a loaded machine.

Run: python bench/runtime_round21_ab.py --change slice-views|epilogue-reads|attention-values|all [--only NAME ...]
     [--threads N ...] [--calls N]
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from runtime_round18_ab import Change, main

from rducc.dialects.tier import OPERAND_VIEW_OPS
from rducc.passes import rdu_sram_alloc
from rducc.passes.rdu_sram_alloc import Rules
from rducc.runtime import fused_attention


@contextlib.contextmanager
def _placed_by(first: Rules) -> Iterator[None]:
    """Before: buffers collected by `first` (then, where that does not fit, as always)."""
    plain = rdu_sram_alloc.PLACEMENT_RULES
    rdu_sram_alloc.PLACEMENT_RULES = (first, *plain[1:])
    try:
        yield
    finally:
        rdu_sram_alloc.PLACEMENT_RULES = plain


@contextlib.contextmanager
def _values_reshaped() -> Iterator[None]:
    """Before: the kernel reads the values the product reads (after their reshapes)."""
    plain = fused_attention._unmerged  # noqa: SLF001 - the rule this A/B undoes
    fused_attention._unmerged = lambda value, reader: (value, ())  # noqa: SLF001
    try:
        yield
    finally:
        fused_attention._unmerged = plain  # noqa: SLF001


@contextlib.contextmanager
def _all_undone() -> Iterator[None]:
    """Before: slices copied, no epilogue reads, values read after their reshapes."""
    with _placed_by(rdu_sram_alloc.PLACEMENT_RULES[-1]), _values_reshaped():
        yield


CHANGES: dict[str, Change] = {
    "slice-views": (lambda: _placed_by(Rules(OPERAND_VIEW_OPS - {"rdu.slice"})), True,
                    lambda step, op: op == "rdu.slice", "mixtral_100m"),
    "epilogue-reads": (lambda: _placed_by(Rules(epilogues=False)), True,
                       lambda step, op: op in ("rdu.reshape", "rdu.matmul", "rdu.map"), "convnext_t"),
    "attention-values": (_values_reshaped, True, lambda step, op: op == "rdu.reshape" or "attention" in step,
                         "swin_t"),
    "all": (_all_undone, True, lambda step, op: op in ("rdu.reshape", "rdu.slice"), "swin_t"),
}
"""Each change: the context it is undone in, whether it is made where the
steps are made, the steps it changes (by step and op name) and the model it is for."""


if __name__ == "__main__":
    main(CHANGES, __doc__)
