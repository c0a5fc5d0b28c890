"""`rdu-outline-layers`: compile identical decoder layers once.

The importer marks every op that ran inside a repeated block (an element of
an `nn.ModuleList`) with `rdu.layer = "model.layers.N"`. Those marks follow the
source's modules, not the math: layers written in the parent's forward have
none, a residual add or norm the parent applies falls between two layers. So
the pass first finds the layers by structure (`mark_by_structure`,
`rducc.passes.layer_periods`): the period of @forward's op sequence, with the
boundary rotated to where the residual stream alone crosses (each layer ends
with its last residual add). When those units cover at least as many ops as
the module-path layers and cut them elsewhere, they replace the marks (a
unit keeps the module path most of its ops had, else `layers.N`). This pass compares
the layers of @forward, structurally and generically: the same op names in the
same order, the same properties, attributes (but `rdu.layer` and locations),
result types and regions, and operands that correspond one to one and have
the same types (a value made inside the layer to the value made at the same
place in the other; a value from outside to one from outside of the same
type). Only the weights, and other values from outside, may differ, never in
type: a stack whose widths change (`Linear(16, 64)`, `Linear(64, 64)`,
`Linear(64, 8)`) has layers that differ only in their inputs' shapes, and
those are different layers.

The group outlined is that of the layer the most later layers match (the
first layer when all match, as in a decoder stack; the repeated middle of a
stack whose first and last blocks differ). When at least two layers match,
the group's first layer's ops are moved into a new
private `func.func @layer` (its arguments: the values the layer reads from
outside, in order of first use; its results: the values read after it) and
every matching layer becomes one `func.call @layer(...)` with that layer's
own values. The later passes lower `@layer` once; the runtime prepares it
once and runs it per call; the cost model costs it once a call.

The output IR says so: `@layer` carries `rdu.outlined_from` (the path of
the group's first layer) and `rdu.calls` (the number of calls), and each call carries
the `rdu.layer` of the layer it replaces. Each argument of `@layer` says what
the caller passes: `rdu.input` (a value that depends on the user inputs),
`rdu.weight` (a weight: a @forward argument naming a `tier.global`, or a
static window of one, `w[i]` of a stacked weight) or
`rdu.value` (another value computed from weights or constants, such as a
rotary table or a mask).

`Outlining` makes @layer and the calls, for this pass and for the importer,
which plans the same outlining on the FX graph before import when rducc's
pipeline runs this pass right after `rdu-canonicalize`
(`rducc.frontend.layer_reuse`). A module whose layers are outlined already
(by the importer or by an earlier run) is left as it is.

Layers that differ only in which part of a value from outside they read
(`k_cache[i]` of a stacked cache, `w[i]` of a stacked weight: a static slice
with the layer's own constant offsets) still match: when the layers do not
all match as they are, each layer's static windows of outside values (a
slice, and reshapes of it) are moved out of it, before it
(`hoist_windows`), and each call passes its own window as an argument, so
the index becomes an argument. `rdu-fuse` and `rdu-insert-dma` then make
such a window a `tier.view` that the layer's kernel DMAs alone. Likewise,
layers that differ only in the values of scalar constants of their
elementwise bodies (GPT-2's attention scaled by 1/(layer index + 1), a
per-layer scale or window size) still match: each such constant becomes a
rank-0 value made before the first layer (it reads nothing; made between two
layers it would be a kernel between their calls and break their loop), read
by the map as an input (`hoist_constants`), and so an argument of @layer.

An op with no `rdu.layer` between two ops of one layer (an exporter that gave
a free function no module stack: transformers' `rotate_half` and the
unsqueeze of cos/sin) is taken as that layer's first (`adopt_unmarked`), so
such layers still match and can be called in place.

A training step (its ops carry `#rdu<phase ...>`; torch's joint graph has no
module paths) is outlined phase by phase, by structure: `outline_training_step`,
when its size demands it (option `training`, default `auto`): a step whose
tensors all fit the target's SRAM stays inline, since -O2 fuses across layers
but never across calls (`outlines_training_step` states the rule).

A period of several layers (a stack whose layer kinds alternate: three layers
with rotary and one without) is one unit of `mark_by_structure`, so one
@layer called once a period, whatever number of kernels the fuser later
makes of it: a callee of several kernels loops as a body of its kernels
(docs/cost-model.md, "Kernel looping"), so the period's calls are one run on
every target. The period is found by structure alone, never by asking the
fuser.

A layer that differs from the group's first, that passes a weight where the
first passes a computed value (or the reverse), or whose ops are interleaved
with ops that read its results before it ends, is left inline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    DictionaryAttr,
    IntegerType,
    LocationAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue

from rducc.dialects import contracts
from rducc.dialects.contracts import (
    TENSOR_LEVELS,
    Level,
    Phase,
    Role,
    arg_attrs,
    executed_microbatches,
    global_of,
    is_input,
    is_outlined,
    layer_arg,
    layer_of,
    phase_of,
    set_layer,
    set_outlined,
    set_phase,
)
from rducc.dialects.program import find_entry
from rducc.dialects.rdu.dataflow import MapOp, ReshapeOp, SliceOp, YieldOp
from rducc.dialects.shapes import value_bytes
from rducc.errors import RduccError
from rducc.passes.common import RduPass
from rducc.passes.layer_periods import best_period, periodic_units, rotated_start, signatures
from rducc.passes.rdu_partition.microbatches import JOINED, microbatch_labels
from rducc.targets import Target

CALLEE_NAME = "layer"
IGNORED_ATTRS = frozenset({contracts.LAYER})


@dataclass
class Layer:
    """The ops of one repeated block, in block order."""

    key: str
    ops: list[Operation]
    members: set[Operation] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.members = set(self.ops)

    def inside(self, op: Operation | None) -> bool:
        """Whether `op` (or the op holding it) is one of this layer's ops."""
        while op is not None:
            if op in self.members:
                return True
            op = op.parent_op()
        return False

    def defines(self, value: SSAValue) -> bool:
        owner = value.owner
        if isinstance(owner, Block):
            return self.inside(owner.parent_op())
        return self.inside(owner)

    def inputs(self) -> list[SSAValue]:
        """Values read from outside, in order of first use."""
        seen: dict[SSAValue, None] = {}
        for op in self.ops:
            for inner in op.walk():
                for operand in inner.operands:
                    if not self.defines(operand):
                        seen.setdefault(operand)
        return list(seen)

    def used_after(self, value: SSAValue) -> bool:
        """Whether an op outside the layer reads `value`."""
        return any(not self.inside(use.operation) for use in value.uses)


def adopt_unmarked(block: Block) -> None:
    """Mark as a layer's an unmarked op that sits between two of that layer's ops:
    an op the exporter gave no module stack (transformers' `rotate_half` and the
    unsqueeze of cos/sin in `apply_rotary_pos_emb`, behind a kernel-hub wrapper)
    is part of the layer it runs in."""
    ops = list(block.ops)
    keys = [layer_of(op) for op in ops]
    following: list[str | None] = [None] * len(ops)
    for index in range(len(ops) - 2, -1, -1):
        following[index] = keys[index + 1] if keys[index + 1] is not None else following[index + 1]
    preceding: str | None = None
    for index, op in enumerate(ops):
        key = keys[index]
        if key is None and preceding is not None and preceding == following[index]:
            set_layer(op, preceding)
            key = preceding
        preceding = key if key is not None else preceding


def _unit_key(unit: Sequence[Operation], number: int, taken: set[str]) -> str:
    """The name of a unit found by structure: the layer most of its ops were marked
    with (`model.layers.3`), else `layers.N`; never a name another unit has."""
    counts: dict[str, int] = {}
    for op in unit:
        if (key := layer_of(op)) is not None:
            counts[key] = counts.get(key, 0) + 1
    key = max(counts, key=lambda k: counts[k]) if counts else f"layers.{number}"
    return key if key not in taken else f"layers.{number}"


def mark_by_structure(block: Block) -> bool:
    """Mark the block's layers by the period of its ops (`layer_periods`), when that
    covers at least as many ops as the layers marked by the importer (module paths)
    and cuts them elsewhere: layers called from the parent's forward, residual adds
    or norms written outside the layer module. Whether the marks changed."""
    units = periodic_units(block)
    named = layers_of(block)
    if not units or sum(len(u) for u in units) < sum(len(layer.ops) for layer in named):
        return False
    if [set(u) for u in units] == [layer.members for layer in named]:
        return False
    taken: set[str] = set()
    keys: list[str] = []
    for number, unit in enumerate(units):
        keys.append(_unit_key(unit, number, taken))
        taken.add(keys[-1])
    for op in block.ops:
        op.attributes.pop(contracts.LAYER, None)
    for key, unit in zip(keys, units):
        for op in unit:
            set_layer(op, key)
    return True


def layers_of(block: Block) -> list[Layer]:
    """The block's layers, in order of their first op."""
    by_key: dict[str, list[Operation]] = {}
    for op in block.ops:
        layer = layer_of(op)
        if layer is not None:
            by_key.setdefault(layer, []).append(op)
    return [Layer(key, ops) for key, ops in by_key.items()]


# -- structural comparison -----------------------------------------------------


@dataclass
class Correspondence:
    """A one-to-one map between the values of two layers, grown op by op."""

    forward: dict[SSAValue, SSAValue] = field(default_factory=dict)
    backward: dict[SSAValue, SSAValue] = field(default_factory=dict)

    def pair(self, a: SSAValue, b: SSAValue) -> bool:
        """Record `a <-> b`; False when either is already paired with another or
        their types differ (a value read from outside included: a layer whose
        input has another shape than the first's is another layer)."""
        if a.type != b.type:
            return False
        known_a, known_b = self.forward.get(a), self.backward.get(b)
        if known_a is None and known_b is None:
            self.forward[a], self.backward[b] = b, a
            return True
        return known_a is b and known_b is a


def _kept_attrs(op: Operation) -> dict:
    return {k: v for k, v in op.attributes.items() if k not in IGNORED_ATTRS}


def same_op(a: Operation, b: Operation, values: Correspondence) -> bool:
    """Whether `b` does what `a` does, on corresponding values (recursing into regions)."""
    if (
        a.name != b.name
        or len(a.operands) != len(b.operands)
        or [r.type for r in a.results] != [r.type for r in b.results]
        or a.properties != b.properties
        or _kept_attrs(a) != _kept_attrs(b)
        or len(a.regions) != len(b.regions)
    ):
        return False
    if not all(values.pair(x, y) for x, y in zip(a.operands, b.operands)):
        return False
    for region_a, region_b in zip(a.regions, b.regions):
        if not _same_region(region_a, region_b, values):
            return False
    return all(values.pair(x, y) for x, y in zip(a.results, b.results))


def _same_region(a: Region, b: Region, values: Correspondence) -> bool:
    blocks_a, blocks_b = list(a.blocks), list(b.blocks)
    if len(blocks_a) != len(blocks_b):
        return False
    for block_a, block_b in zip(blocks_a, blocks_b):
        if [x.type for x in block_a.args] != [y.type for y in block_b.args]:
            return False
        if not all(values.pair(x, y) for x, y in zip(block_a.args, block_b.args)):
            return False
        ops_a, ops_b = list(block_a.ops), list(block_b.ops)
        if len(ops_a) != len(ops_b) or not all(same_op(x, y, values) for x, y in zip(ops_a, ops_b)):
            return False
    return True


def match_layer(first: Layer, other: Layer) -> Correspondence | None:
    """The value correspondence if `other` is `first` with other outside values, else None."""
    if len(first.ops) != len(other.ops):
        return None
    values = Correspondence()
    for a, b in zip(first.ops, other.ops):
        if not same_op(a, b, values):
            return None
    for ours, theirs in values.forward.items():
        if first.defines(ours) != other.defines(theirs):
            return None  # a value of one layer read from outside by the other
    return values


# -- where a call can go -------------------------------------------------------


def _top_index(op: Operation, block: Block, index: dict[Operation, int]) -> int:
    while op.parent_block() is not block:
        parent = op.parent_op()
        assert parent is not None
        op = parent
    return index[op]


def can_call_in_place(layer: Layer, block: Block, index: dict[Operation, int]) -> bool:
    """A call at the layer's first op sees every input and precedes every outside reader."""
    first, last = index[layer.ops[0]], index[layer.ops[-1]]
    for value in layer.inputs():
        if not isinstance(value.owner, Block) and _top_index(value.owner, block, index) >= first:
            return False
    for op in layer.ops:
        for inner in op.walk():
            for result in inner.results:
                for use in result.uses:
                    if not layer.inside(use.operation) and _top_index(use.operation, block, index) <= last:
                        return False
    return True


# -- building the callee and the calls -------------------------------------------


def argument_kind(value: SSAValue, function: func.FuncOp, activations: set[SSAValue]) -> DictionaryAttr:
    """What the caller passes for an argument of @layer (see the module docstring)."""
    if is_weight_window(value, function):
        return layer_arg(Role.WEIGHT)
    if value in activations:
        return layer_arg(Role.INPUT, value.name_hint or "x")
    return layer_arg(Role.VALUE)


def is_weight_window(value: SSAValue, function: func.FuncOp) -> bool:
    """Whether `value` is a weight of `function` (an argument naming a `tier.global`)
    or a static window of one (slices and reshapes of it: `w[i]` of a stacked
    weight), which a layer reads as its own weight."""
    while isinstance(value.owner, SliceOp | ReshapeOp):
        value = value.owner.operands[0]
    return (isinstance(value, BlockArgument) and value.owner is function.body.block
            and global_of(arg_attrs(function)[value.index]) is not None)


def activation_values(function: func.FuncOp) -> set[SSAValue]:
    """Values of @forward that depend on a user input (`rdu.input` arguments)."""
    block = function.body.block
    dependent: set[SSAValue] = {arg for arg, a in zip(block.args, arg_attrs(function)) if is_input(a)}
    for op in block.walk():
        if any(v in dependent for v in op.operands):
            dependent.update(op.results)
    return dependent


def same_kinds(ours: Sequence[DictionaryAttr], theirs: Sequence[DictionaryAttr]) -> bool:
    """Whether two callers pass a weight, an input-dependent value or another value alike."""
    return [set(k.data) for k in theirs] == [set(k.data) for k in ours]


def build_callee(first: Layer, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue], calls: int) -> func.FuncOp:
    """A private @layer holding copies of the first layer's ops (argument kinds: `Outlining.install`)."""
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = {}
    for value, arg in zip(inputs, block.args):
        mapping[value] = arg
        arg.name_hint = value.name_hint
    for op in first.ops:
        block.add_op(op.clone(value_mapper=mapping))
    ret = func.ReturnOp(*[mapping[v] for v in outputs])
    ret.location = first.ops[-1].location
    block.add_op(ret)
    callee = func.FuncOp(
        CALLEE_NAME,
        ([v.type for v in inputs], [v.type for v in outputs]),
        Region(block),
        visibility="private",
    )
    callee.location = first.ops[0].location
    set_outlined(callee, first.key, calls)
    return callee


def layer_call(
    key: str, arguments: Sequence[SSAValue], outputs: Sequence[SSAValue], location: LocationAttr
) -> func.CallOp:
    """`func.call @layer` for the layer `key`, with results typed as `outputs`."""
    call = func.CallOp(CALLEE_NAME, list(arguments), [v.type for v in outputs])
    call.location = location
    set_layer(call, key)
    return call


def replace_with_call(layer: Layer, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> func.CallOp:
    """Put `func.call @layer` where the layer's first op is and erase the layer's ops."""
    call = layer_call(layer.key, inputs, outputs, layer.ops[0].location)
    block = layer.ops[0].parent_block()
    assert block is not None
    block.insert_op_before(call, layer.ops[0])
    for old, new in zip(outputs, call.res):
        old.replace_all_uses_with(new)
        new.name_hint = old.name_hint
    for op in reversed(layer.ops):
        block.erase_op(op, safe_erase=False)
    return call


@dataclass
class Outlining:
    """@layer made of a copy of the first layer, which a call replaces; the
    later layers' calls are added with `replace` (a layer in the IR) or `call`
    (a layer the importer did not import), and `install` puts @layer in the module."""

    inputs: list[SSAValue]
    """The first layer's values read from outside: @layer's arguments."""
    outputs: list[SSAValue]
    """The first layer's values read after it (by any layer's counterpart): @layer's results."""
    callee: func.FuncOp
    calls: list[func.CallOp]

    @staticmethod
    def of_first(first: Layer, outputs: Sequence[SSAValue], layers: int) -> Outlining:
        """@layer from `first`, which becomes its first call; `layers` calls in all."""
        inputs = first.inputs()
        callee = build_callee(first, inputs, outputs, layers)
        return Outlining(inputs, list(outputs), callee, [replace_with_call(first, inputs, outputs)])

    def replace(self, layer: Layer, values: Correspondence, replaced: dict[SSAValue, SSAValue]) -> func.CallOp:
        """Replace `layer` (matching the first by `values`) with its call; `replaced`:
        an earlier layer's results -> its call's, updated with this one's."""
        mapped_in = [values.forward.get(v, v) for v in self.inputs]
        mapped_out = [values.forward.get(v, v) for v in self.outputs]
        call = replace_with_call(layer, [replaced.get(v, v) for v in mapped_in], mapped_out)
        replaced.update(zip(mapped_out, call.res))
        self.calls.append(call)
        return call

    def call(self, key: str, arguments: Sequence[SSAValue], location: LocationAttr, block: Block) -> func.CallOp:
        """Add the call of layer `key` with these arguments at the end of `block`."""
        call = layer_call(key, arguments, self.outputs, location)
        block.add_op(call)
        self.calls.append(call)
        return call

    def kinds(self, function: func.FuncOp) -> list[DictionaryAttr] | None:
        """What the calls pass at each argument, if every call passes what the first does."""
        activations = activation_values(function)
        kinds = [argument_kind(v, function, activations) for v in self.calls[0].arguments]
        for call in self.calls[1:]:
            if not same_kinds(kinds, [argument_kind(v, function, activations) for v in call.arguments]):
                return None
        return kinds

    def install(self, module: ModuleOp, function: func.FuncOp, kinds: Sequence[DictionaryAttr]) -> None:
        """Put @layer, with its arguments' kinds, right after `function`."""
        self.callee.arg_attrs = ArrayAttr(kinds)
        module.body.block.insert_op_after(self.callee, function)


def _windows_of_outside(layer: Layer) -> list[Operation]:
    """The layer's static slices of values from outside it, and reshapes of those."""
    found: list[Operation] = []
    made: set[SSAValue] = set()
    for op in layer.ops:
        if isinstance(op, SliceOp) and not layer.defines(op.input) or isinstance(op, ReshapeOp) and op.input in made:
            found.append(op)
            made.update(op.results)
    return found


def hoist_windows(block: Block, layers: Sequence[Layer]) -> bool:
    """Move each layer's windows of outside values out of it, just before its first
    other op (no longer marked as the layer's); returns whether any moved."""
    moved = False
    for layer in layers:
        windows = _windows_of_outside(layer)
        anchor = next((op for op in layer.ops if op not in set(windows)), None)
        if anchor is None:
            continue
        for op in windows:
            op.attributes.pop(contracts.LAYER, None)
            op.detach()
            block.insert_op_before(op, anchor)
            moved = True
    return moved


def _differing_constants(block: Block, layers: Sequence[Layer]) -> list[list[arith.ConstantOp]] | None:
    """Per layer, the scalar constants of its elementwise bodies whose value is not
    the same in every layer (a per-layer scale such as 1/(layer index)), at the
    same places; None when the layers differ in more than their constants' values."""
    walks = [[inner for op in layer.ops for inner in op.walk()] for layer in layers]
    if len({len(w) for w in walks}) != 1:
        return None
    found: list[list[arith.ConstantOp]] = [[] for _ in layers]
    for ops in zip(*walks):
        if any(op.name != ops[0].name for op in ops):
            return None
        if not isinstance(ops[0], arith.ConstantOp) or all(op.value == ops[0].value for op in ops):
            continue
        if not all(isinstance(op.parent_op(), MapOp) and op.parent_op().parent_block() is block for op in ops):
            return None
        if not isinstance(ops[0].results[0].type, AnyFloat | IntegerType):
            return None  # only a number a tensor element can hold
        for found_in, op in zip(found, ops):
            found_in.append(op)
    return found if found[0] else None


def _constant_as_operand(block: Block, constant: arith.ConstantOp, anchor: Operation) -> None:
    """Read `constant` (in a map's body) from a rank-0 tensor made before `anchor`."""
    user = constant.parent_op()
    assert isinstance(user, MapOp)
    element = constant.result.type
    made = constant.clone()
    source = MapOp([], TensorType(element, []), Region(Block([made, YieldOp(made.result)])))
    source.location = constant.location
    source.result.name_hint = "constant"
    block.insert_op_before(source, anchor)
    argument = user.body.block.insert_arg(element, len(user.body.block.args))
    user.operands = [*user.operands, source.result]
    constant.result.replace_all_uses_with(argument)
    constant.detach()
    constant.erase()


def hoist_constants(block: Block, layers: Sequence[Layer]) -> bool:
    """Layers that differ only in scalar constants of their elementwise bodies: each
    such constant becomes a rank-0 value read by the map as an input, so the constant
    becomes an argument of @layer; whether any moved. Every such value reads nothing,
    so it is made before the first layer: made between two layers it would be a
    kernel between their calls, and the calls would not run back to back as a loop."""
    constants = _differing_constants(block, layers)
    if constants is None:
        return False
    first = layers[0].ops[0]
    for own in constants:
        for constant in own:
            _constant_as_operand(block, constant, first)
    return True


def _all_match(layers: Sequence[Layer]) -> bool:
    return all(match_layer(layers[0], other) is not None for other in layers[1:])


Matches = list[tuple[Layer, Correspondence]]


def matches_of(
    first: Layer, later: Sequence[Layer], function: func.FuncOp, index: dict[Operation, int],
    activations: set[SSAValue],
) -> Matches:
    """The layers of `later` that are `first` with other outside values (of the same
    types, passed alike: weight for weight), each callable in place; [] when
    `first` itself cannot be called in place."""
    block = function.body.block
    if not can_call_in_place(first, block, index):
        return []
    inputs = first.inputs()
    kinds = [argument_kind(v, function, activations) for v in inputs]
    matches: Matches = []
    for other in later:
        values = match_layer(first, other)
        if values is None or not can_call_in_place(other, block, index):
            continue
        if same_kinds(kinds, [argument_kind(values.forward[v], function, activations) for v in inputs]):
            matches.append((other, values))
    return matches


def largest_group(layers: Sequence[Layer], function: func.FuncOp) -> tuple[Layer, Matches]:
    """The layer matched by the most later layers, with its matches (the earliest
    on a tie): the first layer when all match, as in a decoder stack; a stack whose
    widths change (16->64, 64->64, 64->64, 64->8) outlines its repeated middle."""
    index = {op: i for i, op in enumerate(function.body.block.ops)}
    activations = activation_values(function)
    best: tuple[Layer, Matches] = (layers[0], [])
    for at, candidate in enumerate(layers[:-1]):
        if len(layers) - at - 1 <= len(best[1]):
            break  # no later candidate can be matched by more layers
        matches = matches_of(candidate, layers[at + 1:], function, index, activations)
        if len(matches) > len(best[1]):
            best = (candidate, matches)
    return best


def outline(module: ModuleOp, function: func.FuncOp) -> int:
    """Outline the largest group of @forward's layers that match one another
    (`largest_group`); the number of calls made. A period of layers is one unit,
    one callee, however many kernels it lowers to."""
    block = function.body.block
    adopt_unmarked(block)
    mark_by_structure(block)
    layers = _hoisted(block)
    if len(layers) < 2:
        return 0
    first, matches = largest_group(layers, function)
    if not matches:
        return 0
    _outline_group(module, function, first, matches)
    return len(matches) + 1


def _hoisted(block: Block) -> list[Layer]:
    """The block's layers, after moving out of them the windows and constants by
    which alone they differ (`hoist_windows`, `hoist_constants`)."""
    layers = layers_of(block)
    if len(layers) >= 2 and not _all_match(layers) and hoist_windows(block, layers):
        layers = layers_of(block)
    if len(layers) >= 2 and not _all_match(layers) and hoist_constants(block, layers):
        layers = layers_of(block)
    return layers


def _outline_group(
    module: ModuleOp, function: func.FuncOp, first: Layer, matches: Matches, phase: Phase | None = None
) -> Outlining:
    """Outline `first` and the layers that match it: @layer holds a copy of
    `first` (its results: the values any layer's counterpart is read by after
    it), each layer becomes a call, and @layer goes into the module right after
    `function`. With a training `phase`, the callee and its calls are named by
    the phase (`@layer_forward`, ...) before that."""
    activations = activation_values(function)
    kinds = [argument_kind(v, function, activations) for v in first.inputs()]
    first_results = [r for op in first.ops for r in op.results]
    outputs = [
        r for r in first_results
        if first.used_after(r) or any(layer.used_after(v.forward[r]) for layer, v in matches)
    ]
    outlining = Outlining.of_first(first, outputs, len(matches) + 1)
    replaced: dict[SSAValue, SSAValue] = dict(zip(outputs, outlining.calls[0].res))
    for layer, values in matches:
        outlining.replace(layer, values, replaced)
    if phase is not None:
        _name(outlining, callee_name(phase), phase)
    outlining.install(module, function, kinds)
    return outlining


# -- training steps: layers found by structure, phase by phase ----------------------
#
# A training step is outlined phase by phase.
#
# torch's joint export (`_export_forward_backward`) keeps no module path on its
# nodes, so a training step's ops carry no `rdu.layer`; they carry their phase
# (`#rdu<phase forward>`, `backward`, `optimizer`). Each phase's ops repeat once
# per decoder layer (the backward's in reverse layer order), so the layers are
# found by structure, phase by phase: the ops of one phase, in block order, are
# cut into units at their period (`rducc.passes.layer_periods`: the shortest
# period covering the most ops, the boundary rotated to where the fewest values
# cross). The units of a phase are compared op by op as module-path layers are
# (`match_layer`); the group most units match is outlined into a function of its
# own, `@layer_forward`, `@layer_backward` or `@layer_optimizer`, called once per
# unit, and each call carries the phase of its ops. What the backward reads from
# the forward (saved values) becomes a result of a forward call and an argument
# of a backward call, so `rdu-place-saved` sees saved values as call results.


PHASES = (Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER)


def callee_name(phase: Phase) -> str:
    """The outlined function of a phase's layers: `layer_forward`, ..."""
    return f"layer_{phase.value}"


def is_training_step(function: func.FuncOp) -> bool:
    """Whether the importer marked `function`'s ops with training phases."""
    return any(phase_of(op) is not None for op in function.body.block.ops)


def phase_units(ops: Sequence[Operation]) -> list[list[Operation]]:
    """`ops` (one phase's top-level ops, in block order) cut into their repeated
    units, or [] when nothing repeats twice."""
    stretch = best_period(signatures(ops))
    if stretch is None:
        return []
    start = rotated_start(ops, stretch)
    count = (stretch.end - start) // stretch.period
    return [list(ops[start + k * stretch.period : start + (k + 1) * stretch.period]) for k in range(count)]


def microbatch_units(ops: Sequence[Operation], labels: dict[Operation, int]) -> list[list[Operation]]:
    """`ops` (one phase's ops of a step that runs its microbatches itself) cut into
    repeated units microbatch by microbatch: each microbatch's ops of the phase
    repeat once a layer, but the whole run repeats once a microbatch too (with
    other slice offsets), and that longer period would hide the layers. Ops of no
    single microbatch (the gradients' sums, `JOINED`) belong to no unit."""
    parts: dict[int, list[Operation]] = {}
    for op in ops:
        label = labels.get(op)
        if label is not None and label != JOINED:
            parts.setdefault(label, []).append(op)
    return [unit for label in sorted(parts) for unit in phase_units(parts[label])]


def hoist_shared(block: Block, ops: Sequence[Operation], labels: dict[Operation, int]) -> None:
    """Move the ops of `ops` (one phase's) that work on no microbatch (a weight's
    transpose, which every microbatch's layer reads: made once, inside the first
    microbatch's layer) before the phase's first op of a microbatch, when what
    they read is made there already: each microbatch's layers then read the same
    values from outside, and match."""
    first = next((op for op in ops if labels.get(op, JOINED) != JOINED), None)
    if first is None:
        return
    index = {op: i for i, op in enumerate(block.ops)}
    at, moved = index[first], set()
    for op in ops:
        if op in labels or index[op] < at:
            continue
        owners = {_top(v.owner, block) for inner in op.walk() for v in inner.operands if isinstance(v.owner, Operation)}
        if all(o is None or o is op or o in moved or index.get(o, at) < at for o in owners):
            op.detach()
            block.insert_op_before(op, first)
            moved.add(op)


def sink_joined(block: Block, ops: Sequence[Operation], labels: dict[Operation, int]) -> None:
    """Move the ops of `ops` (one phase's) that are of no single microbatch and come
    after its first op of one (a weight gradient's sum over the microbatches, made
    where the first microbatch's layer makes its part) down to the end of the
    phase, or before their first reader when it is earlier: no unit of a microbatch
    then has another's op in the middle, and neither has the next phase's."""
    first = next((op for op in ops if labels.get(op, JOINED) != JOINED), None)
    end = ops[-1].next_op if ops else None
    if first is None or end is None:
        return
    start = {o: i for i, o in enumerate(block.ops)}  # only ops after `first` move, and only later
    for op in reversed(ops):
        if labels.get(op, JOINED) != JOINED or start[op] < start[first]:
            continue
        index = {o: i for i, o in enumerate(block.ops)}
        readers = [_top(use.operation, block) for result in op.results for use in result.uses]
        reader = min((r for r in [*readers, end] if r is not None), key=index.__getitem__)
        if reader is not op.next_op:
            op.detach()
            block.insert_op_before(op, reader)


def _top(op: Operation, block: Block) -> Operation | None:
    """The op of `block` that is or holds `op` (None when `op` is elsewhere)."""
    current: Operation | None = op
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
    return current


def outline_phase(module: ModuleOp, function: func.FuncOp, phase: Phase) -> int:
    """Outline the largest group of matching units of `phase` into `@layer_<phase>`;
    the number of calls made (0: none). A step that runs its microbatches itself
    (`rdu.microbatches`) is cut microbatch by microbatch (`microbatch_units`),
    its ops of no microbatch first moved out of the way (`hoist_shared`,
    `sink_joined`)."""
    ops = [op for op in function.body.block.ops if phase_of(op) == phase]
    count = executed_microbatches(module)
    if count > 1:
        labels = microbatch_labels(function, count, RduOutlineLayers.name)
        hoist_shared(function.body.block, ops, labels)
        sink_joined(function.body.block, [op for op in function.body.block.ops if phase_of(op) == phase], labels)
        ops = [op for op in function.body.block.ops if phase_of(op) == phase]
        units = microbatch_units(ops, labels) or phase_units(ops)  # the optimizer: of no microbatch
    else:
        units = phase_units(ops)
    if len(units) < 2:
        return 0
    layers = [Layer(f"{phase.value}.layers.{n}", unit) for n, unit in enumerate(units)]
    for layer in layers:
        for op in layer.ops:
            set_layer(op, layer.key)
    first, matches = largest_group(layers, function)
    if not matches:
        _unmark(layers)
        return 0
    _outline_group(module, function, first, matches, phase)
    _unmark([layer for layer in layers if layer is not first and all(layer is not m for m, _ in matches)])
    return len(matches) + 1


def _unmark(layers: Sequence[Layer]) -> None:
    """Drop the structural marks of units left inline."""
    for layer in layers:
        for op in layer.ops:
            if op.parent is not None:
                op.attributes.pop(contracts.LAYER, None)


def _name(outlining: Outlining, name: str, phase: Phase) -> None:
    """Give the callee and its calls the phase's name; each call its phase."""
    outlining.callee.sym_name = StringAttr(name)
    for call in outlining.calls:
        call.callee = SymbolRefAttr(name)
        set_phase(call, phase)


def outline_training_step(module: ModuleOp, function: func.FuncOp) -> dict[Phase, int]:
    """Outline each phase's repeated layers; the calls made per phase."""
    taken = {f.sym_name.data for f in module.ops if isinstance(f, func.FuncOp)}
    for name in (callee_name(phase) for phase in PHASES):
        if name in taken:
            raise RduccError(f"rdu-outline-layers: the module already has a function @{name} "
                             f"that is not an outlined layer (no {contracts.CALLS}); rename it")
    return {phase: outline_phase(module, function, phase) for phase in PHASES}


def step_bytes(function: func.FuncOp) -> int:
    """Bytes of every tensor a step reads or makes (its arguments and every op's
    results, in nested regions too): what -O2 could keep on chip at once."""
    values = [*function.args, *(r for op in function.body.walk() for r in op.results)]
    return sum(value_bytes(v) for v in values if isinstance(v.type, TensorType))


def outlines_training_step(function: func.FuncOp, target: Target, when: str) -> bool:
    """Whether a training step is outlined (`when`: `always`, `never`, or `auto`).

    `auto` decides by the cost model's terms: a step whose tensors all fit the
    target's SRAM at once (`step_bytes` <= `Target.sram_bytes`) stays inline.
    -O2 can then fuse across layer boundaries, which it never does across calls
    (a call is a kernel boundary: launches and HBM round trips the inline step
    does not pay), so the inline step is modeled faster (a 3-layer tiny Llama
    AdamW step: 15.6 us inline, 54 us outlined on sn40l); and it is small, so
    compiling each layer costs little. A larger step is outlined: its layers
    are kernels of their own anyway (what one layer makes does not fit the SRAM
    beside the next one's), so the calls cost no modeled time, and the passes
    after outlining work on one layer of each phase whatever the depth."""
    if when != "auto":
        return when == "always"
    return step_bytes(function) > target.sram_bytes


TRAINING_CHOICES = ("auto", "always", "never")


@dataclass(frozen=True)
class RduOutlineLayers(RduPass):
    """Outline decoder layers identical to the first into one @layer, called once per layer;
    a training step's layers phase by phase when its size demands it (`training`)."""

    name = "rdu-outline-layers"
    accepts: ClassVar[tuple[Level, ...]] = TENSOR_LEVELS
    on_tensors: ClassVar[bool] = True
    training: str = "auto"
    """A training step: `auto` (outlined when its tensors do not fit the SRAM,
    `outlines_training_step`), `always` or `never`."""

    def check_options(self) -> None:
        if self.training not in TRAINING_CHOICES:
            raise RduccError(f"rdu-outline-layers: training={self.training} is not one of "
                             f"{', '.join(TRAINING_CHOICES)}")

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        existing = next((f for f in op.ops if isinstance(f, func.FuncOp) and f.sym_name.data == CALLEE_NAME), None)
        if existing is not None:
            if is_outlined(existing):
                return  # outlined already: by the importer (`rducc.frontend.layer_reuse`) or an earlier run
            raise RduccError(
                f"rdu-outline-layers: the module already has a function @{CALLEE_NAME} "
                f"that is not an outlined layer (no {contracts.CALLS}); rename it"
            )
        forward = find_entry(op)
        if forward is None:
            return
        if is_training_step(forward):
            if any(is_outlined(f) for f in op.ops if isinstance(f, func.FuncOp)):
                return
            if outlines_training_step(forward, self.target_of(op), self.training):
                outline_training_step(op, forward)
        else:
            outline(op, forward)


def inline_calls(module: ModuleOp) -> ModuleOp:
    """A copy of `module` with every call of an outlined layer replaced by the
    callee's ops, and the callees dropped: the program as it runs, kernel by
    kernel (for pictures of it). At the placed level the copy keeps its SRAM
    offsets, as no SRAM buffer lives across a call."""
    module = module.clone()
    callees = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp) and is_outlined(f)}
    if not callees:
        return module
    for function in [f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data not in callees]:
        for call in [op for op in function.body.walk() if isinstance(op, func.CallOp)]:
            callee = callees.get(call.callee.string_value())
            if callee is None:
                continue
            block = call.parent_block()
            assert block is not None
            mapping: dict[SSAValue, SSAValue] = dict(zip(callee.body.block.args, call.arguments))
            for op in callee.body.block.ops:
                if isinstance(op, func.ReturnOp):
                    for result, value in zip(call.res, op.arguments):
                        result.replace_all_uses_with(mapping.get(value, value))
                    break
                block.insert_op_before(op.clone(value_mapper=mapping), call)
            block.erase_op(call)
    for callee in callees.values():
        module.body.block.erase_op(callee)
    return module
