"""Collectives of the `rdu` dialect: data moving between sockets.

A multi-socket program is SPMD over the `group` sockets of one tensor-parallel
group (every socket runs the same program on its shard); these ops are where
the sockets meet:

    rdu.all_reduce %x group 8 : T -> T          sum of every rank's %x, on every rank
    rdu.all_gather %x dim 2 group 8 : A -> B     ranks' %x joined along dim (B = 8 x A there)
    rdu.reduce_scatter %x dim 2 group 8 : A -> B sum of every rank's %x, rank r keeps part r
    rdu.all_gather %x dim 1 group 8 stride 2     the same over a factor of 16 ranks: ranks
                                                 r % 2 + 2k, k < 8 (a value split 8 ways,
                                                 replicated over the pairs 2k, 2k + 1)
    rdu.local_part %x dim 0 group 2 : A -> B     rank r's part r of a value every rank holds
                                                 whole (no exchange: B = A / 2 there)
    rdu.all_reduce %x group 2 groups <[0, 2], [1, 3]> : T -> T
                                                 the sum over explicit replica groups (of
                                                 4 ranks: dp=2 x tp=2, the data-parallel
                                                 pairs 2 apart); any collective but send_recv
                                                 takes `groups` in place of `stride`
    rdu.send_recv %x from 0 to 1 : T -> T        point to point: the value of pipeline
                                                 stage 0's sockets, on stage 1's sockets
    rdu.all_to_all %x split_dim 0 concat_dim 1 group 4 : A -> B
                                                 every rank sends part j of %x (along
                                                 split_dim) to rank j and joins the parts
                                                 it receives along concat_dim in rank
                                                 order (expert parallelism's exchange)

Without `groups` a collective spans every rank of the program (`group` of
them), or with `stride` the factor of them its docstring says. `#rdu.groups`
(`ReplicaGroupsAttr`, MLIR's and NCCL's replica groups: a list of rank lists)
names the sub-groups explicitly: every rank in exactly one group, the groups
of `group` ranks each, and (in a partitioned module) the ranks are the
module's SPMD ranks. A rank's part in a gather or scatter is its position in
its group. `rdu-partition` writes them for dp x tp: tp's collectives over
groups of consecutive ranks, dp's over ranks tp apart.

`rdu.send_recv` is a send and its matching receive as one SSA op: the
program is one dataflow graph whose ops carry the pipeline stage that runs
them (`rdu.stage`), so the send's value and the receive's result are the two
ends of one edge. Defined apart from `dataflow.py` (which lists them in the
dialect) to keep the multi-socket work in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, ArrayAttr, IntAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.op_facts import DimMap, OpFacts, Shape, identity, opaque
from rducc.dialects.shapes import STATIC_TENSOR, element_of, shape_of


def _verify_same_element(op: IRDLOperation) -> None:
    a, b = op.operands[0].type, op.results[0].type
    if element_of(a) != element_of(b):
        raise VerifyException(
            f"'{op.name}' input and result: element types differ ({element_of(a)} vs {element_of(b)})"
        )


def _verify_group(op: IRDLOperation, group: int) -> None:
    if group < 1:
        raise VerifyException(f"'{op.name}' group must be >= 1, got {group}")


Groups = tuple[tuple[int, ...], ...]
"""Replica groups: each a tuple of ranks, in the order their parts are joined."""


def strided_groups(size: int, stride: int, ranks: int) -> Groups:
    """The groups of `size` ranks `stride` apart over `ranks` ranks: rank r's group
    is the ranks whose `(rank // stride) % size` differs and the rest is r's."""
    if size < 1 or stride < 1 or ranks % (size * stride):
        raise ValueError(f"{size} ranks {stride} apart do not tile {ranks} ranks")
    return tuple(tuple(base + index * stride for index in range(size))
                 for base in range(ranks) if (base // stride) % size == 0)


def check_groups(groups: Groups) -> str:
    """Why `groups` are not replica groups ("" when they are): every rank of
    0..n-1 in exactly one group, every group of one size."""
    if not groups or not groups[0]:
        return "replica groups must name at least one rank"
    sizes = {len(group) for group in groups}
    if len(sizes) != 1:
        return f"replica groups must be of one size, got sizes {sorted(sizes)}"
    ranks = [rank for group in groups for rank in group]
    seen: set[int] = set()
    for rank in ranks:
        if rank < 0:
            return f"replica group ranks must be >= 0, got {rank}"
        if rank in seen:
            return f"rank {rank} is in more than one replica group"
        seen.add(rank)
    if missing := sorted(set(range(len(ranks))) - seen):
        return f"replica groups must cover ranks 0..{len(ranks) - 1}: rank {missing[0]} is in none"
    return ""


@irdl_attr_definition
class ReplicaGroupsAttr(ParametrizedAttribute):
    """`#rdu.groups<[0, 2], [1, 3]>` (in an op: `groups <[0, 2], [1, 3]>`): the sub-groups of ranks a collective spans,
    as MLIR's and NCCL's replica groups (each group's ranks in the order their
    parts are joined); `strided_groups` writes (size, stride) groups. The op that
    holds it checks it (`check_groups`), so that the error has its location."""

    name = "rdu.groups"

    groups: ArrayAttr[ArrayAttr[IntAttr]]

    @staticmethod
    def of(groups: Groups) -> ReplicaGroupsAttr:
        return ReplicaGroupsAttr(ArrayAttr(ArrayAttr(IntAttr(r) for r in group) for group in groups))

    @staticmethod
    def strided(size: int, stride: int, ranks: int) -> ReplicaGroupsAttr:
        return ReplicaGroupsAttr.of(strided_groups(size, stride, ranks))

    def value(self) -> Groups:
        return tuple(tuple(r.data for r in group.data) for group in self.groups.data)

    @property
    def ranks(self) -> int:
        """The ranks the groups cover."""
        return sum(len(group.data) for group in self.groups.data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in self.value()) + ">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        def group() -> ArrayAttr[IntAttr]:
            return ArrayAttr(IntAttr(r) for r in
                             parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer))

        with parser.in_angle_brackets():
            groups = parser.parse_comma_separated_list(parser.Delimiter.NONE, group)
        return [ArrayAttr(groups)]


def group_of(groups: Groups, rank: int) -> tuple[int, ...]:
    """The group holding `rank`."""
    return next(group for group in groups if rank in group)


def _program_ranks(op: Operation) -> int | None:
    """The SPMD ranks of the partitioned module holding `op` (None: not partitioned)."""
    from rducc.dialects.contracts import is_partitioned, spmd_ranks

    module = op.get_toplevel_object()
    return spmd_ranks(module) if isinstance(module, ModuleOp) and is_partitioned(module) else None


class _CollectiveOp(IRDLOperation, OpFacts):
    """One tensor in, one tensor out, over a group of sockets."""

    input = operand_def(STATIC_TENSOR)
    result = result_def(STATIC_TENSOR)
    group = prop_def(IntegerAttr[I64])
    replica_groups = opt_prop_def(ReplicaGroupsAttr)

    @property
    def group_size(self) -> int:
        return self.group.value.data

    @property
    def stride_size(self) -> int:
        """The distance between a group's ranks (`rdu.all_gather ... stride`); 1 without."""
        return 1

    def groups(self, ranks: int) -> Groups:
        """The replica groups over a program of `ranks` ranks: the explicit
        `groups`, else `group` ranks `stride` apart (every rank without a stride)."""
        if self.replica_groups is not None:
            return self.replica_groups.value()
        return strided_groups(self.group_size, self.stride_size, ranks)

    def set_groups(self, groups: Groups | None) -> None:
        """Name the replica groups explicitly (None: leave the default)."""
        if groups is not None:
            self.replica_groups = ReplicaGroupsAttr.of(groups)

    def _verify_replica_groups(self) -> None:
        """Explicit groups: of `group` ranks each, no `stride` beside them, over the
        module's SPMD ranks once it is partitioned."""
        if self.replica_groups is None:
            return
        if problem := check_groups(self.replica_groups.value()):  # here, not in the attribute: located
            raise VerifyException(f"'{self.name}' {problem}")
        size = len(self.replica_groups.value()[0])
        if size != self.group_size:
            raise VerifyException(f"'{self.name}' group {self.group_size} but its replica groups hold "
                                  f"{size} ranks each")
        if self.stride_size != 1:
            raise VerifyException(f"'{self.name}' takes either a stride or replica groups, not both")
        ranks = _program_ranks(self)
        if ranks is not None and ranks != self.replica_groups.ranks:
            raise VerifyException(f"'{self.name}' replica groups cover {self.replica_groups.ranks} ranks; "
                                  f"the program runs on {ranks}")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Whole tensors between sockets: every dim blocked (the collectives that
        keep some dims, `rdu.all_reduce` and those along one `dim`, say which)."""
        return opaque(ins, outs)

    def flops(self) -> int:
        """None on the chip: its link time is costed by the cost model's `collective_cost`."""
        return 0



@irdl_op_definition
class AllReduceOp(_CollectiveOp):
    """Sum of the input over the group's sockets, on every socket."""

    name = "rdu.all_reduce"
    assembly_format = ("$input `group` $group (`groups` $replica_groups^)? attr-dict `:` type($input) "
                       "`->` type($result)")

    def __init__(self, input: SSAValue, group: int, groups: Groups | None = None):
        super().__init__(
            operands=[input], result_types=[input.type], properties={"group": IntegerAttr(group, i64)}
        )
        self.set_groups(groups)

    def verify_(self) -> None:
        _verify_same_element(self)
        _verify_group(self, self.group_size)
        self._verify_replica_groups()
        if self.input.type != self.result.type:
            raise VerifyException("'rdu.all_reduce' result must have the input's type")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Element by element across sockets: every dim stays (a tile of rows is
        summed across the group as the whole tensor is, so a kernel holding the
        all-reduce tiles like its other ops)."""
        return DimMap((identity(len(ins[0])),))


class _DimCollectiveOp(_CollectiveOp):
    """Over `group` sockets joined along `dim`. With `stride` s (default 1) the
    group of socket r is the sockets whose `(rank // s) % group` differs and the
    rest of the rank is r's (a factor of the tp ranks: `stride 2 group 8` of 16
    joins ranks r % 2, r % 2 + 2, ..., r % 2 + 14)."""

    dim = prop_def(IntegerAttr[I64])
    stride = opt_prop_def(IntegerAttr[I64])
    assembly_format = (
        "$input `dim` $dim `group` $group (`stride` $stride^)? (`groups` $replica_groups^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, dim: int, group: int, result_type: Attribute, stride: int = 1,
                 groups: Groups | None = None):
        properties = {"dim": IntegerAttr(dim, i64), "group": IntegerAttr(group, i64)}
        if stride != 1:
            properties["stride"] = IntegerAttr(stride, i64)
        super().__init__(operands=[input], result_types=[result_type], properties=properties)
        self.set_groups(groups)

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """The joined (or split) `dim` is read whole; every other dim stays: the
        ranks' rows of a tile are joined along `dim` as the whole tensors' are,
        so a 4,096 x 128,256 gather of vocabulary-split logits tiles by rows."""
        dim = self.dim.value.data
        return DimMap((identity(len(ins[0]), blocked=(dim,)),), frozenset({dim}))

    @property
    def stride_size(self) -> int:
        return self.stride.value.data if self.stride is not None else 1

    def _verify_dim(self, small: tuple[int, ...], large: tuple[int, ...]) -> None:
        """`large` is `small` with dim `dim` multiplied by the group."""
        _verify_same_element(self)
        group, dim = self.group_size, self.dim.value.data
        _verify_group(self, group)
        self._verify_replica_groups()
        if self.stride_size < 1:
            raise VerifyException(f"'{self.name}' stride must be >= 1, got {self.stride_size}")
        if not 0 <= dim < len(small):
            raise VerifyException(f"'{self.name}' dim {dim} is out of range for rank {len(small)}")
        expected = list(small)
        expected[dim] *= group
        if len(large) != len(small) or list(large) != expected:
            raise VerifyException(
                f"'{self.name}' shapes {list(shape_of(self.input.type))} -> "
                f"{list(shape_of(self.result.type))} do not match dim {dim} split {group} ways"
            )


@irdl_op_definition
class AllGatherOp(_DimCollectiveOp):
    """Every socket's input joined along `dim` in rank order, on every socket."""

    name = "rdu.all_gather"

    def verify_(self) -> None:
        self._verify_dim(shape_of(self.input.type), shape_of(self.result.type))


@irdl_op_definition
class ReduceScatterOp(_DimCollectiveOp):
    """The group's sum of the input, split along `dim`: socket r keeps part r."""

    name = "rdu.reduce_scatter"

    def verify_(self) -> None:
        self._verify_dim(shape_of(self.result.type), shape_of(self.input.type))


@irdl_op_definition
class LocalPartOp(_DimCollectiveOp):
    """This rank's part along `dim` of a value that every rank of the group holds
    whole (a replicated value meeting a split one): part `(rank // stride) % group`,
    taken locally, nothing sent. The inverse of `rdu.all_gather`."""

    name = "rdu.local_part"

    def verify_(self) -> None:
        self._verify_dim(shape_of(self.result.type), shape_of(self.input.type))


@irdl_op_definition
class SendRecvOp(IRDLOperation, OpFacts):
    """Point to point: the value computed by pipeline stage `source` received by stage `dest`."""

    name = "rdu.send_recv"
    input = operand_def(STATIC_TENSOR)
    result = result_def(STATIC_TENSOR)
    source = prop_def(IntegerAttr[I64])
    dest = prop_def(IntegerAttr[I64])
    assembly_format = "$input `from` $source `to` $dest attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, source: int, dest: int):
        super().__init__(
            operands=[input],
            result_types=[input.type],
            properties={"source": IntegerAttr(source, i64), "dest": IntegerAttr(dest, i64)},
        )

    def verify_(self) -> None:
        _verify_same_element(self)
        source, dest = self.source.value.data, self.dest.value.data
        if source < 0 or dest < 0:
            raise VerifyException(f"'rdu.send_recv' stages must be >= 0, got {source} -> {dest}")
        if source == dest:
            raise VerifyException(f"'rdu.send_recv' sends stage {source} to itself")
        if self.input.type != self.result.type:
            raise VerifyException("'rdu.send_recv' result must have the input's type")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """The value crosses whole between stages: every dim blocked."""
        return opaque(ins, outs)

    def flops(self) -> int:
        """None: a transfer between sockets."""
        return 0



@irdl_op_definition
class AllToAllOp(_CollectiveOp):
    """Every socket of the group splits its input along `split_dim` into `group`
    parts and sends part j to rank j; rank r's result is the parts it received,
    part r of every rank's input, joined along `concat_dim` in rank order. The
    result has the input's shape with `split_dim` divided and `concat_dim`
    multiplied by the group (the same shape when the two dims are one). Each
    socket sends (group - 1) / group of its input: the dispatch and combine of
    expert parallelism (`rdu-partition{ep=N}`)."""

    name = "rdu.all_to_all"
    split_dim = prop_def(IntegerAttr[I64])
    concat_dim = prop_def(IntegerAttr[I64])
    assembly_format = (
        "$input `split_dim` $split_dim `concat_dim` $concat_dim `group` $group (`groups` $replica_groups^)? "
        "attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, split_dim: int, concat_dim: int, group: int, result_type: Attribute,
                 groups: Groups | None = None):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"split_dim": IntegerAttr(split_dim, i64), "concat_dim": IntegerAttr(concat_dim, i64),
                        "group": IntegerAttr(group, i64)},
        )
        self.set_groups(groups)

    @property
    def dims(self) -> tuple[int, int]:
        """(split_dim, concat_dim)."""
        return self.split_dim.value.data, self.concat_dim.value.data

    def verify_(self) -> None:
        _verify_same_element(self)
        group = self.group_size
        _verify_group(self, group)
        self._verify_replica_groups()
        shape = list(shape_of(self.input.type))
        split, concat = self.dims
        for label, dim in (("split_dim", split), ("concat_dim", concat)):
            if not 0 <= dim < len(shape):
                raise VerifyException(f"'rdu.all_to_all' {label} {dim} is out of range for rank {len(shape)}")
        if shape[split] % group:
            raise VerifyException(
                f"'rdu.all_to_all' split_dim {split} of size {shape[split]} does not split {group} ways"
            )
        expected = list(shape)
        expected[split] //= group
        expected[concat] *= group
        if list(shape_of(self.result.type)) != expected:
            raise VerifyException(
                f"'rdu.all_to_all' shapes {shape} -> {list(shape_of(self.result.type))}: expected {expected} "
                f"(split_dim {split} divided, concat_dim {concat} multiplied by {group})"
            )


COLLECTIVE_OPS = (AllReduceOp, AllGatherOp, ReduceScatterOp, LocalPartOp, SendRecvOp, AllToAllOp)
GROUPED_OPS = (AllReduceOp, AllGatherOp, ReduceScatterOp, LocalPartOp, AllToAllOp)
"""The collectives over replica groups (all but the point-to-point `rdu.send_recv`)."""

__all__ = ["AllReduceOp", "AllGatherOp", "AllToAllOp", "ReduceScatterOp", "LocalPartOp", "SendRecvOp",
           "COLLECTIVE_OPS", "GROUPED_OPS", "Groups", "ReplicaGroupsAttr", "check_groups", "group_of",
           "strided_groups"]
