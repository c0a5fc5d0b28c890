"""rducc's pass-authoring API: what a pass over rducc's dialects needs.

A pass is an xDSL `ModulePass`; most are a few `RewritePattern`s, and
`PatternPass` runs those for you. On top of xDSL this module gives:

- matchers for the dataflow ops: `producer`, `users`, `only_user`,
  `is_elementwise`, `map_computes` (does a map compute a given formula?),
  `kernel_of`, `kernels`;
- the target: `target_of(op)` (the `Target` the module is compiled for);
- the cost model: `candidate_cost(ops)` (the modeled time of some ops run
  as one kernel, as the real pipeline would tile, place and cost it) and
  `kernel_cost(kernel)`;
- tiling: `tile_plans(kernel)` (every tiling that fits) and `set_tiling`
  (record one, for a heuristic that runs instead of `rdu-tile`);
- builders whose result verifies: `build_map` (an elementwise op from a
  scalar formula, with PyTorch's f16/bf16-in-f32 arithmetic), `merge_maps`,
  `outline_kernel`;
- `before` / `after`, to insert a pass into the -O pipeline from Python
  (`rducc.compile(model, x, passes=[after("rdu-fuse", MyPass())])`).

docs/pass-authoring.md walks through writing, testing and measuring a pass.
The names here are the stable ones; the rest of rducc may change.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, LocationAttr, ModuleOp, TensorType, UnknownLoc
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from rducc.dialects import tier
from rducc.dialects.contracts import Level, input_arg, module_target, set_level, set_target, tile_plan_of
from rducc.dialects.program import ENTRY, kernel_name
from rducc.dialects.rdu import dataflow as rdu
from rducc.errors import RduccError
from rducc.frontend.scalar import Number, ScalarBuilder, build_map_op, opmath_type
from rducc.model.cost_model import KernelCost
from rducc.model.kernel_model import (
    TilePlan,
    candidate_loops,
    kernel_group,
    make_group,
    tile_sizes,
    untiled,
    working_set,
)
from rducc.passes.rdu_fuse import outline_kernel
from rducc.passes.rdu_merge_maps import merged_map
from rducc.passes.rdu_tile import record_plan
from rducc.pipeline import after, before
from rducc.targets import Target

Formula = Callable[[ScalarBuilder, list[SSAValue]], SSAValue]
"""A scalar formula: from the builder and one scalar per input, the result
(`lambda b, xs: b.mul(xs[0], b.sigmoid(xs[0]))`). Inputs arrive in the
compute type: f32 for f16/bf16 tensors, as PyTorch's CPU kernels compute."""


class PatternPass(ModulePass):
    """A pass that applies `patterns()` everywhere, again and again, until none matches."""

    @abstractmethod
    def patterns(self) -> Sequence[RewritePattern]:
        """The rewrite patterns this pass applies."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        applier = GreedyRewritePatternApplier(list(self.patterns()))
        PatternRewriteWalker(applier, apply_recursively=True).rewrite_module(op)


# -- matchers ------------------------------------------------------------------


def producer(op: Operation, index: int) -> Operation | None:
    """The op that defines operand `index` of `op` (None for a block argument)."""
    value = op.operands[index]
    owner = value.owner
    return owner if isinstance(owner, Operation) else None


def users(value: SSAValue) -> list[Operation]:
    """The ops that use `value`, in use order (an op using it twice appears twice)."""
    return [use.operation for use in value.uses]


def only_user(value: SSAValue) -> Operation | None:
    """The single op that uses `value`, or None when it has no user or several."""
    found = {use.operation for use in value.uses}
    return found.pop() if len(found) == 1 else None


def is_elementwise(op: Operation | None) -> bool:
    """Whether `op` is an elementwise `rdu.map`."""
    return isinstance(op, rdu.MapOp)


def map_computes(op: Operation | None, formula: Formula) -> bool:
    """Whether `op` is an `rdu.map` whose body is exactly `formula` of its
    inputs, in the form `build_map` (and rducc's importer) would build it."""
    if not isinstance(op, rdu.MapOp):
        return False
    placeholders = Block(arg_types=[v.type for v in op.inputs]).args  # no uses of real values
    try:
        reference = build_map(list(placeholders), op.result.type, formula)
    except (IndexError, TypeError, ValueError):  # the formula does not fit these inputs
        return False
    return op.body.is_structurally_equivalent(reference.body)


def kernel_of(op: Operation) -> rdu.KernelOp | None:
    """The `rdu.kernel` that holds `op`, if fusion has put it in one."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, rdu.KernelOp):
        parent = parent.parent_op()
    return parent


def kernels(module: ModuleOp) -> list[rdu.KernelOp]:
    """Every `rdu.kernel` of the module, in program order."""
    return [op for op in module.walk() if isinstance(op, rdu.KernelOp)]


# -- the target and the cost model -----------------------------------------------


def target_of(op: Operation) -> Target:
    """The target the enclosing module is compiled for (its `rdu.target`, else sn40l)."""
    top = op
    while top.parent_op() is not None:
        top = top.parent_op()  # type: ignore[assignment]
    if not isinstance(top, ModuleOp):
        raise RduccError(f"'{op.name}' is not inside a module, so it has no target")
    return module_target(top)


def _candidate_module(ops: Sequence[Operation], target: Target) -> ModuleOp:
    """A module whose @forward runs copies of `ops` at level 'kernels': the ops
    outlined as one kernel, or a lone `rdu.kernel` copied as it is."""
    group = make_group(ops)
    block = Block(arg_types=[v.type for v in group.inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(group.inputs, block.args))
    copies = []
    for op in ops:
        copy = op.clone(value_mapper=mapping)
        block.add_op(copy)
        copies.append(copy)
    block.add_op(func.ReturnOp(*[mapping[v] for v in group.outputs]))
    function = func.FuncOp(
        ENTRY, ([v.type for v in group.inputs], [v.type for v in group.outputs]), Region(block)
    )
    function.arg_attrs = ArrayAttr(
        [DictionaryAttr(input_arg(f"in{i}")) for i in range(len(group.inputs))]
    )
    module = ModuleOp([function])
    set_target(module, target)
    if not (len(copies) == 1 and isinstance(copies[0], rdu.KernelOp)):
        outline_kernel(copies, "candidate")
    set_level(module, Level.KERNELS)
    return module


_LOWERING = ("rdu-tile", "rdu-place-tiers", "rdu-insert-dma", "rdu-sram-alloc")
"""The passes that take a kernel from level 'kernels' to a placed, costable program."""


def _cost_alone(ops: Sequence[Operation], target: Target, tile: bool) -> KernelCost | None:
    from rducc.model.cost_model import estimate
    from rducc.pipeline import default_passes, run_passes

    module = _candidate_module(ops, target)
    wanted = _LOWERING if tile else _LOWERING[1:]
    try:
        run_passes(module, [p for p in default_passes(2) if p.name in wanted])
    except RduccError:
        return None
    return estimate(module, target).kernels[0]


def candidate_cost(ops: Sequence[Operation], target: Target | None = None) -> KernelCost | None:
    """The cost model's figures for `ops` (from one block, in order) run as one
    kernel on `target` (default: the ops' module's target): tiled, placed and
    costed by the same passes and formulas as the real pipeline. None when
    they cannot form one kernel (it cannot be tiled into SRAM)."""
    if not ops:
        raise RduccError("candidate_cost needs at least one op")
    return _cost_alone(ops, target or target_of(ops[0]), tile=True)


def kernel_cost(kernel: rdu.KernelOp, target: Target | None = None) -> KernelCost | None:
    """The cost model's figures for an existing `rdu.kernel`, with the tiling
    recorded on it (by rdu-tile or `set_tiling`), else the one rdu-tile picks."""
    return _cost_alone([kernel], target or target_of(kernel), tile=tile_plan_of(kernel) is None)


def tile_plans(kernel: rdu.KernelOp, target: Target | None = None) -> list[TilePlan]:
    """Every tiling of the kernel whose working set fits the target, fewest
    tiles first: one parallel dim split into `count` tiles of `size` (count
    1: untiled). rdu-tile picks the first."""
    chosen = target or target_of(kernel)
    group = kernel_group(kernel)
    plans = [untiled()]
    for extent, dims in candidate_loops(group):
        plans += [TilePlan(size, extent // size, dims) for size in tile_sizes(extent, chosen.lanes) if size < extent]
    fitting = [plan for plan in plans if working_set(group, plan, chosen).fits(chosen)]
    return sorted(fitting, key=lambda plan: plan.count)


def set_tiling(kernel: rdu.KernelOp, plan: TilePlan, target: Target | None = None) -> None:
    """Record `plan` on the kernel as rdu-tile would, for a tiling heuristic that
    runs instead of rdu-tile; a plan whose working set does not fit is an error."""
    chosen = target or target_of(kernel)
    found = working_set(kernel_group(kernel), plan, chosen)
    if not found.fits(chosen):
        raise RduccError(
            f"kernel {kernel_name(kernel)}: {plan.count} tiles of {plan.size} need "
            f"{found.total_bytes} bytes of SRAM and {found.pmus} PMUs; {chosen.name} has "
            f"{chosen.sram_bytes} bytes and {chosen.pmus} PMUs"
        )
    record_plan(kernel, plan, found)


# -- builders ------------------------------------------------------------------


def build_map(
    inputs: Sequence[SSAValue | Number],
    result_type: Attribute,
    formula: Formula,
    location: LocationAttr | None = None,
) -> rdu.MapOp:
    """An `rdu.map` (not yet inserted) computing `formula` elementwise.

    Tensor inputs broadcast to `result_type`; numbers are constants. The
    formula gets every input converted to the compute type (f32 for f16/bf16
    results) and its value is cast to the result's element type, as rducc's
    importer builds maps, so the op verifies and rducc's passes treat it
    like any other.
    """
    if not isinstance(result_type, TensorType):
        raise RduccError(f"build_map needs a tensor result type, not {result_type}")
    compute = opmath_type(result_type.element_type)

    def body(builder: ScalarBuilder, scalars: list[SSAValue | Number]) -> SSAValue:
        return formula(builder, [builder.operand(s, compute) for s in scalars])

    return build_map_op(inputs, result_type, body, location or UnknownLoc())


def merge_maps(producer_map: rdu.MapOp, consumer_map: rdu.MapOp) -> rdu.MapOp:
    """One map computing `consumer_map(producer_map(...), ...)` (not yet inserted;
    the consumer's attributes and location carry over)."""
    return merged_map(producer_map, consumer_map)


__all__ = [
    "Formula",
    "ModulePass",
    "PatternPass",
    "PatternRewriter",
    "RewritePattern",
    "ScalarBuilder",
    "Target",
    "after",
    "before",
    "build_map",
    "candidate_cost",
    "is_elementwise",
    "kernel_cost",
    "kernel_of",
    "kernels",
    "map_computes",
    "merge_maps",
    "only_user",
    "op_type_rewrite_pattern",
    "outline_kernel",
    "set_tiling",
    "tile_plans",
    "TilePlan",
    "producer",
    "rdu",
    "target_of",
    "tier",
    "users",
]
