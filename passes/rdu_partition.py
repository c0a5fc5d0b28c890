"""`rdu-partition{tp=N pp=M}`: split the model across the target's sockets.

Runs on the imported graph (level 1), right after `rdu-canonicalize`, on
every `func.func` of the module. The result is one SPMD program:

- **Tensor parallelism (tp)**: every socket of a tp group runs the same
  program on its own shard. Each value has a layout: replicated, split along
  one dim into `tp` equal contiguous parts (rank r holds part r), or a
  partial sum. Layouts start at the weights: a linear layer whose input is
  replicated splits its weight by output columns (q/k/v, gate/up, lm_head);
  one whose input is split along the contraction dim splits its weight by rows
  (o_proj, down_proj) and gives a partial sum, which `rdu.all_reduce` makes
  whole where it is used. Splits flow through elementwise, layout, reduce and
  batched-matmul ops (attention heads follow the q/k/v columns; the KV cache,
  a user input, is split by heads). A split weight or input keeps its full
  shape in the weights file and the caller's arrays: `rdu.shard = [dim, parts]`
  on the `tier.global` (or the argument) says which part each rank takes, and
  the IR types are one rank's shapes. An op whose operands cannot stay split
  is replicated (`rdu.all_gather` of its split operands): correct, slower.
  A result that stays split is joined by the caller (`rdu.result_shards` on
  the function).
- **Pipeline parallelism (pp)**: decoder layers (`rdu.layer`) go to `pp`
  stages of consecutive layers; every op carries its stage (`rdu.stage`) and a
  value used in another stage crosses by `rdu.send_recv`. Stage s of tp rank r
  runs on socket `s * tp + r`.

Without options the pass models every split the target's sockets allow
(`tp * pp <= sockets`, powers of two) with the cost model's level-1 estimate
(`rducc.runtime.cost_model.partition_estimate`) and keeps the fastest. Given
`tp`, a decoder layer that `tp` cannot split (heads or hidden sizes it does not
divide) is an error at its source line, and so is `tp * pp` above the sockets.
The module records the choice as `rdu.partition = {tp = N, pp = M}`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import prod

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from rducc.diagnostics import LocatedError
from rducc.dialects.collectives import AllGatherOp, AllReduceOp, SendRecvOp
from rducc.dialects.dataflow import (
    BroadcastOp,
    ConcatOp,
    KernelOp,
    MapOp,
    MatmulOp,
    ReduceKind,
    ReduceOp,
    ReshapeOp,
    ScanOp,
    SliceOp,
    TransposeOp,
)
from rducc.dialects.memory import GlobalOp
from rducc.errors import RduccError
from rducc.passes.common import LAYER_ATTR, functions, module_target, require_tensor_program

PARTITION_ATTR = "rdu.partition"
"""Module attribute: `{tp = N, pp = M}` once partitioned."""
SHARD_ATTR = "rdu.shard"
"""On a `tier.global` or a function argument: `array<i64: dim, parts>`."""
RESULT_SHARDS_ATTR = "rdu.result_shards"
"""On a function: per result, the dim it stays split along (-1: whole)."""
STAGE_ATTR = "rdu.stage"
"""On each op of a pipelined function: the pipeline stage that runs it."""

Layout = int | None
"""None: replicated; d >= 0: split along dim d; PARTIAL: a partial sum."""
PARTIAL = -1


def shard_spec(attr: object) -> tuple[int, int] | None:
    """(dim, parts) of an `rdu.shard` attribute, or None."""
    if isinstance(attr, DenseArrayBase):
        dim, parts = attr.get_values()
        return int(dim), int(parts)
    return None


def partition_of(module: ModuleOp) -> tuple[int, int]:
    """(tp, pp) the module was partitioned with; (1, 1) when it was not."""
    attr = module.attributes.get(PARTITION_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return 1, 1
    tp, pp = attr.data.get("tp"), attr.data.get("pp")
    return (tp.value.data if isinstance(tp, IntegerAttr) else 1,
            pp.value.data if isinstance(pp, IntegerAttr) else 1)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _with_dim(tensor: TensorType, dim: int, size: int) -> TensorType:
    shape = list(tensor.get_shape())
    shape[dim] = size
    return TensorType(tensor.element_type, shape)


def _layer(op: Operation) -> str | None:
    attr = op.attributes.get(LAYER_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


@dataclass
class _TensorPartitioner:
    """Rewrites one function for `tp` ranks (see the module docstring).

    Ops are visited in order; each op's rule (`_plan`) says which layout it
    needs of each operand and which its result gets, or None (replicate).
    `materialize` moves an operand there: an all-reduce for a partial sum,
    an all-gather for a split value needed whole, or, for a whole value
    needed split, sharding the argument it comes from (through a chain of
    transposes/reshapes used once). `full` keeps each retyped value's full
    shape; `made` shares one collective among the users of a value.
    """

    module: ModuleOp
    function: func.FuncOp
    tp: int
    strict: bool
    layout: dict[SSAValue, Layout] = field(default_factory=dict)
    full: dict[SSAValue, tuple[int, ...]] = field(default_factory=dict)
    made: dict[tuple[SSAValue, Layout], SSAValue] = field(default_factory=dict)
    replicated_ops: int = 0

    # -- layouts and shapes ---------------------------------------------------

    def layout_of(self, value: SSAValue) -> Layout:
        return self.layout.get(value)

    def full_shape(self, value: SSAValue) -> tuple[int, ...]:
        return self.full.get(value) or _shape(value)

    # -- moving a value to the layout an op needs ------------------------------

    def feasible(self, value: SSAValue, want: Layout) -> bool:
        have = self.layout_of(value)
        if have == PARTIAL:
            have = None
        if have == want or want is None:
            return True
        return have is None and self._shard_chain(value, want) is not None

    def _shard_chain(self, value: SSAValue, dim: int) -> list[tuple[Operation, int]] | None:
        """How a replicated value can be split along `dim` after the fact: it is a
        shardable argument, or a transpose/reshape used once of one (a KV cache
        transposed for QK^T). The layout ops from the argument out, each with the
        dim its result is split along; None when it cannot."""
        if self.full_shape(value)[dim] % self.tp:
            return None
        if self._shardable_arg(value, dim):
            return []
        owner = value.owner
        if not isinstance(owner, TransposeOp | ReshapeOp) or len(list(value.uses)) != 1:
            return None
        source = owner.input
        if isinstance(owner, TransposeOp):
            source_dim: int | None = list(owner.perm.get_values())[dim]
        else:
            source_dim = self._reshape_source_dim(self.full_shape(source), _shape(value), dim)
        if source_dim is None or self.layout_of(source) is not None:
            return None
        chain = self._shard_chain(source, source_dim)
        return None if chain is None else [*chain, (owner, dim)]

    def _reshape_source_dim(self, source: tuple[int, ...], result: tuple[int, ...], dim: int) -> int | None:
        before = prod(result[:dim])
        for d in range(len(source)):
            if prod(source[:d]) == before and source[d] % self.tp == 0:
                return d
        return None

    def _shardable_arg(self, value: SSAValue, dim: int) -> bool:
        if not isinstance(value, BlockArgument) or value.block is not self.function.body.block:
            return False
        if len(list(value.uses)) != 1 or self.full_shape(value)[dim] % self.tp:
            return False
        reference = self._arg_attrs(value).get("rdu.global")
        if isinstance(reference, SymbolRefAttr):
            target = self._global(reference.root_reference.data)
            return target is not None and target.initial_value is None and SHARD_ATTR not in target.attributes
        return "rdu.input" in self._arg_attrs(value)

    def materialize(self, value: SSAValue, want: Layout, before: Operation) -> SSAValue:
        """`value` in layout `want` (call `feasible` first): collectives or a sharded argument."""
        have = self.layout_of(value)
        if have == want:
            return value
        if (value, want) in self.made:
            return self.made[(value, want)]
        result = value
        if have == PARTIAL:
            result = self._insert(AllReduceOp(value, self.tp), before, None)
            have = None
        elif have is not None and want is None:
            gathered = _with_dim(value.type, have, self.full_shape(value)[have])
            result = self._insert(AllGatherOp(value, have, self.tp, gathered), before, None)
            have = None
        if want is not None and have is None:
            result = self._shard_through_chain(value, want)
        self.made[(value, want)] = result
        return result

    def _insert(self, op: Operation, before: Operation, layout: Layout) -> SSAValue:
        """Insert a collective of `op.operands[0]` just after the op that defines it
        (in its layer), or before its user `before` when it is an argument."""
        producer = op.operands[0].owner
        anchor = producer if isinstance(producer, Operation) else before
        op.location = anchor.location
        if (layer := _layer(anchor)) is not None:
            op.attributes[LAYER_ATTR] = StringAttr(layer)
        parent = before.parent_block()
        assert parent is not None
        if anchor is producer:
            parent.insert_op_after(op, producer)
        else:
            parent.insert_op_before(op, before)
        self.layout[op.results[0]] = layout
        return op.results[0]

    def _arg_attrs(self, arg: BlockArgument) -> dict:
        attrs = self.function.arg_attrs
        return dict(attrs.data[arg.index].data) if attrs is not None else {}

    def _global(self, name: str) -> GlobalOp | None:
        return next((g for g in self.module.ops if isinstance(g, GlobalOp) and g.sym_name.data == name), None)

    def _shard_through_chain(self, value: SSAValue, dim: int) -> SSAValue:
        chain = self._shard_chain(value, dim)
        assert chain is not None
        if not chain:
            return self._shard_arg(value, dim)
        first = chain[0][0]
        root_dim = (list(first.perm.get_values())[chain[0][1]] if isinstance(first, TransposeOp)
                    else self._reshape_source_dim(self.full_shape(first.operands[0]),
                                                  _shape(first.results[0]), chain[0][1]))
        self._shard_arg(first.operands[0], root_dim)
        for op, out_dim in chain:
            self._set_result(op, out_dim)
        return chain[-1][0].results[0]

    def _shard_arg(self, arg: SSAValue, dim: int) -> SSAValue:
        assert isinstance(arg, BlockArgument)
        full = self.full_shape(arg)
        spec = DenseArrayBase.from_list(i64, [dim, self.tp])
        attrs = self._arg_attrs(arg)
        attrs[SHARD_ATTR] = spec
        all_attrs = list(self.function.arg_attrs.data)
        all_attrs[arg.index] = DictionaryAttr(attrs)
        self.function.arg_attrs = ArrayAttr(all_attrs)
        reference = attrs.get("rdu.global")
        per_rank = _with_dim(arg.type, dim, full[dim] // self.tp)
        if isinstance(reference, SymbolRefAttr):
            target = self._global(reference.root_reference.data)
            assert target is not None
            target.global_type = per_rank
            target.attributes[SHARD_ATTR] = spec
        new = Rewriter.replace_value_with_new_type(arg, per_rank)
        self.full[new] = full
        self.layout[new] = dim
        return new

    # -- the rules, one per op kind ---------------------------------------------

    def partition(self) -> list[Layout]:
        block = self.function.body.block
        for op in list(block.ops):
            if isinstance(op, func.ReturnOp):
                return self._results(op)
            self._partition_op(op)
        return []

    def _partition_op(self, op: Operation) -> None:
        if not op.results or not all(isinstance(r.type, TensorType) for r in op.results):
            self._replicate(op)
            return
        plan = self._plan(op)
        if plan is None or not all(self.feasible(v, w) for v, w in zip(op.operands, plan[0])):
            self._replicate(op)
            return
        wants, result_layout = plan
        for index, (value, want) in enumerate(zip(list(op.operands), wants)):
            op.operands[index] = self.materialize(value, want, op)
        self._set_result(op, result_layout)

    def _set_result(self, op: Operation, layout: Layout) -> None:
        result = op.results[0]
        full = _shape(result)
        if layout is not None and layout != PARTIAL:
            result = Rewriter.replace_value_with_new_type(
                result, _with_dim(result.type, layout, full[layout] // self.tp)
            )
        self.full[result] = full
        self.layout[result] = layout

    def _replicate(self, op: Operation) -> None:
        if any(self.layout_of(v) is not None for v in op.operands):
            self.replicated_ops += 1
        for index, value in enumerate(list(op.operands)):
            if isinstance(value.type, TensorType):
                op.operands[index] = self.materialize(value, None, op)
        for result in op.results:
            self.layout[result] = None

    def _plan(self, op: Operation) -> tuple[list[Layout], Layout] | None:
        """(layout wanted of each operand, layout of the result), or None: replicate."""
        layouts = [None if self.layout_of(v) == PARTIAL else self.layout_of(v) for v in op.operands]
        if all(lay is None for lay in layouts) and not isinstance(op, MatmulOp):
            return [None] * len(layouts), None
        if isinstance(op, MapOp):
            return self._plan_map(op, layouts)
        if isinstance(op, MatmulOp):
            return self._plan_matmul(op, layouts)
        if isinstance(op, ReduceOp):
            return self._plan_reduce(op, layouts[0])
        if isinstance(op, ReshapeOp):
            return self._plan_reshape(op, layouts[0])
        if isinstance(op, TransposeOp):
            return [layouts[0]], list(op.perm.get_values()).index(layouts[0])
        if isinstance(op, BroadcastOp):
            d = layouts[0]
            e = d + len(_shape(op.result)) - len(self.full_shape(op.input))
            return ([d], e) if self.full_shape(op.input)[d] == _shape(op.result)[e] else None
        if isinstance(op, SliceOp):
            return self._plan_slice(op, layouts[0])
        if isinstance(op, ScanOp):
            d = layouts[0]
            return ([d], d) if d != op.dim.value.data else None
        if isinstance(op, ConcatOp):
            d = layouts[0]
            same = all(lay == d for lay in layouts)
            return ([d] * len(layouts), d) if same and d != op.dim.value.data else None
        return None

    def _plan_map(self, op: MapOp, layouts: list[Layout]) -> tuple[list[Layout], Layout] | None:
        rank = len(_shape(op.results[0]))
        dims = {lay + rank - len(self.full_shape(v)) for v, lay in zip(op.operands, layouts) if lay is not None}
        if len(dims) != 1:
            return None
        e = dims.pop()
        wants: list[Layout] = []
        for value in op.operands:
            a = e - (rank - len(self.full_shape(value)))
            wants.append(None if a < 0 or self.full_shape(value)[a] == 1 else a)
        return wants, e

    def _plan_matmul(self, op: MatmulOp, layouts: list[Layout]) -> tuple[list[Layout], Layout] | None:
        lhs, rhs = self.full_shape(op.lhs), self.full_shape(op.rhs)
        rank = len(_shape(op.result))
        k_lhs, m_lhs, k_rhs, n_rhs = len(lhs) - 1, len(lhs) - 2, op.rhs_k_dim, op.rhs_n_dim
        left, right = layouts
        if left == k_lhs or (left is None and right == k_rhs):
            return [k_lhs, k_rhs], PARTIAL
        if left == m_lhs and right is None:
            return [m_lhs, None], rank - 2
        if left is not None and left < m_lhs:  # a batch dim: heads
            e = left + rank - len(lhs)
            a = e - (rank - len(rhs))
            return [left, None if a < 0 or rhs[a] == 1 else a], e
        if left is None and right == n_rhs:
            return [None, n_rhs], rank - 1
        if left is None and right is not None and right < len(rhs) - 2:
            e = right + rank - len(rhs)
            a = e - (rank - len(lhs))
            return ([None if a < 0 or lhs[a] == 1 else a, right], e)
        if left is None and right is None:
            return self._column_split(op, rhs, n_rhs, rank)
        return None

    def _column_split(self, op: MatmulOp, rhs: tuple[int, ...], n_rhs: int, rank: int):
        """A linear layer on a replicated input: split its weight by output columns."""
        if not self._is_weight(op.rhs):
            return [None, None], None
        if rhs[n_rhs] % self.tp:
            if self.strict and _layer(op) is not None:
                name = self._weight_name(op.rhs)
                raise LocatedError(op, f"tp={self.tp} does not divide the {rhs[n_rhs]} output columns of "
                                       f"weight @{name} (heads or hidden size)")
            return [None, None], None
        return [None, n_rhs], rank - 1

    def _is_weight(self, value: SSAValue) -> bool:
        return isinstance(value, BlockArgument) and "rdu.global" in self._arg_attrs(value)

    def _weight_name(self, value: SSAValue) -> str:
        assert isinstance(value, BlockArgument)
        return self._arg_attrs(value)["rdu.global"].root_reference.data

    def _plan_reduce(self, op: ReduceOp, d: Layout) -> tuple[list[Layout], Layout] | None:
        dims = set(op.dims.get_values())
        if d in dims:
            return ([d], PARTIAL) if op.kind.data == ReduceKind.SUM else None
        keep = op.keepdim is not None
        return [d], d if keep else d - sum(1 for x in dims if x < d)

    def _plan_reshape(self, op: ReshapeOp, d: Layout) -> tuple[list[Layout], Layout] | None:
        source, result = self.full_shape(op.input), _shape(op.result)
        before = prod(source[:d])
        for e in range(len(result)):
            if prod(result[:e]) == before and result[e] % self.tp == 0:
                return [d], e
            if prod(result[:e]) > before:
                break
        if self.strict and _layer(op) is not None:
            raise LocatedError(
                op, f"tp={self.tp} does not divide the heads: the reshape {list(source)} -> "
                    f"{list(result)} cannot keep dim {d} split {self.tp} ways"
            )
        return None

    def _plan_slice(self, op: SliceOp, d: Layout) -> tuple[list[Layout], Layout] | None:
        offsets, strides = op.offsets.get_values(), op.strides.get_values()
        whole = offsets[d] == 0 and strides[d] == 1 and _shape(op.result)[d] == self.full_shape(op.input)[d]
        return ([d], d) if whole else None

    def _results(self, ret: func.ReturnOp) -> list[Layout]:
        layouts: list[Layout] = []
        for index, value in enumerate(list(ret.operands)):
            if self.layout_of(value) == PARTIAL:
                ret.operands[index] = self.materialize(value, None, ret)
            layouts.append(self.layout_of(ret.operands[index]))
        return layouts


def partition_tensors(module: ModuleOp, function: func.FuncOp, tp: int, strict: bool) -> int:
    """Rewrite `function` as the program of one of `tp` ranks; returns the replicated op count."""
    partitioner = _TensorPartitioner(module, function, tp, strict)
    results = partitioner.partition()
    block = function.body.block
    ret = block.last_op
    outputs = [v.type for v in ret.operands] if isinstance(ret, func.ReturnOp) else []
    function.function_type = FunctionType.from_lists([a.type for a in block.args], outputs)
    function.attributes[RESULT_SHARDS_ATTR] = DenseArrayBase.from_list(
        i64, [-1 if lay is None else lay for lay in results]
    )
    return partitioner.replicated_ops


def layer_keys(block: Block) -> list[str]:
    """The decoder layers (`rdu.layer`) of a block, in order of first appearance."""
    keys: list[str] = []
    for op in block.ops:
        key = _layer(op)
        if key is not None and key not in keys:
            keys.append(key)
    return keys


def assign_stages(function: func.FuncOp, pp: int) -> None:
    """Give every op its pipeline stage and send each value used in another stage."""
    block = function.body.block
    keys = layer_keys(block)
    if pp > len(keys):
        raise RduccError(
            f"rdu-partition: pp={pp} needs at least {pp} decoder layers (rdu.layer); "
            f"@{function.sym_name.data} has {len(keys)}"
        )
    stage_of_layer = {key: index * pp // len(keys) for index, key in enumerate(keys)}
    stage: dict[Operation, int] = {}
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            continue
        key = _layer(op)
        producers = [stage[v.owner] for v in op.operands if v.owner in stage]
        stage[op] = stage_of_layer[key] if key is not None else max(producers, default=0)
    sent: dict[tuple[SSAValue, int], SSAValue] = {}
    for op in list(block.ops):
        if op not in stage:
            continue
        op.attributes[STAGE_ATTR] = IntegerAttr(stage[op], i64)
        for index, value in enumerate(list(op.operands)):
            source = stage.get(value.owner)  # type: ignore[arg-type]
            if source is None or source == stage[op]:
                continue
            if (value, stage[op]) not in sent:
                send = SendRecvOp(value, source, stage[op])
                send.location = op.location
                send.attributes[STAGE_ATTR] = IntegerAttr(stage[op], i64)
                block.insert_op_before(send, op)
                sent[(value, stage[op])] = send.result
            op.operands[index] = sent[(value, stage[op])]


def partition_module(module: ModuleOp, tp: int, pp: int, strict: bool = True) -> int:
    """Partition every function of `module` (tp ranks, pp stages); the replicated op count."""
    replicated = 0
    for function in list(functions(module)):
        if tp > 1:
            replicated += partition_tensors(module, function, tp, strict)
        if pp > 1:
            assign_stages(function, pp)
    module.attributes[PARTITION_ATTR] = DictionaryAttr(
        {"tp": IntegerAttr(tp, i64), "pp": IntegerAttr(pp, i64)}
    )
    return replicated


def op_stage(op: Operation) -> int:
    """The pipeline stage an op (or a kernel or tier.compute, by its body) runs on; 0 when not pipelined."""
    for inner in op.walk():
        stage = inner.attributes.get(STAGE_ATTR)
        if isinstance(stage, IntegerAttr):
            return stage.value.data
    return 0


def global_stages(module: ModuleOp) -> dict[str, int]:
    """The pipeline stage whose sockets hold each global: that of its first reader."""
    stages: dict[str, int] = {}
    for function in functions(module):
        attrs = function.arg_attrs.data if function.arg_attrs else []
        by_arg = {arg: a.data["rdu.global"].root_reference.data for arg, a in zip(function.args, attrs)
                  if isinstance(a.data.get("rdu.global"), SymbolRefAttr)}
        for op in function.body.block.ops:
            for operand in op.operands:
                if operand in by_arg:
                    stages.setdefault(by_arg[operand], op_stage(op))
    return stages


def candidate_splits(sockets: int) -> list[tuple[int, int]]:
    """(tp, pp) pairs, powers of two, with tp * pp <= sockets."""
    powers = [1 << i for i in range(sockets.bit_length()) if 1 << i <= sockets]
    return [(tp, pp) for tp in powers for pp in powers if tp * pp <= sockets]


def stage_weight_bytes(module: ModuleOp) -> list[int]:
    """Bytes of weights one socket of each pipeline stage holds."""
    from rducc.dialects.shapes import byte_width

    stages = global_stages(module)
    totals = [0] * (max(stages.values(), default=0) + 1)
    for op in module.ops:
        if isinstance(op, GlobalOp):
            shape = op.global_type.get_shape()
            totals[stages.get(op.sym_name.data, 0)] += prod(shape) * byte_width(op.global_type.element_type)
    return totals


def choose_split(module: ModuleOp, target_spec: str = "") -> tuple[int, int]:
    """The (tp, pp) with the least modeled time (level-1 estimate) among those that partition.

    Pipeline stages do not shorten one token's way through the model, so
    splits with pp > 1 are modeled only when no pp = 1 split fits one
    socket's HBM (they hold fewer weights a socket)."""
    from rducc.runtime.cost_model import partition_estimate

    target = module_target(module, target_spec)
    best: tuple[float, int, int] | None = None
    fits = False
    for tp, pp in sorted(candidate_splits(target.sockets), key=lambda split: split[1]):
        if pp > 1 and fits:
            break
        trial = module.clone()
        try:
            partition_module(trial, tp, pp, strict=True)
        except RduccError:
            continue
        fits = fits or max(stage_weight_bytes(trial)) <= target.hbm_bytes
        seconds = partition_estimate(trial, target)
        if best is None or seconds < best[0]:
            best = (seconds, tp, pp)
    return (best[1], best[2]) if best is not None else (1, 1)


@dataclass(frozen=True)
class RduPartition(ModulePass):
    """Split the model across sockets: tensor parallelism (tp) and pipeline stages (pp)."""

    name = "rdu-partition"

    tp: int = 0
    """Sockets per tensor-parallel group; 0: chosen by the cost model (with pp)."""

    pp: int = 0
    """Pipeline stages; 0: chosen by the cost model (1 when tp is given)."""

    target: str = ""
    """Target name or file; default: the module's rdu.target, else sn40l."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_tensor_program(op, self.name)
        if PARTITION_ATTR in op.attributes:
            raise RduccError("rdu-partition: the module is partitioned already")
        if any(isinstance(inner, KernelOp) for inner in op.walk()):
            raise RduccError("rdu-partition works on the imported graph: run it before rdu-fuse")
        if self.tp < 0 or self.pp < 0:
            raise RduccError(f"rdu-partition: tp and pp must be >= 1, got tp={self.tp} pp={self.pp}")
        sockets = module_target(op, self.target).sockets
        if self.tp == 0 and self.pp == 0:
            tp, pp = choose_split(op, self.target)
        else:
            tp, pp = max(self.tp, 1), max(self.pp, 1)
        if tp * pp > sockets:
            raise RduccError(
                f"rdu-partition: tp={tp} x pp={pp} needs {tp * pp} sockets; target "
                f"{module_target(op, self.target).name} has {sockets}"
            )
        partition_module(op, tp, pp)


__all__ = [
    "RduPartition", "partition_module", "global_stages", "op_stage", "partition_of", "choose_split", "candidate_splits",
    "shard_spec", "PARTITION_ATTR", "SHARD_ATTR", "RESULT_SHARDS_ATTR", "STAGE_ATTR",
]
