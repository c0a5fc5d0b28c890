"""What the passes share: `RduPass`, their base class, and the level checks.

Each pass declares the IR levels it accepts (`accepts`) and the level it
leaves (`produces`, None: the level it was given); `RduPass.apply` checks the
first before the pass's `rewrite` and sets the second after it, so no pass
checks or sets a level itself."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from rducc.dialects.contracts import (
    LEVEL,
    LOWERED_LEVELS,
    TARGET,
    TENSOR_LEVELS,
    Level,
    bucket_of,
    level_of,
    module_target,
    set_level,
)
from rducc.dialects.program import functions
from rducc.dialects.tier import BufferType
from rducc.errors import RduccError
from rducc.targets import Target


def require_level(module: ModuleOp, pass_name: str, accepts: Sequence[Level]) -> None:
    """Refuse a module whose `rdu.level` is not one the pass accepts (an unmarked
    module is taken as it is): one error naming the pass and both levels."""
    level = level_of(module)
    if level is not None and level not in accepts:
        raise RduccError(f"{pass_name} takes IR at level {' or '.join(accepts)}; "
                         f"this module is at level {level}")


def require_tensor_program(module: ModuleOp, pass_name: str, accepts: Sequence[Level] = TENSOR_LEVELS) -> None:
    """Refuse a program already lowered to buffers (rdu-insert-dma's output), or
    at a level the pass does not accept: the passes before it work on tensors only."""
    level = level_of(module)
    if level in LOWERED_LEVELS:
        raise RduccError(f"{pass_name} works on tensor programs (levels graph, kernels); "
                         f"this one is at level {level}")
    require_level(module, pass_name, accepts)
    for function in functions(module):
        for op in function.walk():
            buffers = [v for v in (*op.operands, *op.results) if isinstance(v.type, BufferType)]
            if buffers or (op is function and any(isinstance(a.type, BufferType) for a in function.args)):
                raise RduccError(f"{pass_name} works on tensor programs (levels graph, kernels); "
                                 f"@{function.sym_name.data} already uses tier buffers ({op.name})")


@dataclass(frozen=True)
class RduPass(ModulePass):
    """An rducc pass: the levels it takes and leaves, and the target option.

    `apply` is the contract every runner gets (rducc's pipeline, rducc-opt,
    xDSL's, a test): refuse a module at a level not in `accepts` (and, when
    `on_tensors`, one already on tier buffers) after its options
    (`check_options`), run the pass's `rewrite`, then
    mark the module at `produces` when the pass changes the level."""

    accepts: ClassVar[tuple[Level, ...]] = tuple(Level)
    produces: ClassVar[Level | None] = None
    on_tensors: ClassVar[bool] = False
    """The pass works on tensor programs only (the passes before rdu-insert-dma)."""

    target: str = field(default="", kw_only=True)
    """Target name or file; default: the module's rdu.target, else sn40l."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        buckets = [inner for inner in op.ops if isinstance(inner, ModuleOp) and bucket_of(inner) is not None]
        if buckets:
            self._apply_per_bucket(ctx, op, buckets)
            return
        self.check_options()
        if self.on_tensors:
            require_tensor_program(op, self.name, self.accepts)
        else:
            require_level(op, self.name, self.accepts)
        self.rewrite(ctx, op)
        if self.produces is not None:
            set_level(op, self.produces)

    def _apply_per_bucket(self, ctx: Context, outer: ModuleOp, buckets: Sequence[ModuleOp]) -> None:
        """A module of shape buckets (`rducc --shapes`): the pass runs on each
        bucket as the whole program it is (detached, with the level and target
        the outer module says once), and the outer module takes the level they reach."""
        shared = {key: outer.attributes[key] for key in (LEVEL, TARGET) if key in outer.attributes}
        for inner in buckets:
            inner.detach()
            for key, value in shared.items():
                inner.attributes.setdefault(key, value)
            try:
                self.apply(ctx, inner)
            finally:
                outer.body.block.add_op(inner)
        for key in (LEVEL, TARGET):
            values = {str(inner.attributes.get(key)) for inner in buckets}
            if len(values) == 1 and key in buckets[0].attributes:
                outer.attributes[key] = buckets[0].attributes[key]
                for inner in buckets:
                    inner.attributes.pop(key, None)

    def check_options(self) -> None:
        """Refuse option values the pass cannot run with (before the level check:
        a bad option is the pipeline's error, whatever the module)."""

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        """The pass itself, on a module at a level it accepts."""
        raise NotImplementedError(f"{type(self).__name__} defines no rewrite")

    def target_of(self, module: ModuleOp) -> Target:
        """The target this pass works for: its `target` option, else the module's."""
        return module_target(module, self.target)
