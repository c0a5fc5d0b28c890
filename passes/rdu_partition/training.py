"""Data parallelism for `rdu-partition{dp=N}`: which arguments carry the batch
(and, with `zero`, which hold the optimizer state it shards).

A data-parallel program is the SPMD program of `dp` replicas, each given its
share of the batch: every user input whose leading dim is the batch is split
along it (`rdu.shard`), the weights stay whole on every replica. The tensor
partitioner then carries the batch split through the graph by each op's dim
map, as it carries a tensor-parallel split: a sum over the batch (the loss, a
weight's gradient x^T dy, batch-norm statistics) becomes a partial sum that
`rdu.all_reduce` makes whole where it is used, so the loss and the gradients
are the full batch's, not one replica's.

Mixed precision (float32 master weights, bf16 compute) computes what
torch's DistributedDataParallel over autocast ranks computes: each replica's
16-bit weight gradient (a bf16 matmul, convolution or sum over its share of
the batch) rounded to bf16 by its own kernel, cast up to float32 (the
parameter's `.grad`) and all-reduced in float32 (`ddp_gradient`). A step
whose forward couples the rows (batch norm's statistics, a sum over the
batch all-reduced, as SyncBatchNorm) rounds its gradients the same way, as
DDP with SyncBatchNorm does; a 16-bit partial sum read otherwise (a forward
statistic) is kept in f32 through the all-reduce and rounded once.

ZeRO (`rdu-partition{dp=N zero=S}`): each optimizer state tensor
(`optimizer_state_args`: a global the step writes back that only optimizer
ops read, Adam's moments) is split `dp` ways along its first dim that
divides (`zero_dim`), so a replica holds 1/dp of it. The optimizer's
elementwise update then runs on that part. The gradient, a partial sum over
the replicas, is all-reduced and the part cut for the update (stage 1), or
reduce-scattered to it (stages 2 and 3); the parameter is cut locally
(`rdu.local_part`) and the updated parameter, split, all-gathered
(`parameter_results`) so every replica holds it whole for the next step's
forward (stages 1 and 2), or the parameter is held split too, all-gathered
before the forward's and the backward's first reader and written back split
(stage 3); the updated state stays split, as its global.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, StringAttr, TensorType, f32
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from rducc.dialects.contracts import (
    Phase,
    arg_attrs,
    executed_microbatches,
    global_of,
    input_label,
    is_input,
    is_outlined,
    phase_of,
    result_roles,
    result_updates,
    set_deferred,
)
from rducc.dialects.op_facts import facts_of
from rducc.dialects.program import entry_function, functions
from rducc.dialects.rdu.collectives import COLLECTIVE_OPS
from rducc.dialects.rdu.dataflow import BroadcastOp, IotaOp, MapOp, ReshapeOp, SliceOp, TransposeOp
from rducc.dialects.split import Split
from rducc.dialects.tier import GlobalOp
from rducc.errors import RduccError
from rducc.model.split_choice import (
    Candidate,
    SplitChoice,
    SplitEntry,
    StepProfile,
    candidates,
    choose,
    needs_sequence,
    step_profile,
)
from rducc.passes.rdu_partition.microbatches import microbatch_labels
from rducc.targets import Target


def widening_cast(op: Operation) -> bool:
    """Whether `op` is a map that only casts its one operand up to f32 (`arith.extf`)."""
    if not isinstance(op, MapOp) or len(op.operands) != 1:
        return False
    body = [inner.name for inner in op.body.block.ops]
    return body == ["arith.extf", "rdu.yield"] and op.results[0].type.element_type == f32  # type: ignore[attr-defined]


def ddp_gradient(value: SSAValue) -> bool:
    """Whether every reader of `value` (through reshapes and transposes) only casts it up to
    f32: a 16-bit gradient that becomes a float32 master weight's gradient, as autocast's
    cast's backward makes it. At dp its partial sum is each replica's own gradient, rounded by
    the replica's kernel, and all-reduced after the cast, in float32, as DDP all-reduces each
    rank's `.grad` (not widened to f32 before the cast, `_TensorPartitioner._widen_partial`)."""
    uses = list(value.uses)
    if not uses:
        return False
    for use in uses:
        user = use.operation
        if isinstance(user, ReshapeOp | TransposeOp):
            if not ddp_gradient(user.results[0]):
                return False
        elif not widening_cast(user):
            return False
    return True


def batch_size(function: func.FuncOp) -> int | None:
    """The batch: the leading dim of the first user input that has one (None: no such input)."""
    for arg, attrs in zip(function.args, arg_attrs(function)):
        if is_input(attrs) and isinstance(arg.type, TensorType) and arg.type.get_shape():
            return arg.type.get_shape()[0]
    return None


def batch_splits(function: func.FuncOp, dp: int, microbatches: int = 1) -> list[tuple[BlockArgument, Split]]:
    """Each user input of `function` whose leading dim is the batch, with its split
    `dp` ways along that dim. A step that runs its batch in `microbatches` parts
    itself (`rdu.microbatches`, each part a slice of the inputs) splits each part
    `dp` ways (a split with period batch / microbatches): replica r holds its
    share of every microbatch, so microbatch i runs on every replica at once and
    its slice is a local slice of each replica's part. Raises `RduccError` when
    there is no batched input or `dp` does not divide each microbatch."""
    batch = batch_size(function)
    if batch is None:
        raise RduccError(f"rdu-partition: dp={dp} splits the batch, but @{function.sym_name.data} has no "
                         "user input with a batch dimension")
    splits = []
    for arg, attrs in zip(function.args, arg_attrs(function)):
        if not is_input(attrs) or not isinstance(arg.type, TensorType):
            continue
        shape = arg.type.get_shape()
        if not shape or shape[0] != batch:
            continue  # not batched (a mask or table shared by every example): whole on every replica
        if batch % dp:
            raise RduccError(f"rdu-partition: dp={dp} does not divide the batch of {batch} "
                             f"(input '{input_label(attrs)}', shape {list(shape)}); use a dp that divides it")
        if microbatches > 1 and (batch // microbatches) % dp:
            raise RduccError(f"rdu-partition: dp={dp} does not divide a microbatch of {batch // microbatches} "
                             f"(input '{input_label(attrs)}', batch {batch} in {microbatches} microbatches); "
                             "use a dp that divides it, or fewer microbatches")
        period = batch // microbatches if microbatches > 1 else 0
        split = Split.of([(0, dp, 1, period)])
        assert split is not None
        splits.append((arg, split))
    return splits


def optimizer_state_args(module: ModuleOp, function: func.FuncOp) -> list[BlockArgument]:
    """The arguments of `function` holding optimizer state: each names a global
    that is not a parameter, that the step writes back (`rdu.result_updates`), of
    rank >= 1, read only by ops of the optimizer phase (a batch norm's running
    statistics are read by the forward, a loss scale by the forward too)."""
    updated = {u.name for u in result_updates(function) if u is not None and u.kind == "buffer"}
    kinds = {g.sym_name.data: g.attributes.get("kind") for g in module.ops if isinstance(g, GlobalOp)}
    found = []
    for arg, attrs in zip(function.args, arg_attrs(function)):
        name = global_of(attrs)
        kind = kinds.get(name or "")
        if (name not in updated or (isinstance(kind, StringAttr) and kind.data == "parameter")
                or not isinstance(arg.type, TensorType) or not arg.type.get_shape()):
            continue
        if arg.uses and all(phase_of(use.operation) == Phase.OPTIMIZER for use in arg.uses):
            found.append(arg)
    return found


def zero_dim(shape: Sequence[int], parts: int, held: Iterable[int] = ()) -> int | None:
    """The dim ZeRO splits a state tensor of `shape` along: the first that `parts`
    divides and that another split (`held`, tp's) does not use; None: none."""
    taken = set(held)
    return next((dim for dim, size in enumerate(shape) if dim not in taken and size >= parts and size % parts == 0),
                None)


def parameter_results(module: ModuleOp, function: func.FuncOp) -> list[bool]:
    """Per result of `function`: whether it is the new value of a parameter (`rdu.result_updates`)."""
    parameters = {g.sym_name.data for g in module.ops if isinstance(g, GlobalOp)
                  and isinstance(kind := g.attributes.get("kind"), StringAttr) and kind.data == "parameter"}
    return [u is not None and u.kind == "buffer" and u.name in parameters for u in result_updates(function)]


def is_fill(value: SSAValue) -> bool:
    """Whether `value` is a tensor of one value: an input-less `rdu.map` (its body
    has no arguments, so every element is the same)."""
    return isinstance(value.owner, MapOp) and not value.owner.inputs


def fill_value(value: SSAValue) -> float | None:
    """The number a fill holds when its body yields a constant, else None."""
    if not is_fill(value):
        return None
    assert isinstance(value.owner, MapOp)
    yielded = value.owner.body.block.last_op
    source = yielded.operands[0].owner if yielded is not None and yielded.operands else None
    if isinstance(source, arith.ConstantOp) and isinstance(source.value, IntegerAttr | FloatAttr):
        return float(source.value.value.data)
    return None


def ramp_length(value: SSAValue, dim: int) -> int | None:
    """n when `value` is the ramp `0, 1, ..., n-1` (an `rdu.iota`) reshaped to lie
    along `dim` (size 1 elsewhere), as torch.gather's import indexes the dims it
    does not gather along; else None."""
    owner = value.owner
    if not isinstance(owner, ReshapeOp) or not isinstance(iota := owner.input.owner, IotaOp):
        return None
    shape = owner.result.type.get_shape()
    length = iota.result.type.get_shape()[0]
    start, step = iota.start, iota.step
    if not (isinstance(start, IntegerAttr) and isinstance(step, IntegerAttr)
            and start.value.data == 0 and step.value.data == 1):
        return None
    if not 0 <= dim < len(shape) or shape[dim] != length or any(n != 1 for d, n in enumerate(shape) if d != dim):
        return None
    return length


def _flops(op: Operation, callees: dict[str, func.FuncOp] | None = None) -> int:
    """An op's FLOPs; a call of an outlined layer (in `callees`), its callee's ops'."""
    if isinstance(op, func.CallOp) and callees and (callee := callees.get(op.callee.string_value())) is not None:
        return sum(_flops(inner, callees) for inner in callee.body.block.ops)
    facts = facts_of(op)
    return facts.flops() if facts is not None else 0


def _weight_homes(op: Operation, home: dict[SSAValue, int]) -> list[int]:
    """The stages of the weights (arguments the forward reads) an outlined layer's call reads."""
    if not isinstance(op, func.CallOp):
        return []
    return [home[v] for v in op.operands if isinstance(v, BlockArgument) and v in home]


def training_stages(block: Block, pp: int, callees: dict[str, func.FuncOp] | None = None,
                    labels: dict[Operation, int] | None = None) -> dict[Operation, int]:
    """The pipeline stage of every op of a training step's block, for `pp` stages.

    The forward (`rdu.phase` forward) is cut into `pp` runs of consecutive ops
    of about equal FLOPs (its layers in order: the joint graph keeps no
    module names). Every op of the backward and the optimizer runs on the
    stage of the forward values and weights it reads (the lowest, where it
    reads several: a gradient flows from the last stage to the first), else
    on that of the values it reads; an op that reads nothing (a fill) on the
    stage of its first user. 1F1B runs stage s's backward on stage s's sockets.

    An outlined step (`callees`: `@layer_forward`, `@layer_backward`,
    `@layer_optimizer`) is cut by its calls' FLOPs, so whole layer calls go to
    a stage; a backward or optimizer call runs where the weights it reads live
    (the stage of its layer's forward call), not where a value every layer
    reads was made (the rotary tables, the mask: stage 0).

    A step that runs its microbatches itself (`labels`: each op's microbatch,
    `microbatches.microbatch_labels`) cuts each microbatch's forward alike; a
    forward op of no single microbatch (a weight's transpose, the loss's sum
    over the microbatches) goes where what it reads lives."""
    ops = [op for op in block.ops if not isinstance(op, func.ReturnOp)]
    forward = [op for op in ops if phase_of(op) in (None, Phase.FORWARD)]
    if labels is not None:
        forward = [op for op in forward if labels.get(op, -1) >= 0]
    flops = {op: _flops(op, callees) for op in forward}
    part = {op: labels[op] if labels is not None else 0 for op in forward}
    total: dict[int, int] = {}
    for op in forward:
        total[part[op]] = total.get(part[op], 0) + flops[op]
    stage: dict[Operation, int] = {}
    done = dict.fromkeys(total, 0)
    for op in forward:  # an op goes to the stage its middle falls in: whole calls, cut about evenly
        stage[op] = min(pp - 1, (2 * done[part[op]] + flops[op]) * pp // (2 * (total[part[op]] or 1)))
        done[part[op]] += flops[op]
    home: dict[SSAValue, int] = {}
    for op in forward:
        for operand in op.operands:
            if isinstance(operand, BlockArgument):
                home.setdefault(operand, stage[op])
        for result in op.results:
            home[result] = stage[op]
    for op in ops:
        if op in stage:
            continue
        saved = [home[v] for v in op.operands if v in home]
        made = [stage[v.owner] for v in op.operands if isinstance(v.owner, Operation) and v.owner in stage]
        if saved or made:
            stage[op] = min(_weight_homes(op, home) or saved or made)
    for op in reversed(ops):  # ops that read nothing: where their first user runs
        if op not in stage:
            users = [use.operation for result in op.results for use in result.uses if use.operation in stage]
            stage[op] = min((stage[u] for u in users), default=0)
    return stage


_LAYOUT_OPS = (ReshapeOp, TransposeOp, BroadcastOp, SliceOp)


def mark_deferred(function: func.FuncOp) -> None:
    """Mark the collectives of `function` that `deferred` finds (`rdu.deferred`)."""
    for op in function.body.block.ops:
        if deferred(op):
            set_deferred(op)


def deferred(op: Operation) -> bool:
    """Whether a collective of the backward may run under the rest of the backward:
    nothing of the forward or backward but layout ops reads its result (a
    gradient's all-reduce, read only by the optimizer or returned)."""
    if not isinstance(op, COLLECTIVE_OPS) or phase_of(op) != Phase.BACKWARD:
        return False
    pending = [use.operation for use in op.results[0].uses]
    while pending:
        user = pending.pop()
        if isinstance(user, _LAYOUT_OPS):
            pending.extend(use.operation for use in user.results[0].uses)
        elif phase_of(user) in (Phase.FORWARD, Phase.BACKWARD) and not isinstance(user, func.ReturnOp):
            return False
    return True


def compiled_refusal(candidate: Candidate, module: ModuleOp | None = None) -> str:
    """Why `rdu-partition` does not compile a candidate split yet ("" when it does: every one now)."""
    return ""



StepSplitter = Callable[[ModuleOp, int, bool], object]
"""Partitions a training step's tensors `tp` ways in place (its outlined layers,
then the functions calling them, as `rdu-partition` splits them at tp alone: no
replicas, no stages; with sequence parallelism when told), raising `RduccError`
when it cannot."""


def split_step(module: ModuleOp, tp: int, split: StepSplitter, sequence: bool = False
               ) -> tuple[dict[str, func.FuncOp], SplitEntry] | None:
    """A copy of `module` partitioned `tp` ways (`split`): its outlined layers, and per
    op of the entry function (the return left out, in order) the ops one rank runs for
    it: the op as split and what the partition put before it (the collectives and
    local parts its operands need); None when tp does not split the step (`sequence`:
    with sequence parallelism)."""
    copy = module.clone()
    entry = entry_function(copy)
    own = {op: index for index, op in enumerate(op for op in entry.body.block.ops if not isinstance(op, func.ReturnOp))}
    try:
        split(copy, tp, sequence)
    except RduccError:
        return None
    per_op: list[list[Operation]] = [[] for _ in own]
    pending: list[Operation] = []
    for op in entry_function(copy).body.block.ops:
        if isinstance(op, func.ReturnOp):
            break
        pending.append(op)
        if op in own:
            per_op[own[op]] += pending
            pending = []
    if pending and per_op:  # what the partition put before the return (results made whole): the last op's
        per_op[-1] += pending
    layers = {f.sym_name.data: f for f in functions(copy) if is_outlined(f)}
    return layers, SplitEntry(per_op, entry_function(copy))


def split_steps(module: ModuleOp, tps: Iterable[int], split: StepSplitter, sequence: bool = False
                ) -> dict[int, tuple[dict[str, func.FuncOp], SplitEntry] | None]:
    """Per tp > 1, `split_step`: the step partitioned tp ways once, not once a candidate."""
    return {tp: split_step(module, tp, split, sequence) for tp in sorted(set(tps)) if tp > 1}


def stage_cuts(module: ModuleOp, pps: Iterable[int]) -> dict[int, list[int]]:
    """Per pp > 1, the stage `training_stages` gives each op of the entry function
    (the return left out), in order: the split chooser charges each of its units
    to the stage `rdu-partition` puts it on."""
    entry = entry_function(module)
    callees = {f.sym_name.data: f for f in functions(module) if is_outlined(f)}
    ops = [op for op in entry.body.block.ops if not isinstance(op, func.ReturnOp)]
    cuts: dict[int, list[int]] = {}
    executed = executed_microbatches(module)
    labels = microbatch_labels(entry, executed) if executed > 1 else None
    for pp in sorted(set(pps)):
        if pp > 1:
            stage = training_stages(entry.body.block, pp, callees, labels)
            cuts[pp] = [stage[op] for op in ops]
    return cuts


def training_profile(module: ModuleOp, target: Target, step_split: StepSplitter, sequence: bool = False
                     ) -> StepProfile:
    """The split chooser's profile of a training step, with the step split at each
    candidate tp (its outlined layers and the entry's ops: what tp divides, the
    collectives it inserts; `sequence`: with sequence parallelism) and its ops cut into
    each candidate pp's stages, both as `rdu-partition` compiles them."""
    splits = candidates(target.sockets, 1)
    found = split_steps(module, {c.tp for c in splits}, step_split, sequence)
    return step_profile(module, target, {tp: None if f is None else f[0] for tp, f in found.items()},
                        stage_cuts(module, {c.pp for c in splits}),
                        {tp: f[1] for tp, f in found.items() if f is not None})


def choose_training_split(module: ModuleOp, target: Target, partition: Partitioner,
                          step_split: StepSplitter) -> tuple[int, int, int, int, SplitChoice]:
    """Weigh every candidate split of a training step from one profile of it
    (`rducc.model.split_choice`: no copy of the step per candidate), partition
    `module` once, for the fastest candidate that partitions, and return its
    (dp, tp, pp, microbatches) and the weighed candidates. Sequence parallelism is
    weighed (the step split with it too) only where a tp split without it spills
    saved activations to DDR or does not fit (`needs_sequence`)."""
    profile = training_profile(module, target, step_split)
    if any(needs_sequence(e) for e in choose(profile, target, lambda c: "").estimates if e.candidate.tp > 1):
        sequence = training_profile(module, target, step_split, sequence=True)  # split again, only where it may win
        profile.sequence = sequence if sequence.saved_on_rank else None
    refused: dict[Candidate, str] = {}
    while True:
        choice = choose(profile, target, lambda c: refused.get(c) or compiled_refusal(c, module))
        chosen = choice.chosen.candidate
        if choice.chosen.schedule is None:
            return 1, 1, 1, 1, choice
        trial = module.clone() if chosen.sockets > 1 else None
        try:
            if trial is not None:
                partition(trial, chosen.dp, chosen.tp, chosen.pp, choice.chosen.microbatches, chosen.zero,
                          chosen.sequence_parallel)
        except RduccError as error:
            refused[chosen] = f"rdu-partition: {str(error).splitlines()[0]}"
            continue
        if trial is not None:
            adopt(module, trial)
        return chosen.dp, chosen.tp, chosen.pp, choice.chosen.microbatches, choice


Partitioner = Callable[[ModuleOp, int, int, int, int, bool, bool], object]
"""Partitions a module (dp, tp, pp, microbatches, ZeRO, sequence parallelism) in place, raising
`RduccError` when it cannot."""


def adopt(module: ModuleOp, partitioned: ModuleOp) -> None:
    """Give `module` the ops and attributes of its partitioned copy."""
    for op in list(module.ops):
        op.detach()
        op.erase(safe_erase=False)
    for op in list(partitioned.ops):
        op.detach()
        module.body.block.add_op(op)
    module.attributes.update(partitioned.attributes)


def is_training_step(module: ModuleOp) -> bool:
    """Whether `module` is a training step: its entry function returns a loss
    (`rdu.result_roles`), or its ops carry training phases (`rdu.phase`)."""
    for function in functions(module):
        if any(role is not None for role in result_roles(function)):
            return True
    return any(phase_of(op) is not None for op in module.walk())


__all__ = [
    "adopt", "compiled_refusal", "deferred", "mark_deferred", "optimizer_state_args",
    "parameter_results",
    "split_step", "split_steps", "stage_cuts", "training_profile", "zero_dim",
    "batch_size", "batch_splits", "choose_training_split", "fill_value", "is_fill", "is_training_step", "ramp_length",
    "training_stages",
]
