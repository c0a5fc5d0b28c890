"""Every attribute rducc puts on ops, functions and modules, in one place.

Passes talk to each other, and to the runtime, through these attributes only.
Each has a name here and typed accessors (`layer_of`/`set_layer`, ...); no
other module spells an attribute name. The contract attributes that carry
structure are typed xDSL attributes registered in the `rdu` dialect:

    #rdu<level memory>                         the IR level of a module
    #rdu.tile_plan<tiles = 4, size = 128, in = [0, -1], out = [0], working_set = 1024>
    #rdu.split<(1, 8, 2), (2, 2, 1)>           the part of a value each rank holds
    #rdu.target<{name = "sn40l", ...}, hash = "…">  the target, all its figures
    #rdu<phase backward>                       the training phase an op belongs to
    #rdu.mapping<grid = [40, 52], sections = 1, stages = [[0, 0, 0, 520, 3]], buffers = [[0, 0, 0, 2]]>
    #rdu.bucket<batch = 4, seq = 128>           the dynamic dims' values one bucket is compiled for
    #rdu.padding<["batch"], [["batch", ""]], [["batch", ""]], ["seq: ..."]>  the dims a call may pad
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from rducc.dialects.split import Period, Split, SplitAttr, block_starts  # noqa: F401 - accessors below, and re-exported
from rducc.targets import DEFAULT_TARGET, Target, figure_values, load_target, target_of_figures

# --- attribute names -------------------------------------------------------

LAYER = "rdu.layer"
"""On each op that ran inside a repeated block (an element of an nn.ModuleList
such as `model.layers.3`), on a kernel and on a layer's `func.call`: that
block's path."""
CALLS = "rdu.calls"
"""On a function `rdu-outline-layers` made: how many `func.call`s run it."""
OUTLINED_FROM = "rdu.outlined_from"
"""On a function `rdu-outline-layers` made: the layer it was copied from."""
TARGET = "rdu.target"
"""Module: the target's figures (`TargetAttr`; a built-in name or file path in an older file)."""
LEVEL = "rdu.level"
"""Module: the IR level (`Level`)."""
WEIGHTS = "rdu.weights"
"""Module: the weights file beside the `.mlir` (relative to it)."""
F64_DEMOTED = "rdu.f64_demoted"
"""Module: how many float64 FX nodes the importer computed in float32."""
COMPLEX_INPUTS = "rdu.complex_inputs"
"""Module: the labels of the user inputs that are complex, read as `view_as_real` pairs."""
COMPLEX_OUTPUTS = "rdu.complex_outputs"
"""Module: the positions of the user outputs that are complex, written as `view_as_real` pairs."""
OUTPUT_EDGES = "rdu.output_edges"
"""Module: the user outputs the caller receives in a dtype or layout the program holds otherwise (`OutputEdge`)."""
SAVED = "rdu.saved"
"""Kernel of a training step: where each result the backward reads lives (`rdu-place-saved`; `rducc.dialects.saved`)."""
RECOMPUTES = "rdu.recomputes"
"""Kernel of a training step: the forward kernel whose value this copy recomputes."""
TRAINING_MEMORY = "rdu.training_memory"
"""Module: a training step's bytes per tier by memory class (`rdu-place-saved`)."""
MEMORY_CLASS = "rdu.memory_class"
"""Global: what a training step keeps there (weights, gradients, optimizer state)."""
GLOBAL = "rdu.global"
"""Argument: the `tier.global` a weight argument of an entry function reads."""
INPUT = "rdu.input"
"""Argument: a user input, with its label."""
BUCKET = "rdu.bucket"
"""Nested module of a program compiled for several shapes (`rducc --shapes`): the
value of each dynamic dim it is specialized for (`BucketAttr`)."""
PADDING = "rdu.padding"
"""Module of shape buckets: the dynamic dims a call may pad up to a larger bucket,
where they sit in the inputs and outputs, and why the others may not (`PaddingAttr`)."""
WEIGHT = "rdu.weight"
"""Argument of an outlined layer: it receives a weight."""
VALUE = "rdu.value"
"""Argument of an outlined layer: it receives a value computed before the call."""
PARTITION = "rdu.partition"
"""Module: `{tp = N, pp = M}` once partitioned (and `dp = D` for D > 1 data-parallel
replicas; `microbatches = K` for a pipelined training step's 1F1B schedule)."""
SPLIT_CHOICE = "rdu.split_choice"
"""Module: the lines of `rdu-partition`'s table of the training splits it weighed
(each candidate's modeled step time, and why the chosen one won), for the report."""
EXPERT_PARALLEL = "rdu.expert_parallel"
"""Module: the ep its routed experts were split over the sockets with (`rdu-partition{ep=N}`)."""
OWNED_ROWS = "rdu.owned_rows"
"""On an expert-parallel `rdu.gather` (and the `tier.gather` `rdu-insert-dma` makes of
it): `[owned, rows]`, of its `rows` rows (token-expert pairs), how many a rank's own
experts serve at most, the pairs spread evenly over the ranks (the modeled load balance). Every rank still
gathers every row (static shapes); the cost model reads only these from the table."""
SHARD = "rdu.shard"
"""On a `tier.global` or a function argument: the part each rank takes (`SplitAttr`)."""
WHOLE_READER = "rdu.whole_reader"
"""On a parameter's `tier.global` that tp left whole on every rank of its group:
`[op name, source line]` of the op that first reads it whole (`rdu-partition`),
for the report's line of what every socket holds in full, and why."""
RESULT_SHARDS = "rdu.result_shards"
"""Function: per result, the part each rank holds (`SplitAttr`; `#rdu.split<>`: whole)."""
RESULT_UPDATES = "rdu.result_updates"
RESULT_ROLES = "rdu.result_roles"
"""`func.func @forward` of a training program: per result, the loss or the
gradient it is (`ResultRole`), empty for another result."""
PHASE = "rdu.phase"
"""An op of a training program: the phase it belongs to (`PhaseAttr`)."""
"""Entry function: per result, what it writes back after a call: `"buffer:NAME"`
(the new value of buffer NAME), `"input:LABEL"` (of the user input LABEL,
updated in place), or `""` (a user output). Absent: every result is an output."""
STAGE = "rdu.stage"
"""On each op of a pipelined function: the pipeline stage that runs it."""
TILE_PLAN = "rdu.tile_plan"
"""On a kernel, from `rdu-tile`: its `TilePlanAttr`."""
MAPPING = "rdu.mapping"
"""On a `tier.compute`, from `rdu-map-units`: its `MappingAttr` (units, sections, hops)."""
TILES = "tiles"
"""On a `tier.compute`: how many tiles its body runs over."""
SRAM_CAPACITY = "tier.sram_capacity"
"""Function, from `rdu-sram-alloc`: the SRAM capacity its offsets were planned for."""
BODY_OFFSET = "tier.offset"
"""Op in a `tier.compute` body, from `rdu-sram-alloc`: the SRAM offset of its result."""
SRAM_PEAK = "tier.sram_peak"
"""Function, from `rdu-sram-alloc`: the peak SRAM bytes of its plan."""
SRAM_LOWER_BOUND = "tier.sram_lower_bound"
"""Function, from `rdu-sram-alloc`: the most bytes live at once (a lower bound on the peak)."""
PARAMETER_TIER = "tier.tier"
"""Weight argument of an outlined layer, from `rdu-place-tiers`: the tier of the weights it receives."""
HBM_ROWS = "tier.hbm_rows"
"""On a `tier.global` in DDR, and on the outlined layer's weight argument that receives
it, from `rdu-place-tiers`: how many of its leading rows it holds in HBM, a row being
one run of its last dim (`table_rows`: a stacked expert table [E, K, N] has E x K of
them); the rest stay in DDR. Set on a global whose every row is read alike (read whole,
or by rows its readers select, each equally likely, such as experts). The buffer's tier
is DDR; the cost model reads the share `hbm_rows / table_rows` of each read from HBM."""
HBM_WEIGHT_BYTES = "tier.hbm_weight_bytes"
"""Module, from `rdu-place-tiers`: bytes of weights placed in HBM."""
DDR_WEIGHT_BYTES = "tier.ddr_weight_bytes"
"""Module, from `rdu-place-tiers`: bytes of weights spilled to DDR."""
ACTIVATION_BYTES = "tier.activation_bytes"
"""Module, from `rdu-place-tiers`: HBM bytes kept for the activations live at once."""
HBM_WEIGHT_BYTES_BY_STAGE = "tier.hbm_weight_bytes_by_stage"
"""Module of a pipelined program: `HBM_WEIGHT_BYTES` per stage."""
DDR_WEIGHT_BYTES_BY_STAGE = "tier.ddr_weight_bytes_by_stage"
"""Module of a pipelined program: `DDR_WEIGHT_BYTES` per stage."""


# --- the IR level ----------------------------------------------------------

class Level(StrEnum):
    """The stages of lowering, in order."""

    GRAPH = "graph"
    KERNELS = "kernels"
    MEMORY = "memory"
    PLACED = "placed"


TENSOR_LEVELS = (Level.GRAPH, Level.KERNELS)
"""Levels whose functions work on tensors."""
LOWERED_LEVELS = (Level.MEMORY, Level.PLACED)
"""Levels whose functions work on tier buffers rather than tensors."""


@irdl_attr_definition
class LevelAttr(EnumAttribute[Level], SpacedOpaqueSyntaxAttribute):
    """`#rdu<level memory>`."""

    name = "rdu.level"


def level_of(module: Operation) -> Level | None:
    """The module's IR level; None when unmarked (a string from an older file is read too)."""
    attr = module.attributes.get(LEVEL)
    if isinstance(attr, LevelAttr):
        return attr.data
    if isinstance(attr, StringAttr) and attr.data in Level.__members__.values():
        return Level(attr.data)
    return None


def is_placed(module: Operation) -> bool:
    """The module is a placed program (level `placed`): what runs and what is costed."""
    return level_of(module) == Level.PLACED


def set_level(module: Operation, level: Level | str) -> None:
    """Record the IR level on the module."""
    module.attributes[LEVEL] = LevelAttr(Level(level))


# --- the split of a value over ranks ---------------------------------------

def _print_ints(printer: Printer, values: Iterable[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def _parse_ints(parser: AttrParser) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def shard_of(holder: Operation | Mapping[str, Attribute]) -> Split | None:
    """The part each rank takes of a global or argument (its `rdu.shard`), or None."""
    attrs = holder.attributes if isinstance(holder, Operation) else holder
    attr = attrs.get(SHARD)
    return attr.split() if isinstance(attr, SplitAttr) else None


def set_shard(attrs: dict[str, Attribute], split: Split) -> None:
    """Mark a global's or argument's attributes as split by `split`."""
    attrs[SHARD] = SplitAttr.of(split)


def set_whole_reader(holder: Operation, reader: str, where: str) -> None:
    """Mark a global tp leaves whole with the op (`reader`, at `where`) that reads it whole first."""
    holder.attributes[WHOLE_READER] = ArrayAttr([StringAttr(reader), StringAttr(where)])


def whole_reader(holder: Operation) -> tuple[str, str] | None:
    """(op name, source line) of the op that reads a global tp left whole (`set_whole_reader`), or None."""
    attr = holder.attributes.get(WHOLE_READER)
    if not isinstance(attr, ArrayAttr) or len(attr.data) != 2 or not all(isinstance(a, StringAttr) for a in attr.data):
        return None
    reader, where = attr.data
    return reader.data, where.data


def result_shards(function: Operation) -> list[Split | None]:
    """Per result of `function`, the part each rank holds (None: whole); [] when unmarked."""
    attr = function.attributes.get(RESULT_SHARDS)
    if not isinstance(attr, ArrayAttr):
        return []
    return [a.split() if isinstance(a, SplitAttr) else None for a in attr.data]


def set_result_shards(function: Operation, splits: Iterable[Split | None]) -> None:
    function.attributes[RESULT_SHARDS] = ArrayAttr(SplitAttr.of(s) for s in splits)


@dataclass(frozen=True)
class Update:
    """A result that is the new value of a buffer (`kind` "buffer", by global name)
    or of a user input (`kind` "input", by label): what torch.export calls a
    BUFFER_MUTATION or USER_INPUT_MUTATION."""

    kind: str
    name: str


def result_updates(function: Operation) -> list[Update | None]:
    """Per result of `function`, the buffer or input it updates (None: a user output); [] when unmarked."""
    attr = function.attributes.get(RESULT_UPDATES)
    if not isinstance(attr, ArrayAttr):
        return []
    updates: list[Update | None] = []
    for entry in attr.data:
        kind, _, name = entry.data.partition(":") if isinstance(entry, StringAttr) else ("", "", "")
        updates.append(Update(kind, name) if name else None)
    return updates


def set_result_updates(function: Operation, updates: Sequence[Update | None]) -> None:
    """Mark which results of `function` write back a buffer or input (none: the attribute is dropped)."""
    if any(updates):
        function.attributes[RESULT_UPDATES] = ArrayAttr(
            StringAttr(f"{u.kind}:{u.name}" if u else "") for u in updates)
    else:
        function.attributes.pop(RESULT_UPDATES, None)


# --- training: result roles and phases -------------------------------------

@dataclass(frozen=True)
class ResultRole:
    """A result of a training program: the loss (`kind` "loss"), or the gradient
    (`kind` "gradient") of a parameter (`of` "parameter", `name` its global) or
    of a user input (`of` "input", `name` its label)."""

    kind: str
    of: str = ""
    name: str = ""

    def text(self) -> str:
        return self.kind if self.kind == "loss" else f"{self.kind}:{self.of}:{self.name}"


def result_roles(function: Operation) -> list[ResultRole | None]:
    """Per result of `function`, its training role (None: another result); [] when unmarked."""
    attr = function.attributes.get(RESULT_ROLES)
    if not isinstance(attr, ArrayAttr):
        return []
    roles: list[ResultRole | None] = []
    for entry in attr.data:
        text = entry.data if isinstance(entry, StringAttr) else ""
        kind, _, rest = text.partition(":")
        of, _, name = rest.partition(":")
        roles.append(ResultRole(kind, of, name) if kind else None)
    return roles


def set_result_roles(function: Operation, roles: Sequence[ResultRole | None]) -> None:
    """Mark the loss and gradient results of `function` (none: the attribute is dropped)."""
    if any(roles):
        function.attributes[RESULT_ROLES] = ArrayAttr(StringAttr(r.text() if r else "") for r in roles)
    else:
        function.attributes.pop(RESULT_ROLES, None)


class Phase(StrEnum):
    """The part of a training step an op belongs to: the forward (what the loss
    depends on), the backward (what the gradients need besides), the optimizer
    (the update of parameters and optimizer state)."""

    FORWARD = "forward"
    BACKWARD = "backward"
    OPTIMIZER = "optimizer"


@irdl_attr_definition
class PhaseAttr(EnumAttribute[Phase], SpacedOpaqueSyntaxAttribute):
    """`#rdu<phase backward>`."""

    name = "rdu.phase"


def phase_of(op: Operation) -> Phase | None:
    """The training phase `op` belongs to, or None (an inference op, or unmarked)."""
    attr = op.attributes.get(PHASE)
    return attr.data if isinstance(attr, PhaseAttr) else None


def set_phase(op: Operation, phase: Phase | str) -> None:
    op.attributes[PHASE] = PhaseAttr(Phase(phase))


def partition_of(module: Operation) -> tuple[int, int]:
    """(tp, pp) the module was partitioned with; (1, 1) when it was not."""
    attr = module.attributes.get(PARTITION)
    if not isinstance(attr, DictionaryAttr):
        return 1, 1
    tp, pp = attr.data.get("tp"), attr.data.get("pp")
    return (tp.value.data if isinstance(tp, IntegerAttr) else 1,
            pp.value.data if isinstance(pp, IntegerAttr) else 1)


def is_partitioned(module: Operation) -> bool:
    return PARTITION in module.attributes


def set_expert_parallel(module: Operation, ep: int) -> None:
    module.attributes[EXPERT_PARALLEL] = IntegerAttr(ep, i64)


def expert_parallel(module: Operation) -> int:
    """The ep a partitioned module was split with (1: none)."""
    attr = module.attributes.get(EXPERT_PARALLEL)
    return attr.value.data if isinstance(attr, IntegerAttr) else 1


def set_owned_rows(op: Operation, owned: int, rows: int) -> None:
    op.attributes[OWNED_ROWS] = ArrayAttr([IntegerAttr(owned, i64), IntegerAttr(rows, i64)])


def owned_rows(op: Operation) -> tuple[int, int] | None:
    """(owned, rows): of an expert-parallel gather's `rows` rows, the `owned` a rank's
    experts serve (`OWNED_ROWS`); None: a gather whose rows are all read."""
    attr = op.attributes.get(OWNED_ROWS)
    if not isinstance(attr, ArrayAttr) or len(attr.data) != 2:
        return None
    owned, rows = (a.value.data if isinstance(a, IntegerAttr) else 0 for a in attr.data)
    return (owned, rows) if 0 <= owned <= rows and rows > 0 else None


def owned_bytes(gather: Operation, gathered_bytes: int) -> int:
    """The bytes of the rows a gather moves (`gathered_bytes`: all of them, or a
    tile's) that a rank reads from the table: all, or the `OWNED_ROWS` share."""
    owned = owned_rows(gather)
    return gathered_bytes if owned is None else gathered_bytes * owned[0] // owned[1]


def table_rows(shape: Sequence[int]) -> int:
    """The rows `HBM_ROWS` counts in a table of `shape`: runs of its last dim (1 for a
    scalar or a vector)."""
    rows = 1
    for size in shape[:-1]:
        rows *= size
    return rows


def set_hbm_rows(attrs_owner: Operation, rows: int) -> None:
    """Record on a global the leading rows it holds in HBM (`HBM_ROWS`)."""
    attrs_owner.attributes[HBM_ROWS] = IntegerAttr(rows, i64)


def hbm_rows(attrs: Mapping[str, Attribute]) -> int:
    """The leading rows a DDR global (or the outlined parameter receiving it) holds
    in HBM (`HBM_ROWS`); 0 when none."""
    attr = attrs.get(HBM_ROWS)
    return attr.value.data if isinstance(attr, IntegerAttr) else 0


def hbm_share(attrs: Mapping[str, Attribute], rows: int) -> float:
    """The share of a table's bytes (of `rows` rows, `table_rows`) that lives in HBM
    by its `HBM_ROWS`, for a table in DDR: 0 when none of its rows is there."""
    return min(hbm_rows(attrs), rows) / rows if rows > 0 else 0.0


def set_split_choice(module: Operation, lines: Iterable[str]) -> None:
    module.attributes[SPLIT_CHOICE] = ArrayAttr([StringAttr(line) for line in lines])


def split_choice_of(module: Operation) -> list[str]:
    """The lines of `rdu-partition`'s table of the training splits it weighed; [] when it chose none."""
    attr = module.attributes.get(SPLIT_CHOICE)
    return [e.data for e in attr.data if isinstance(e, StringAttr)] if isinstance(attr, ArrayAttr) else []


def set_partition(module: Operation, tp: int, pp: int, dp: int = 1, microbatches: int = 1,
                  zero: int = 0) -> None:
    split = {"tp": IntegerAttr(tp, i64), "pp": IntegerAttr(pp, i64)}
    if dp > 1:
        split["dp"] = IntegerAttr(dp, i64)
    if zero:
        split["zero"] = IntegerAttr(int(zero), i64)  # the ZeRO stage
    if microbatches > 1:
        split["microbatches"] = IntegerAttr(microbatches, i64)
    module.attributes[PARTITION] = DictionaryAttr(split)


DEFERRED = "rdu.deferred"
"""On a collective of a training step's backward that nothing of the forward or
backward reads (a gradient's all-reduce, read by the optimizer or returned):
it may run on the links under the rest of the backward."""


def is_deferred(op: Operation) -> bool:
    return DEFERRED in op.attributes


def set_deferred(op: Operation) -> None:
    op.attributes[DEFERRED] = UnitAttr()


def microbatches_of(module: Operation) -> int:
    """The microbatches a pipelined training step's 1F1B schedule runs its batch in; 1 when none."""
    attr = module.attributes.get(PARTITION)
    count = attr.data.get("microbatches") if isinstance(attr, DictionaryAttr) else None
    return count.value.data if isinstance(count, IntegerAttr) else 1


EXECUTED_MICROBATCHES = "rdu.microbatches"
"""Module: the microbatches a training step's program runs itself (`compile_training(...,
microbatches=K)`): every batched input is sliced along its first dim into K parts, each
part's forward and backward are ops of the step, their gradients summed before the one
update. A pipelined split (pp > 1) cuts each microbatch's ops into the same stages and
orders them 1F1B (`rdu-partition`); the cost model counts each op as one microbatch's."""


def executed_microbatches(module: Operation) -> int:
    """The microbatches the step's program runs itself (`EXECUTED_MICROBATCHES`); 1 when none."""
    attr = module.attributes.get(EXECUTED_MICROBATCHES)
    return attr.value.data if isinstance(attr, IntegerAttr) else 1


def set_executed_microbatches(module: Operation, count: int) -> None:
    if count > 1:
        module.attributes[EXECUTED_MICROBATCHES] = IntegerAttr(count, i64)


def data_parallel_of(module: Operation) -> int:
    """The data-parallel replicas (`dp`) the module was partitioned with; 1 when none."""
    attr = module.attributes.get(PARTITION)
    dp = attr.data.get("dp") if isinstance(attr, DictionaryAttr) else None
    return dp.value.data if isinstance(dp, IntegerAttr) else 1


def zero_of(module: Operation) -> int:
    """The ZeRO stage the module's data-parallel replicas shard their state at
    (1: optimizer state, 2: and gradients); 0 when none."""
    attr = module.attributes.get(PARTITION)
    zero = attr.data.get("zero") if isinstance(attr, DictionaryAttr) else None
    return zero.value.data if isinstance(zero, IntegerAttr) else 0


def spmd_ranks(module: Operation) -> int:
    """The ranks that run the one SPMD program of each stage: tp x dp sockets."""
    return partition_of(module)[0] * data_parallel_of(module)


def stage_attr(op: Operation) -> int | None:
    """The `rdu.stage` written on this op itself, or None."""
    attr = op.attributes.get(STAGE)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def set_stage(op: Operation, stage: int) -> None:
    op.attributes[STAGE] = IntegerAttr(stage, i64)


def op_stage(op: Operation) -> int:
    """The pipeline stage an op (or a kernel or tier.compute, by its body) runs on; 0 when not pipelined."""
    return next((stage for inner in op.walk() if (stage := stage_attr(inner)) is not None), 0)


# --- the tiling plan -------------------------------------------------------

@irdl_attr_definition
class TilePlanAttr(ParametrizedAttribute):
    """`rdu-tile`'s plan for a kernel, which `rdu-insert-dma` lowers:
    `#rdu.tile_plan<tiles = 4, size = 128, in = [0, -1], out = [0], working_set = 1024>`.
    `in`/`out`: per kernel input/output, the tiled dim (-1: whole)."""

    name = "rdu.tile_plan"

    tiles: IntAttr
    size: IntAttr
    tiled_in: ArrayAttr[IntAttr]
    tiled_out: ArrayAttr[IntAttr]
    working_set: IntAttr

    @staticmethod
    def of(tiles: int, size: int, tiled_in: Sequence[int], tiled_out: Sequence[int], working_set: int) -> TilePlanAttr:
        return TilePlanAttr(IntAttr(tiles), IntAttr(size), ArrayAttr(IntAttr(d) for d in tiled_in),
                            ArrayAttr(IntAttr(d) for d in tiled_out), IntAttr(working_set))

    @property
    def inputs(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.tiled_in.data)

    @property
    def outputs(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.tiled_out.data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<tiles = {self.tiles.data}, size = {self.size.data}, in = ")
        _print_ints(printer, self.inputs)
        printer.print_string(", out = ")
        _print_ints(printer, self.outputs)
        printer.print_string(f", working_set = {self.working_set.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        def field(name: str, value: Callable[[], object]) -> object:
            parser.parse_keyword(name)
            parser.parse_punctuation("=")
            return value()

        with parser.in_angle_brackets():
            tiles = field("tiles", parser.parse_integer)
            parser.parse_punctuation(",")
            size = field("size", parser.parse_integer)
            parser.parse_punctuation(",")
            tiled_in = field("in", lambda: _parse_ints(parser))
            parser.parse_punctuation(",")
            tiled_out = field("out", lambda: _parse_ints(parser))
            parser.parse_punctuation(",")
            working = field("working_set", parser.parse_integer)
        plan = TilePlanAttr.of(tiles, size, tiled_in, tiled_out, working)  # type: ignore[arg-type]
        return list(plan.parameters)


def tile_plan_of(kernel: Operation) -> TilePlanAttr | None:
    """The kernel's recorded tiling, or None before `rdu-tile`."""
    attr = kernel.attributes.get(TILE_PLAN)
    return attr if isinstance(attr, TilePlanAttr) else None


def set_tile_plan(kernel: Operation, plan: TilePlanAttr) -> None:
    kernel.attributes[TILE_PLAN] = plan


def set_tiles(compute: Operation, tiles: int) -> None:
    compute.attributes[TILES] = IntegerAttr(tiles, i64)


# --- the mapping onto the fabric -------------------------------------------

@dataclass(frozen=True)
class StageUnits:
    """One body op's PCU stage: in `section`, the PCUs `first` .. `first + units - 1`
    (numbered in the grid's snake order), and `hops` switch hops on its longest input stream."""

    op: int
    section: int
    first: int
    units: int
    hops: int


@dataclass(frozen=True)
class BufferUnits:
    """One buffer's PMUs in `section`: `first` .. `first + units - 1`. Buffers are
    numbered: the compute's ins, its outs, then its body values not yielded, in order."""

    buffer: int
    section: int
    first: int
    units: int


@dataclass(frozen=True)
class KernelMapping:
    """A kernel on the fabric: its stages' PCUs and buffers' PMUs, section by section."""

    grid: tuple[int, int]
    sections: int
    stages: tuple[StageUnits, ...]
    buffers: tuple[BufferUnits, ...]

    @property
    def pcu_sites(self) -> int:
        return self.grid[0] * self.grid[1] // 2

    def pcus(self, section: int | None = None) -> int:
        """PCUs used (in one section, or the most of any section)."""
        return self._used(self.stages, section)

    def pmus(self, section: int | None = None) -> int:
        """PMUs used (in one section, or the most of any section)."""
        return self._used(self.buffers, section)

    def _used(self, ranges: Sequence[StageUnits | BufferUnits], section: int | None) -> int:
        if section is None:
            return max((self._used(ranges, s) for s in range(self.sections)), default=0)
        return sum(r.units for r in ranges if r.section == section)

    def problems(self) -> list[str]:
        """Why the mapping is not one the chip can run: a unit used twice in a
        section, a unit past the grid, a section out of range, an empty range."""
        found: list[str] = []
        for kind, ranges in (("PCU", self.stages), ("PMU", self.buffers)):
            for r in ranges:
                if r.units < 1 or r.first < 0:
                    found.append(f"{kind} range {r.first} + {r.units} is empty or negative")
                elif r.first + r.units > self.pcu_sites:
                    found.append(f"{kind} {r.first + r.units - 1} is outside the {self.grid[0]}x{self.grid[1]} "
                                 f"grid ({self.pcu_sites} {kind}s)")
                if not 0 <= r.section < self.sections:
                    found.append(f"{kind} range in section {r.section} of {self.sections}")
            for section in range(self.sections):
                spans = sorted((r.first, r.first + r.units) for r in ranges if r.section == section)
                for (_, end), (start, _) in zip(spans, spans[1:]):
                    if start < end:
                        found.append(f"{kind} {start} is used twice in section {section}")
        return found


def _print_rows(printer: Printer, rows: Iterable[Sequence[int]]) -> None:
    printer.print_string("[" + ", ".join("[" + ", ".join(str(v) for v in row) + "]" for row in rows) + "]")


@irdl_attr_definition
class MappingAttr(ParametrizedAttribute):
    """`rdu-map-units`' mapping of a kernel, on its `tier.compute`:
    `#rdu.mapping<grid = [40, 52], sections = 1, stages = [[op, section, first, units, hops], ...],
    buffers = [[buffer, section, first, units], ...]>` (`KernelMapping`)."""

    name = "rdu.mapping"

    grid_shape: ArrayAttr[IntAttr]
    section_count: IntAttr
    stage_rows: ArrayAttr[ArrayAttr[IntAttr]]
    buffer_rows: ArrayAttr[ArrayAttr[IntAttr]]

    @staticmethod
    def of(mapping: KernelMapping) -> MappingAttr:
        def rows(items: Iterable[tuple[int, ...]]) -> ArrayAttr[ArrayAttr[IntAttr]]:
            return ArrayAttr(ArrayAttr(IntAttr(v) for v in row) for row in items)

        return MappingAttr(ArrayAttr(IntAttr(v) for v in mapping.grid), IntAttr(mapping.sections),
                           rows((s.op, s.section, s.first, s.units, s.hops) for s in mapping.stages),
                           rows((b.buffer, b.section, b.first, b.units) for b in mapping.buffers))

    def mapping(self) -> KernelMapping:
        def ints(row: ArrayAttr[IntAttr]) -> list[int]:
            return [v.data for v in row.data]

        rows, cols = ints(self.grid_shape)
        return KernelMapping((rows, cols), self.section_count.data,
                       tuple(StageUnits(*ints(r)) for r in self.stage_rows.data),
                       tuple(BufferUnits(*ints(r)) for r in self.buffer_rows.data))

    def verify_(self) -> None:
        if len(self.grid_shape.data) != 2 or any(len(r.data) != 5 for r in self.stage_rows.data) \
                or any(len(r.data) != 4 for r in self.buffer_rows.data):
            raise VerifyException("rdu.mapping: grid is [rows, cols], a stage [op, section, first, units, hops], "
                                  "a buffer [buffer, section, first, units]")
        problems = self.mapping().problems()
        if problems:
            raise VerifyException(f"rdu.mapping: {problems[0]}")

    def print_parameters(self, printer: Printer) -> None:
        mapping = self.mapping()
        printer.print_string(f"<grid = [{mapping.grid[0]}, {mapping.grid[1]}], sections = {mapping.sections}, "
                             "stages = ")
        _print_rows(printer, ((s.op, s.section, s.first, s.units, s.hops) for s in mapping.stages))
        printer.print_string(", buffers = ")
        _print_rows(printer, ((b.buffer, b.section, b.first, b.units) for b in mapping.buffers))
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        def field(name: str) -> None:
            parser.parse_keyword(name)
            parser.parse_punctuation("=")

        def rows() -> list[list[int]]:
            return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_ints(parser))

        with parser.in_angle_brackets():
            field("grid")
            grid = _parse_ints(parser)
            parser.parse_punctuation(",")
            field("sections")
            sections = parser.parse_integer()
            parser.parse_punctuation(",")
            field("stages")
            stages = rows()
            parser.parse_punctuation(",")
            field("buffers")
            buffers = rows()

        def attr_rows(items: list[list[int]]) -> ArrayAttr[ArrayAttr[IntAttr]]:
            return ArrayAttr(ArrayAttr(IntAttr(v) for v in row) for row in items)

        parsed = MappingAttr(ArrayAttr(IntAttr(v) for v in grid), IntAttr(sections), attr_rows(stages),
                             attr_rows(buffers))
        try:
            parsed.verify_()
        except VerifyException as error:
            parser.raise_error(str(error))
        return list(parsed.parameters)


def mapping_of(compute: Operation) -> KernelMapping | None:
    """The kernel's recorded mapping (`rdu-map-units`), or None."""
    attr = compute.attributes.get(MAPPING)
    return attr.mapping() if isinstance(attr, MappingAttr) else None


def set_mapping(compute: Operation, mapping: KernelMapping) -> None:
    compute.attributes[MAPPING] = MappingAttr.of(mapping)


# --- layers and outlined functions -----------------------------------------

def layer_of(op: Operation) -> str | None:
    """The repeated block (`model.layers.3`) the op belongs to, or None."""
    attr = op.attributes.get(LAYER)
    return attr.data if isinstance(attr, StringAttr) else None


def set_layer(op: Operation, key: str) -> None:
    op.attributes[LAYER] = StringAttr(key)


def is_outlined(function: Operation) -> bool:
    """Whether `function` is a layer `rdu-outline-layers` made (it has `rdu.calls`)."""
    return CALLS in function.attributes


def calls_of(function: Operation) -> int:
    """How many `func.call`s run an outlined function; 0 for another function."""
    attr = function.attributes.get(CALLS)
    return attr.value.data if isinstance(attr, IntegerAttr) else 0


def set_outlined(function: Operation, source: str, calls: int) -> None:
    """Mark `function` as outlined from layer `source` and run by `calls` calls."""
    function.attributes[OUTLINED_FROM] = StringAttr(source)
    function.attributes[CALLS] = IntegerAttr(calls, i64)


# --- argument roles --------------------------------------------------------

class Role(StrEnum):
    """What an argument of an outlined layer receives."""

    INPUT = "input"
    WEIGHT = "weight"
    VALUE = "value"


def global_of(attrs: Mapping[str, Attribute]) -> str | None:
    """The `tier.global` a weight argument reads (its `rdu.global`), or None."""
    ref = attrs.get(GLOBAL)
    return ref.root_reference.data if isinstance(ref, SymbolRefAttr) else None


def weight_arg(symbol: str) -> dict[str, Attribute]:
    """The attributes of an entry argument that reads global @symbol."""
    return {GLOBAL: SymbolRefAttr(symbol)}


def input_label(attrs: Mapping[str, Attribute]) -> str | None:
    """A user input's label (its `rdu.input`), or None for another argument."""
    label = attrs.get(INPUT)
    return label.data if isinstance(label, StringAttr) else None


def is_input(attrs: Mapping[str, Attribute]) -> bool:
    return INPUT in attrs


def input_arg(label: str) -> dict[str, Attribute]:
    """The attributes of a user input argument labelled `label`."""
    return {INPUT: StringAttr(label)}


def is_weight(attrs: Mapping[str, Attribute]) -> bool:
    """An outlined layer's argument that receives a weight (`rdu.weight`)."""
    return WEIGHT in attrs


def layer_arg(role: Role, label: str = "x") -> DictionaryAttr:
    """The attributes of an outlined layer's argument with this role."""
    if role == Role.WEIGHT:
        return DictionaryAttr({WEIGHT: UnitAttr()})
    if role == Role.INPUT:
        return DictionaryAttr(input_arg(label))
    return DictionaryAttr({VALUE: UnitAttr()})


def arg_attrs(function: Operation) -> list[dict[str, Attribute]]:
    """Per argument of a `func.func`, its attributes (empty where it has none)."""
    attrs = getattr(function, "arg_attrs", None)
    count = len(function.regions[0].blocks[0].args) if function.regions and function.regions[0].blocks else 0
    found = [dict(a.data) for a in attrs.data] if attrs is not None else []
    return found + [{} for _ in range(count - len(found))]


# --- module-level facts ----------------------------------------------------

def weights_file(module: Operation) -> str | None:
    """The weights file named by the module (relative to the `.mlir`), or None."""
    attr = module.attributes.get(WEIGHTS)
    return attr.data if isinstance(attr, StringAttr) else None


def set_weights_file(module: Operation, path: str) -> None:
    module.attributes[WEIGHTS] = StringAttr(path)


def f64_demoted(module: Operation) -> int:
    """How many float64 nodes the importer demoted to float32 (0 when none)."""
    attr = module.attributes.get(F64_DEMOTED)
    return attr.value.data if isinstance(attr, IntegerAttr) else 0


def set_f64_demoted(module: Operation, count: int) -> None:
    module.attributes[F64_DEMOTED] = IntegerAttr(count, i64)


def complex_inputs(module: Operation) -> list[str]:
    """Labels of the user inputs a caller passes as complex arrays (the program reads their pairs)."""
    attr = module.attributes.get(COMPLEX_INPUTS)
    return [a.data for a in attr.data if isinstance(a, StringAttr)] if isinstance(attr, ArrayAttr) else []


def complex_outputs(module: Operation) -> list[int]:
    """Positions of the user outputs handed back as complex arrays (the program writes their pairs)."""
    attr = module.attributes.get(COMPLEX_OUTPUTS)
    return [a.value.data for a in attr.data if isinstance(a, IntegerAttr)] if isinstance(attr, ArrayAttr) else []


def set_complex_edges(module: Operation, inputs: Sequence[str], outputs: Sequence[int]) -> None:
    """Mark the complex user inputs (labels) and outputs (positions); none: no attribute."""
    if inputs:
        module.attributes[COMPLEX_INPUTS] = ArrayAttr(StringAttr(label) for label in inputs)
    if outputs:
        module.attributes[COMPLEX_OUTPUTS] = ArrayAttr(IntegerAttr(i, i64) for i in outputs)


@dataclass(frozen=True)
class OutputEdge:
    """A user output the program computes as a plain dense tensor and its caller receives otherwise:
    `dtype` "uint64" (the program writes its int64 bits), or a sparse `layout` (the program writes the
    dense tensor; the caller converts it with torch's `Tensor.to_sparse` and these arguments)."""

    dtype: str = ""
    layout: str = ""
    """"" (strided), or torch's name of a sparse layout: sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc."""
    sparse_dim: int | None = None
    dense_dim: int | None = None
    blocksize: tuple[int, ...] | None = None

    def attr(self) -> DictionaryAttr:
        fields: dict[str, Attribute] = {"dtype": StringAttr(self.dtype), "layout": StringAttr(self.layout)}
        for key, number in (("sparse_dim", self.sparse_dim), ("dense_dim", self.dense_dim)):
            if number is not None:
                fields[key] = IntegerAttr(number, i64)
        if self.blocksize is not None:
            fields["blocksize"] = ArrayAttr(IntegerAttr(b, i64) for b in self.blocksize)
        return DictionaryAttr(fields)

    @staticmethod
    def of(attr: DictionaryAttr) -> OutputEdge:
        data = attr.data

        def number(key: str) -> int | None:
            found = data.get(key)
            return found.value.data if isinstance(found, IntegerAttr) else None

        dtype, layout, block = data.get("dtype"), data.get("layout"), data.get("blocksize")
        return OutputEdge(
            dtype.data if isinstance(dtype, StringAttr) else "",
            layout.data if isinstance(layout, StringAttr) else "",
            number("sparse_dim"), number("dense_dim"),
            tuple(b.value.data for b in block.data if isinstance(b, IntegerAttr)) if isinstance(block, ArrayAttr)
            else None,
        )


def output_edges(module: Operation) -> dict[int, OutputEdge]:
    """The user outputs (by position) converted at the program's edge (`OutputEdge`); {} when none."""
    attr = module.attributes.get(OUTPUT_EDGES)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {int(key): OutputEdge.of(value) for key, value in attr.data.items() if isinstance(value, DictionaryAttr)}


def set_output_edges(module: Operation, edges: Mapping[int, OutputEdge]) -> None:
    """Record the user outputs converted at the edge; none: no attribute."""
    if edges:
        module.attributes[OUTPUT_EDGES] = DictionaryAttr({str(i): edge.attr() for i, edge in sorted(edges.items())})


# --- the target ------------------------------------------------------------

def _figure_attr(value: object) -> Attribute:
    if isinstance(value, bool):
        return IntegerAttr(int(value), IntegerType(1))
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, 64)
    return StringAttr(str(value))


def _figure_value(attr: Attribute) -> object:
    if isinstance(attr, IntegerAttr):
        width = attr.type.width.data if isinstance(attr.type, IntegerType) else 64
        return bool(attr.value.data) if width == 1 else attr.value.data
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    raise VerifyException(f"a target figure is a number, a flag or a string, not {attr}")


def _print_figure(printer: Printer, key: str, attr: Attribute) -> None:
    """`key = value` with numbers in the syntax whose default type they have
    (`1` an i64, `1.5e+12` an f64, `true` a flag): no `: f64` in the text, which
    would read as a float64 value of the program."""
    printer.print_string(f"{key} = ")
    value = _figure_value(attr)
    if isinstance(value, bool):
        printer.print_string("true" if value else "false")
    elif isinstance(value, float):
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        if "." not in mantissa and mantissa.lstrip("-").isdigit():
            mantissa += ".0"
        printer.print_string(mantissa + (f"e{exponent}" if exponent else ""))
    elif isinstance(value, int):
        printer.print_string(str(value))
    else:
        printer.print_attribute(attr)


def _digest(figures: Mapping[str, object]) -> str:
    """A content hash of the figures (sorted JSON, floats by repr)."""
    text = json.dumps({k: repr(v) if isinstance(v, float) else v for k, v in sorted(figures.items())})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """The target a module is compiled for, all its figures and their hash, so
    a `.mlir` stands alone: `#rdu.target<{name = "sn40l", sockets = 1 : i64, ...}, hash = "…">`."""

    name = "rdu.target"

    figures: DictionaryAttr
    digest: StringAttr

    @staticmethod
    def of(target: Target) -> TargetAttr:
        values = figure_values(target)
        return TargetAttr(DictionaryAttr({k: _figure_attr(v) for k, v in values.items()}), StringAttr(_digest(values)))

    def values(self) -> dict[str, object]:
        return {k: _figure_value(v) for k, v in self.figures.data.items()}

    def target(self) -> Target:
        return target_of_figures(self.values(), "rdu.target")

    def verify_(self) -> None:
        if _digest(self.values()) != self.digest.data:
            raise VerifyException("rdu.target: the figures do not match their hash (edited by hand?)")

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<{")
        printer.print_list(self.figures.data.items(), lambda item: _print_figure(printer, *item))
        printer.print_string(f'}}, hash = "{self.digest.data}">')

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            figures = parser.parse_attribute()
            if not isinstance(figures, DictionaryAttr):
                parser.raise_error("rdu.target holds a dictionary of figures")
            parser.parse_punctuation(",")
            parser.parse_keyword("hash")
            parser.parse_punctuation("=")
            digest = parser.parse_str_literal()
        if _digest({k: _figure_value(v) for k, v in figures.data.items()}) != digest:
            parser.raise_error("rdu.target: the figures do not match their hash (edited by hand?)")
        return [figures, StringAttr(digest)]


def module_target(module: Operation, option: str = "") -> Target:
    """The pass option if given, else the target the module carries (`rdu.target`:
    its figures, or a built-in name or file path in an older file), else sn40l."""
    if option:
        return load_target(option)
    attr = module.attributes.get(TARGET)
    if isinstance(attr, TargetAttr):
        return attr.target()
    return load_target(attr.data if isinstance(attr, StringAttr) else DEFAULT_TARGET)


def set_target(module: Operation, target: Target) -> None:
    """Record the target, all its figures, on the module, where every pass reads it."""
    module.attributes[TARGET] = TargetAttr.of(target)


# --- dynamic-shape buckets -------------------------------------------------

_BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")


@irdl_attr_definition
class BucketAttr(ParametrizedAttribute):
    """The value of each dynamic dim (by its name) that one specialized program of a
    multi-shape compile is for: `#rdu.bucket<batch = 4, seq = 128>`."""

    name = "rdu.bucket"

    names: ArrayAttr[StringAttr]
    values: ArrayAttr[IntAttr]

    @staticmethod
    def of(values: Mapping[str, int]) -> BucketAttr:
        return BucketAttr(ArrayAttr(StringAttr(k) for k in values), ArrayAttr(IntAttr(v) for v in values.values()))

    def as_dict(self) -> dict[str, int]:
        return {k.data: v.data for k, v in zip(self.names.data, self.values.data)}

    def verify(self) -> None:
        if len(self.names.data) != len(self.values.data):
            raise VerifyException("#rdu.bucket needs one value per name")
        if len({k.data for k in self.names.data}) != len(self.names.data):
            raise VerifyException("#rdu.bucket names a dim twice")
        if any(v.data < 0 for v in self.values.data):
            raise VerifyException("#rdu.bucket sizes must be >= 0")
        bad = [k.data for k in self.names.data if not _BARE_NAME.fullmatch(k.data)]
        if bad:
            raise VerifyException(f"#rdu.bucket dim name '{bad[0]}' is not a name (letters, digits, _ . $)")

    def print_parameters(self, printer: Printer) -> None:
        fields = ", ".join(f"{k} = {v}" for k, v in self.as_dict().items())
        printer.print_string(f"<{fields}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        def one() -> tuple[str, int]:
            name = parser.parse_identifier()
            parser.parse_punctuation("=")
            return name, parser.parse_integer(allow_boolean=False)

        with parser.in_angle_brackets():
            pairs = parser.parse_comma_separated_list(parser.Delimiter.NONE, one)
        return [ArrayAttr(StringAttr(k) for k, _ in pairs), ArrayAttr(IntAttr(v) for _, v in pairs)]


def bucket_of(module: Operation) -> dict[str, int] | None:
    """The dynamic dims' values a bucket's module is specialized for, or None."""
    attr = module.attributes.get(BUCKET)
    return attr.as_dict() if isinstance(attr, BucketAttr) else None


def set_bucket(module: Operation, values: Mapping[str, int]) -> None:
    module.attributes[BUCKET] = BucketAttr.of(values)


@irdl_attr_definition
class PaddingAttr(ParametrizedAttribute):
    """The dynamic dims a call of a bucketed program may pad to a larger bucket
    (`rducc.shapes.padding`): the dims, per user input and per user output the
    padded dim each of its dims carries ("" for none), and each refused dim with
    its reason (`"seq: aten.bmm contracts ..."`)."""

    name = "rdu.padding"

    dims: ArrayAttr[StringAttr]
    inputs: ArrayAttr[ArrayAttr[StringAttr]]
    outputs: ArrayAttr[ArrayAttr[StringAttr]]
    refused: ArrayAttr[StringAttr]
    fills: ArrayAttr[StringAttr]
    """Per user input, the value its padded positions hold ("" for zero; "-inf", "inf", "1": the neutral
    value of a max, min or product its padded dim meets); then "valid" per hidden validity input."""

    def verify(self) -> None:
        bad_fill = [f.data for f in self.fills.data if f.data not in PAD_FILLS]
        if bad_fill:
            raise VerifyException(f"#rdu.padding fills an input with '{bad_fill[0]}'; a fill is one of "
                                  f"{', '.join(repr(f) for f in PAD_FILLS)}")
        known = {d.data for d in self.dims.data}
        for row, fill in zip(self.inputs.data, self.fills.data):
            names = [n.data for n in row.data]
            if fill.data == PAD_VALID and (len(names) != 1 or names[0] not in known):
                raise VerifyException(f"#rdu.padding has a validity input of dims {names}; it is one vector "
                                      "over one padded dim")
        for rows in (self.inputs.data, self.outputs.data):
            for row in rows:
                bad = [n.data for n in row.data if n.data and n.data not in known]
                if bad:
                    raise VerifyException(f"#rdu.padding names '{bad[0]}', which is not one of its dims")


PAD_VALID = "valid"
"""The fill of a hidden validity input (after the user inputs; its row names its one dim): true at the
real positions, false (padded) at the others, made by the caller for masked reductions."""
PAD_FILLS = ("", "-inf", "inf", "1", PAD_VALID)
"""The values a padded input may be filled with ("" is zero)."""


def padding_of(module: Operation) -> tuple[list[str], list[list[str]], list[list[str]], dict[str, str],
                                           list[str]] | None:
    """A bucket module's padding (dims, inputs, outputs, refused, fills), or None."""
    attr = module.attributes.get(PADDING)
    if not isinstance(attr, PaddingAttr):
        return None
    refused = dict(r.data.split(": ", 1) for r in attr.refused.data if ": " in r.data)
    return ([d.data for d in attr.dims.data], [[n.data for n in row.data] for row in attr.inputs.data],
            [[n.data for n in row.data] for row in attr.outputs.data], refused, [f.data for f in attr.fills.data])


def set_padding(module: Operation, dims: Sequence[str], inputs: Sequence[Sequence[str]],
                outputs: Sequence[Sequence[str]], refused: Mapping[str, str], fills: Sequence[str] = ()) -> None:
    def rows(table: Sequence[Sequence[str]]) -> ArrayAttr[ArrayAttr[StringAttr]]:
        return ArrayAttr(ArrayAttr(StringAttr(n) for n in row) for row in table)

    module.attributes[PADDING] = PaddingAttr(ArrayAttr(StringAttr(d) for d in dims), rows(inputs), rows(outputs),
                                             ArrayAttr(StringAttr(f"{k}: {v}") for k, v in refused.items()),
                                             ArrayAttr(StringAttr(f) for f in fills))


CONTRACT_ATTRS: list[type[Attribute]] = [LevelAttr, SplitAttr, TilePlanAttr, TargetAttr, MappingAttr, PhaseAttr,
                                         BucketAttr, PaddingAttr]
"""The typed attributes the `rdu` dialect registers."""
