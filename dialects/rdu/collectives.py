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
    rdu.send_recv %x from 0 to 1 : T -> T        point to point: the value of pipeline
                                                 stage 0's sockets, on stage 1's sockets
    rdu.all_to_all %x split_dim 0 concat_dim 1 group 4 : A -> B
                                                 every rank sends part j of %x (along
                                                 split_dim) to rank j and joins the parts
                                                 it receives along concat_dim in rank
                                                 order (expert parallelism's exchange)

`rdu.send_recv` is a send and its matching receive as one SSA op: the
program is one dataflow graph whose ops carry the pipeline stage that runs
them (`rdu.stage`), so the send's value and the receive's result are the two
ends of one edge. Defined apart from `dataflow.py` (which lists them in the
dialect) to keep the multi-socket work in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, IntegerAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def
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


class _CollectiveOp(IRDLOperation, OpFacts):
    """One tensor in, one tensor out, over a group of sockets."""

    input = operand_def(STATIC_TENSOR)
    result = result_def(STATIC_TENSOR)
    group = prop_def(IntegerAttr[I64])

    @property
    def group_size(self) -> int:
        return self.group.value.data

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
    assembly_format = "$input `group` $group attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, group: int):
        super().__init__(
            operands=[input], result_types=[input.type], properties={"group": IntegerAttr(group, i64)}
        )

    def verify_(self) -> None:
        _verify_same_element(self)
        _verify_group(self, self.group_size)
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
        "$input `dim` $dim `group` $group (`stride` $stride^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, dim: int, group: int, result_type: Attribute, stride: int = 1):
        properties = {"dim": IntegerAttr(dim, i64), "group": IntegerAttr(group, i64)}
        if stride != 1:
            properties["stride"] = IntegerAttr(stride, i64)
        super().__init__(operands=[input], result_types=[result_type], properties=properties)

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
        "$input `split_dim` $split_dim `concat_dim` $concat_dim `group` $group attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, split_dim: int, concat_dim: int, group: int, result_type: Attribute):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"split_dim": IntegerAttr(split_dim, i64), "concat_dim": IntegerAttr(concat_dim, i64),
                        "group": IntegerAttr(group, i64)},
        )

    @property
    def dims(self) -> tuple[int, int]:
        """(split_dim, concat_dim)."""
        return self.split_dim.value.data, self.concat_dim.value.data

    def verify_(self) -> None:
        _verify_same_element(self)
        group = self.group_size
        _verify_group(self, group)
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

__all__ = ["AllReduceOp", "AllGatherOp", "AllToAllOp", "ReduceScatterOp", "LocalPartOp", "SendRecvOp",
           "COLLECTIVE_OPS"]
