"""Same-process A/B of round 19's runtime changes at one and two threads (issue 32).

`--change activation-parts`: a map body part that computes an activation of
one input (`rducc.runtime.activations.cones`: Mixtral's `up * silu(gate)`,
the gate read as two body arguments) before ran op by op (negation, exp, add,
divide, product: five passes, `torch.exp`'s bits); after, torch's kernel of
the activation, as eager calls it (eager's bits), then the rest of the body.
Undone while the before program is compiled and first run.

`--change finite-check`: a whole-body activation run as torch's kernel
(ViT's and ConvNeXt's GELU) before summed its result after every call to
find inputs that are not finite; after, that pass is made only where this
CPU's kernel does not keep the body's values there (decided once, at the
map's compile: `activations.agrees_off_finite`). Undone while the before
program is compiled and first run (every agreement false: no body part is
a kernel's there either; ConvNeXt-T's and ViT-B/16's GELUs are whole bodies).

Each chosen full-size zoo model is compiled twice in one process (before,
after), both checked against eager; at each thread count eager, before and
after are timed interleaved (`runtime_threads_ab.best_clocks`), and the maps'
steps (least calling-thread CPU over N calls, interleaved). The table and
options are `runtime_round18_ab.main`'s. Run with `OMP_WAIT_POLICY=PASSIVE`
on a loaded machine.

Run: python bench/runtime_round19_ab.py --change activation-parts|finite-check [--only NAME ...]
     [--threads N ...] [--calls N]
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from runtime_round18_ab import Change, main

from rducc.runtime import activations


@contextlib.contextmanager
def _no_parts() -> Iterator[None]:
    """Before: no body part is an activation's kernel."""
    plain = activations.cones
    activations.cones = lambda block, first, compile_block: activations.Cones()
    try:
        yield
    finally:
        activations.cones = plain


@contextlib.contextmanager
def _always_checked() -> Iterator[None]:
    """Before: every whole-body activation checks its result for non-finite values."""
    plain = activations.agrees_off_finite
    activations.agrees_off_finite = lambda name, computation: False
    try:
        yield
    finally:
        activations.agrees_off_finite = plain


CHANGES: dict[str, Change] = {
    "activation-parts": (_no_parts, True, lambda step, op: op == "rdu.map", "mixtral_100m"),
    "finite-check": (_always_checked, True, lambda step, op: op == "rdu.map", "convnext_t"),
}
"""Each change: the context it is undone in, whether it is made where the
steps are made, the steps it changes (by step and op name) and the model it is for."""


if __name__ == "__main__":
    main(CHANGES, __doc__)
