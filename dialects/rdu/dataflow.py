"""The `rdu` dataflow dialect: tensor-level ops that Core ATen decomposes to.

Elementwise work is one region-carrying op (`rdu.map`) whose body is
`arith`/`math` on scalars, so fusing elementwise chains is merging bodies.
`rdu.kernel` holds a fused group: values defined inside it stay on chip.
Constants are upstream `arith.constant` with a dense tensor attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil, log2
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    I64,
    AnyFloatConstr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, Operation, Region, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    irdl_to_attr_constraint,
    lazy_traits_def,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.pattern_rewriter import RewritePattern
from xdsl.printer import Printer
from xdsl.traits import HasCanonicalizationPatternsTrait, HasParent, IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from rducc.dialects.contracts import CONTRACT_ATTRS
from rducc.dialects.op_facts import (
    Dest,
    Dim,
    DimMap,
    NoCompute,
    OpFacts,
    Shape,
    aligned,
    elements,
    identity,
    opaque,
    reshape_dims,
)
from rducc.dialects.rdu.aten import AtenOpAttr
from rducc.dialects.rdu.checks import CheckOp
from rducc.dialects.rdu.collectives import COLLECTIVE_OPS, ReplicaGroupsAttr
from rducc.dialects.rdu.conv_grad import ConvGradOp
from rducc.dialects.rdu.custom_op import CustomOpAttr
from rducc.dialects.rdu.host_call import HostCallOp
from rducc.dialects.rdu.layer_norm import LayerNormGradOp, LayerNormOp
from rducc.dialects.rdu.pointwise import PointwiseCallOp
from rducc.dialects.shapes import (
    STATIC_TENSOR,
    broadcast_shapes,
    broadcasts_to,
    element_of,
    is_bool,
    is_float,
    is_integer,
    num_elements,
    shape_of,
    window_output_size,
)


def _compute_op() -> type[IRDLOperation]:
    """`tier.compute`, whose body also ends in `rdu.yield` (imported late: no cycle)."""
    from rducc.dialects.tier import ComputeOp

    return ComputeOp


class ReduceKind(StrEnum):
    """What an `rdu.reduce` combines its elements with."""

    SUM = "sum"
    PROD = "prod"
    MAX = "max"
    MIN = "min"
    ANY = "any"
    ALL = "all"
    ARGMAX = "argmax"
    ARGMIN = "argmin"


class ScanKind(StrEnum):
    """What an `rdu.scan` accumulates with."""

    SUM = "sum"
    PROD = "prod"


class PoolKind(StrEnum):
    """Window reduction of an `rdu.pool`."""

    MAX = "max"
    AVG = "avg"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "rdu.reduce_kind"


@irdl_attr_definition
class ScanKindAttr(EnumAttribute[ScanKind], SpacedOpaqueSyntaxAttribute):
    name = "rdu.scan_kind"


@irdl_attr_definition
class PoolKindAttr(EnumAttribute[PoolKind], SpacedOpaqueSyntaxAttribute):
    name = "rdu.pool_kind"


def _number_attr(value: int | float) -> Attribute:
    """An i64 or f64 attribute holding a Python number."""
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    return FloatAttr(value, 64)


def _ints(attr: DenseArrayBase[IntegerType]) -> tuple[int, ...]:
    return tuple(attr.get_values())


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


_CANONICALIZATIONS: dict[type[Operation], tuple[RewritePattern, ...]] = {}
"""Each op's canonicalization patterns, registered by
`rducc.dialects.rdu.canonicalization` (which the `rdu` package imports)."""


def register_canonicalization(op_type: type[Operation], patterns: tuple[RewritePattern, ...]) -> None:
    """Attach `patterns` to `op_type` (which carries `RduCanonicalization`)."""
    _CANONICALIZATIONS[op_type] = patterns


class RduCanonicalization(HasCanonicalizationPatternsTrait):
    """The op's patterns in `rducc.dialects.rdu.canonicalization`, which the
    stock `canonicalize` and `rdu-canonicalize` apply."""

    def get_patterns(self, op: type[Operation]) -> tuple[RewritePattern, ...]:
        return _CANONICALIZATIONS.get(op, ())

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return tuple(dict.fromkeys(p for patterns in _CANONICALIZATIONS.values() for p in patterns))


def _same_element(op: IRDLOperation, a: Attribute, b: Attribute, what: str) -> None:
    if element_of(a) != element_of(b):
        raise VerifyException(
            f"'{op.name}' {what}: element types differ ({element_of(a)} vs "
            f"{element_of(b)})"
        )


# --------------------------------------------------------------------------
# Elementwise and kernels
# --------------------------------------------------------------------------


@irdl_op_definition
class YieldOp(IRDLOperation, NoCompute):
    """Terminator of `rdu.map` and `rdu.kernel` bodies."""

    name = "rdu.yield"
    values = var_operand_def()
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(MapOp, KernelOp, _compute_op()), Pure()))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[list(values)])


@irdl_op_definition
class MapOp(IRDLOperation, OpFacts):
    """Elementwise op: the scalar body runs once per element of the result.

    Inputs broadcast to the result shape by NumPy rules; the body's block
    arguments are one scalar per input, of that input's element type.
    """

    name = "rdu.map"
    inputs = var_operand_def(STATIC_TENSOR)
    result = result_def(STATIC_TENSOR)
    body = region_def("single_block")
    traits = traits_def(Pure(), IsolatedFromAbove(), RduCanonicalization())
    assembly_format = (
        "$inputs attr-dict `:` functional-type($inputs, $result) $body"
    )

    def __init__(self, inputs: Sequence[SSAValue], result_type: Attribute, body: Region):
        super().__init__(operands=[inputs], result_types=[result_type], regions=[body])

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"'rdu.map' body takes {len(block.args)} arguments but the op "
                f"has {len(self.inputs)} inputs"
            )
        out_shape = shape_of(self.result.type)
        for i, (arg, value) in enumerate(zip(block.args, self.inputs)):
            if arg.type != element_of(value.type):
                raise VerifyException(
                    f"'rdu.map' body argument #{i} is {arg.type} but input #{i} "
                    f"has element type {element_of(value.type)}"
                )
            if not broadcasts_to(shape_of(value.type), out_shape):
                raise VerifyException(
                    f"'rdu.map' input #{i} of shape {list(shape_of(value.type))} "
                    f"does not broadcast to the result shape {list(out_shape)}"
                )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp) or len(terminator.values) != 1:
            raise VerifyException("'rdu.map' body must end in 'rdu.yield' of one value")
        if terminator.values[0].type != element_of(self.result.type):
            raise VerifyException(
                f"'rdu.map' yields {terminator.values[0].type} but the result "
                f"element type is {element_of(self.result.type)}"
            )

    SHARDS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Each input's dims broadcast to the result's (NumPy rules)."""
        return DimMap(tuple(aligned(shape, outs[0]) for shape in ins))

    def body_ops(self) -> int:
        """The `arith`/`math` ops (and `rdu.remf`) of the body, `arith.constant` not counted;
        an `rdu.pointwise_call` counts `PointwiseCallOp.ALU_OPS` (an assumed approximation's ops)."""
        return sum(
            PointwiseCallOp.ALU_OPS if isinstance(inner, PointwiseCallOp) else 1
            for inner in self.body.walk()
            if (inner.name.split(".")[0] in ("arith", "math") or isinstance(inner, RemFOp | PointwiseCallOp))
            and not isinstance(inner, arith.ConstantOp)
        )

    def flops(self) -> int:
        """One per body op per result element."""
        return elements(self.result) * self.body_ops()



@irdl_op_definition
class RemFOp(IRDLOperation, NoCompute):
    """Scalar float remainder with the dividend's sign (C `fmod`), for map bodies.

    Upstream `arith.remf` has no xDSL counterpart; this is it, with the same
    semantics: `lhs - trunc(lhs / rhs) * rhs` computed exactly.
    """

    name = "rdu.remf"
    T: ClassVar = VarConstraint("T", AnyFloatConstr)
    lhs = operand_def(T)
    rhs = operand_def(T)
    result = result_def(T)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])


@irdl_op_definition
class KernelOp(IRDLOperation, NoCompute):
    """A fused group of ops mapped onto the chip at once.

    Only its inputs and results touch off-chip memory; every value defined
    in its body streams between PCUs and PMUs.
    """

    name = "rdu.kernel"
    sym_name = prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), Pure())
    assembly_format = (
        "$sym_name `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body"
    )

    def __init__(
        self,
        name: str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={"sym_name": StringAttr(name)},
            regions=[body],
        )

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [a.type for a in block.args]
        input_types = [v.type for v in self.inputs]
        if arg_types != input_types:
            raise VerifyException(
                "'rdu.kernel' body argument types must match its input types"
            )
        terminator = block.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("'rdu.kernel' body must end in 'rdu.yield'")
        yielded = [v.type for v in terminator.values]
        if yielded != [r.type for r in self.outputs]:
            raise VerifyException(
                "'rdu.kernel' yielded types must match its result types"
            )


# --------------------------------------------------------------------------
# Compute
# --------------------------------------------------------------------------


@irdl_op_definition
class MatmulOp(IRDLOperation, OpFacts):
    """Batched matrix product `[..., M, K] x [..., K, N] -> [..., M, N]`.

    Batch dimensions broadcast; a rank-2 operand is shared by every batch.
    With `transpose_rhs` the rhs is given as `[..., N, K]` (a linear layer's
    weight as stored): the PMUs' transpose crossbar reads it transposed.
    The result may be wider than the operands (bf16 in, f32 accumulated out).
    """

    name = "rdu.matmul"
    lhs = operand_def(STATIC_TENSOR)
    rhs = operand_def(STATIC_TENSOR)
    transpose_rhs = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure(), RduCanonicalization())
    assembly_format = (
        "$lhs `,` $rhs (`transpose_rhs` $transpose_rhs^)? attr-dict "
        "`:` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, result_type: Attribute, transpose_rhs: bool = False
    ):
        props = {"transpose_rhs": UnitAttr()} if transpose_rhs else {}
        super().__init__(operands=[lhs, rhs], result_types=[result_type], properties=props)

    @property
    def rhs_k_dim(self) -> int:
        """Index of the contraction dim in the rhs."""
        rank = len(shape_of(self.rhs.type))
        return rank - 1 if self.transpose_rhs is not None else rank - 2

    @property
    def rhs_n_dim(self) -> int:
        """Index of the output-column dim in the rhs."""
        rank = len(shape_of(self.rhs.type))
        return rank - 2 if self.transpose_rhs is not None else rank - 1

    def verify_(self) -> None:
        a, b, c = shape_of(self.lhs.type), shape_of(self.rhs.type), shape_of(self.result.type)
        if len(a) < 2 or len(b) < 2:
            raise VerifyException("'rdu.matmul' operands must have rank >= 2")
        if a[-1] != b[self.rhs_k_dim]:
            raise VerifyException(
                f"'rdu.matmul' contraction sizes differ: lhs has K={a[-1]}, "
                f"rhs has K={b[self.rhs_k_dim]}"
            )
        batch = broadcast_shapes([a[:-2], b[:-2]])
        if batch is None:
            raise VerifyException("'rdu.matmul' batch dimensions do not broadcast")
        expected = (*batch, a[-2], b[self.rhs_n_dim])
        if c != expected:
            raise VerifyException(
                f"'rdu.matmul' result shape {list(c)} should be {list(expected)}"
            )
        _same_element(self, self.lhs.type, self.rhs.type, "operands")

    SHARDS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Batch dims broadcast; M and N become the result's last two; K is summed."""
        lhs, rhs, out = ins[0], ins[1], outs[0]
        k_rhs = self.rhs_k_dim
        lhs_dims = (*aligned(lhs[:-2], out[:-2]), len(out) - 2, Dim.REDUCED)
        rhs_dims: list[Dest] = [*aligned(rhs[:-2], out[:-2]), len(out) - 1, len(out) - 1]
        rhs_dims[k_rhs] = Dim.REDUCED
        return DimMap((lhs_dims, tuple(rhs_dims)), sums=True)

    def flops(self) -> int:
        """2 x M x N x K x batch."""
        out = shape_of(self.result.type)
        return 2 * num_elements(out) * shape_of(self.lhs.type)[-1]


@irdl_op_definition
class GroupedMatmulOp(IRDLOperation, OpFacts):
    """A mixture of experts' grouped product: `lhs` `[S, K]` rows sorted by expert,
    `rhs` `[E, K, N]` one matrix per expert (`[E, N, K]` with `transpose_rhs`),
    `offsets` `[E]` the cumulative row counts. Expert e multiplies the rows
    `start:offsets[e]` (Python slice rules), `start` the last offset that differed
    from the one before it (0 at first); rows no expert takes are zero. Each row is
    multiplied by its own expert only (transformers' grouped_mm_fallback loop), so
    the work is S x K x N, not E times that.
    """

    name = "rdu.grouped_matmul"
    SHARDS: ClassVar[bool] = True
    lhs = operand_def(STATIC_TENSOR)
    rhs = operand_def(STATIC_TENSOR)
    offsets = operand_def(STATIC_TENSOR)
    transpose_rhs = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure(), RduCanonicalization())
    assembly_format = (
        "$lhs `,` $rhs `offsets` $offsets (`transpose_rhs` $transpose_rhs^)? attr-dict "
        "`:` type($lhs) `,` type($rhs) `,` type($offsets) `->` type($result)"
    )

    def __init__(self, lhs: SSAValue, rhs: SSAValue, offsets: SSAValue, result_type: Attribute,
                 transpose_rhs: bool = False):
        props = {"transpose_rhs": UnitAttr()} if transpose_rhs else {}
        super().__init__(operands=[lhs, rhs, offsets], result_types=[result_type], properties=props)

    @property
    def rhs_n_dim(self) -> int:
        """Index of the output-column dim (N) in the rhs."""
        return 1 if self.transpose_rhs is not None else 2

    def verify_(self) -> None:
        a, b, offsets = shape_of(self.lhs.type), shape_of(self.rhs.type), shape_of(self.offsets.type)
        if len(a) != 2 or len(b) != 3 or len(offsets) != 1:
            raise VerifyException("'rdu.grouped_matmul' takes a rank-2 lhs, a rank-3 rhs and rank-1 offsets")
        k, n = (b[2], b[1]) if self.transpose_rhs is not None else (b[1], b[2])
        if a[1] != k:
            raise VerifyException(f"'rdu.grouped_matmul' contraction sizes differ: lhs has K={a[1]}, rhs has K={k}")
        if offsets[0] != b[0]:
            raise VerifyException(
                f"'rdu.grouped_matmul' has {offsets[0]} offsets for {b[0]} experts: one per expert")
        element = element_of(self.offsets.type)
        if not is_integer(element) or is_bool(element):
            raise VerifyException("'rdu.grouped_matmul' offsets must have an integer element type")
        if shape_of(self.result.type) != (a[0], n):
            raise VerifyException(f"'rdu.grouped_matmul' result shape {list(shape_of(self.result.type))}"
                                  f" should be {[a[0], n]}")
        _same_element(self, self.lhs.type, self.rhs.type, "operands")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """K is summed and N stays; the rows are read whole (a row's expert is
        decided by its position among all rows), as are the experts and offsets."""
        n_dim = self.rhs_n_dim
        k_dim = 3 - n_dim
        rhs: list[Dest] = [Dim.BLOCKED, Dim.BLOCKED, Dim.BLOCKED]
        rhs[n_dim], rhs[k_dim] = 1, Dim.REDUCED
        return DimMap(((Dim.BLOCKED, Dim.REDUCED), tuple(rhs), (Dim.BLOCKED,)), frozenset({0}), sums=True)

    def flops(self) -> int:
        """2 x S x N x K: every row by its own expert."""
        return 2 * num_elements(shape_of(self.result.type)) * shape_of(self.lhs.type)[-1]



def _reduced_shape(shape: Sequence[int], dims: Sequence[int], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _verify_dims(op_name: str, dims: Sequence[int], rank: int) -> None:
    if len(set(dims)) != len(dims) or any(not 0 <= d < max(rank, 1) for d in dims):
        raise VerifyException(
            f"'{op_name}' dims {list(dims)} must be distinct and in [0, {rank})"
        )


@irdl_op_definition
class ReduceOp(IRDLOperation, OpFacts):
    """Reduction over `dims` (sorted, non-negative); `keepdim` keeps them as 1.

    `argmax`/`argmin` reduce exactly one dim and give i64 indices.
    """

    name = "rdu.reduce"
    kind = prop_def(ReduceKindAttr)
    input = operand_def(STATIC_TENSOR)
    dims = prop_def(DenseArrayBase.constr(I64))
    keepdim = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$kind $input `dims` $dims (`keepdim` $keepdim^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        kind: ReduceKind,
        input: SSAValue,
        dims: Sequence[int],
        keepdim: bool,
        result_type: Attribute,
    ):
        props: dict[str, Attribute] = {
            "kind": ReduceKindAttr(kind),
            "dims": _i64_array(dims),
        }
        if keepdim:
            props["keepdim"] = UnitAttr()
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        shape = shape_of(self.input.type)
        dims = _ints(self.dims)
        _verify_dims(self.name, dims, len(shape))
        expected = _reduced_shape(shape, dims, self.keepdim is not None)
        if shape_of(self.result.type) != expected:
            raise VerifyException(
                f"'rdu.reduce' result shape {list(shape_of(self.result.type))} "
                f"should be {list(expected)}"
            )
        kind = self.kind.data
        out = element_of(self.result.type)
        if kind in (ReduceKind.ARGMAX, ReduceKind.ARGMIN):
            if len(dims) != 1 or out != i64:
                raise VerifyException(f"'rdu.reduce {kind}' reduces one dim to i64")
        elif kind in (ReduceKind.ANY, ReduceKind.ALL):
            if not is_bool(out):
                raise VerifyException(f"'rdu.reduce {kind}' gives i1")
        else:
            _same_element(self, self.input.type, self.result.type, "input and result")

    SHARDS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Reduced dims go (or stay as blocked size-1 dims with keepdim); the rest move up."""
        dims, keep = set(_ints(self.dims)), self.keepdim is not None
        kept = [d for d in range(len(ins[0])) if d not in dims]
        dests: list[Dest] = [Dim.REDUCED] * len(ins[0])
        for j, d in enumerate(kept):
            dests[d] = d if keep else j
        return DimMap((tuple(dests),), frozenset(dims) if keep else frozenset(),
                      sums=self.kind.data == ReduceKind.SUM)

    def flops(self) -> int:
        """One per input element."""
        return elements(self.input)



@irdl_op_definition
class ScanOp(IRDLOperation, OpFacts):
    """Inclusive prefix scan along one dim (cumsum, cumprod)."""

    name = "rdu.scan"
    kind = prop_def(ScanKindAttr)
    input = operand_def(STATIC_TENSOR)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$kind $input `dim` $dim attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, kind: ScanKind, input: SSAValue, dim: int, result_type: Attribute):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"kind": ScanKindAttr(kind), "dim": IntegerAttr(dim, i64)},
        )

    def verify_(self) -> None:
        shape = shape_of(self.input.type)
        _verify_dims(self.name, [self.dim.value.data], len(shape))
        if shape_of(self.result.type) != shape:
            raise VerifyException("'rdu.scan' result must have the input's shape")

    SHARDS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Every dim stays, the scanned one read whole."""
        dim = self.dim.value.data
        return DimMap((identity(len(ins[0]), [dim]),), frozenset({dim}))

    def flops(self) -> int:
        """One per input element."""
        return elements(self.input)



def _verify_window_attrs(op: IRDLOperation, spatial: int, **arrays: DenseArrayBase[IntegerType]) -> None:
    for label, attr in arrays.items():
        values = _ints(attr)
        if len(values) != spatial:
            raise VerifyException(
                f"'{op.name}' {label} has {len(values)} entries, expected {spatial}"
            )
        minimum = 0 if label in ("padding", "output_padding") else 1
        if any(v < minimum for v in values):
            raise VerifyException(f"'{op.name}' {label} entries must be >= {minimum}")


@irdl_op_definition
class ConvOp(IRDLOperation, OpFacts):
    """N-d convolution, NC[spatial] input, O(C/groups)[kernel] weight, plus an
    optional `[O]` bias of the operands' element type added to every output
    of its channel (ATen's `convolution(x, w, b)`: the bias goes into the sums
    before the one rounding to the result type, as eager's kernel adds it).

    With `transposed` it is ATen's transposed convolution (`conv_transpose`):
    weight C(O/groups)[kernel], output size (n - 1) x stride - 2 x padding +
    dilation x (kernel - 1) + output_padding + 1; the channel roles of its
    weight's dims swap (`weight_channel_dims`), so tp splits a dense one's
    channels as a direct one's; a grouped one's dim map reads them whole, and
    the partitioner splits them by whole groups alone (`_plan_grouped_conv`).

    The result may be wider than the operands (bf16 in, f32 accumulated out).
    """

    name = "rdu.conv"
    SHARDS: ClassVar[bool] = True
    input = operand_def(STATIC_TENSOR)
    weight = operand_def(STATIC_TENSOR)
    bias = opt_operand_def(STATIC_TENSOR)
    stride = prop_def(DenseArrayBase.constr(I64))
    padding = prop_def(DenseArrayBase.constr(I64))
    dilation = prop_def(DenseArrayBase.constr(I64))
    output_padding = opt_prop_def(DenseArrayBase.constr(I64))
    groups = prop_def(IntegerAttr[I64])
    transposed = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $weight (`bias` $bias^ `:` type($bias))? `stride` $stride `padding` $padding "
        "`dilation` $dilation (`output_padding` $output_padding^)? `groups` $groups (`transposed` $transposed^)? "
        "attr-dict `:` type($input) `,` type($weight) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        weight: SSAValue,
        stride: Sequence[int],
        padding: Sequence[int],
        dilation: Sequence[int],
        groups: int,
        result_type: Attribute,
        bias: SSAValue | None = None,
        output_padding: Sequence[int] | None = None,
    ):
        """A transposed convolution when `output_padding` is given."""
        properties: dict[str, Attribute] = {
            "stride": _i64_array(stride),
            "padding": _i64_array(padding),
            "dilation": _i64_array(dilation),
            "groups": IntegerAttr(groups, i64),
        }
        if output_padding is not None:
            properties |= {"output_padding": _i64_array(output_padding), "transposed": UnitAttr()}
        super().__init__(
            operands=[input, weight, [] if bias is None else [bias]],
            result_types=[result_type],
            properties=properties,
        )

    def geometry(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], int]:
        """(stride, padding, dilation, output_padding (zeros for a direct one), groups)."""
        stride, padding, dilation = _ints(self.stride), _ints(self.padding), _ints(self.dilation)
        extra = _ints(self.output_padding) if self.output_padding is not None else [0] * len(stride)
        return tuple(stride), tuple(padding), tuple(dilation), tuple(extra), self.groups.value.data

    def verify_(self) -> None:
        x, w, y = shape_of(self.input.type), shape_of(self.weight.type), shape_of(self.result.type)
        spatial = len(x) - 2
        if spatial < 1 or len(w) != len(x) or len(y) != len(x):
            raise VerifyException("'rdu.conv' input, weight and result need equal rank >= 3")
        _verify_window_attrs(
            self, spatial, stride=self.stride, padding=self.padding, dilation=self.dilation
        )
        if (self.transposed is None) != (self.output_padding is None):
            raise VerifyException("'rdu.conv' output_padding goes with transposed, and transposed needs it")
        groups = self.groups.value.data
        channels_in, per_group, channels_out = (w[0], w[0] // max(groups, 1), w[1] * groups) \
            if self.transposed else (w[1] * groups, w[1], w[0])
        if groups < 1 or x[1] % groups or channels_in % groups or channels_in != x[1] \
                or (self.transposed is None and w[0] % groups):
            raise VerifyException(
                f"'rdu.conv' channels do not match: input has {x[1]}, weight "
                f"expects {per_group} x {groups} groups"
            )
        expected = [x[0], channels_out] + self._output_sizes(x[2:], w[2:])
        if list(y) != expected:
            raise VerifyException(f"'rdu.conv' result shape {list(y)} should be {expected}")
        _same_element(self, self.input.type, self.weight.type, "input and weight")
        if self.bias is not None:
            self._verify_bias(channels_out)

    def _output_sizes(self, sizes: Sequence[int], kernel: Sequence[int]) -> list[int]:
        """The result's spatial sizes (a transposed one's: torch's formula;
        its output_padding must be below its stride or its dilation)."""
        stride, padding, dilation, extra, _ = self.geometry()
        if self.transposed is None:
            return [window_output_size(n, k, s, p, d, False)
                    for n, k, s, p, d in zip(sizes, kernel, stride, padding, dilation)]
        _verify_window_attrs(self, len(sizes), output_padding=self.output_padding)  # type: ignore[arg-type]
        if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
            raise VerifyException("'rdu.conv' output_padding must be smaller than stride or dilation")
        return [(n - 1) * s - 2 * p + d * (k - 1) + e + 1
                for n, k, s, p, d, e in zip(sizes, kernel, stride, padding, dilation, extra)]

    def _verify_bias(self, channels: int) -> None:
        """The bias is `[output channels]` of the operands' element type."""
        assert self.bias is not None
        if list(shape_of(self.bias.type)) != [channels]:
            raise VerifyException(
                f"'rdu.conv' bias shape {list(shape_of(self.bias.type))} should be [{channels}] "
                "(the output channels)"
            )
        _same_element(self, self.input.type, self.bias.type, "input and bias")

    def weight_channel_dims(self) -> tuple[int, int]:
        """(the weight's output-channel dim, its input-channel dim): (0, 1), a transposed one's (1, 0)."""
        return (1, 0) if self.transposed is not None else (0, 1)

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Batch to batch, out-channels (weight dim 0, a transposed one's dim 1, the
        bias's one dim) to dim 1; input channels and the kernel window are summed,
        spatial dims are windows (blocked); grouped channels are blocked. A grouped
        transposed one: its batch alone moves, every other dim read whole."""
        if self.transposed is not None and self.groups.value.data != 1:
            return DimMap(((0, *[Dim.BLOCKED] * (len(ins[0]) - 1)),
                           *((Dim.BLOCKED,) * len(shape) for shape in ins[1:])),
                          frozenset(range(1, len(outs[0]))))
        image: list[Dest] = [0, Dim.REDUCED, *[Dim.BLOCKED] * (len(ins[0]) - 2)]
        weight: list[Dest] = [Dim.REDUCED] * len(ins[1])
        weight[self.weight_channel_dims()[0]] = 1
        blocked = set(range(2, len(outs[0]))) | ({1} if self.groups.value.data != 1 else set())
        bias: tuple[tuple[Dest, ...], ...] = ((1,),) if len(ins) > 2 else ()
        return DimMap((tuple(image), tuple(weight), *bias), frozenset(blocked), sums=True)

    def flops(self) -> int:
        """2 x out_elems x (Cin / groups) x prod(kernel dims) (a transposed
        one's: 2 x in_elems x (Cout / groups) x prod(kernel dims)), plus one an
        output for the bias."""
        weight = shape_of(self.weight.type)
        biased = elements(self.result) if self.bias is not None else 0
        source = self.input if self.transposed is not None else self.result
        return 2 * elements(source) * weight[1] * num_elements(weight[2:]) + biased



@irdl_op_definition
class PoolOp(IRDLOperation, OpFacts):
    """Max or average pooling over the trailing spatial dims of NC[spatial]."""

    name = "rdu.pool"
    kind = prop_def(PoolKindAttr)
    input = operand_def(STATIC_TENSOR)
    window = prop_def(DenseArrayBase.constr(I64))
    stride = prop_def(DenseArrayBase.constr(I64))
    padding = prop_def(DenseArrayBase.constr(I64))
    dilation = prop_def(DenseArrayBase.constr(I64))
    ceil_mode = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$kind $input `window` $window `stride` $stride `padding` $padding "
        "`dilation` $dilation (`ceil_mode` $ceil_mode^)? attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        kind: PoolKind,
        input: SSAValue,
        window: Sequence[int],
        stride: Sequence[int],
        padding: Sequence[int],
        dilation: Sequence[int],
        ceil_mode: bool,
        result_type: Attribute,
    ):
        props: dict[str, Attribute] = {
            "kind": PoolKindAttr(kind),
            "window": _i64_array(window),
            "stride": _i64_array(stride),
            "padding": _i64_array(padding),
            "dilation": _i64_array(dilation),
        }
        if ceil_mode:
            props["ceil_mode"] = UnitAttr()
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        x, y = shape_of(self.input.type), shape_of(self.result.type)
        spatial = len(_ints(self.window))
        if spatial < 1 or len(x) < spatial + 1 or len(y) != len(x):
            raise VerifyException(
                "'rdu.pool' input and result need equal rank, above the window's"
            )
        _verify_window_attrs(
            self,
            spatial,
            window=self.window,
            stride=self.stride,
            padding=self.padding,
            dilation=self.dilation,
        )
        lead = len(x) - spatial
        expected = list(x[:lead]) + [
            window_output_size(x[lead + i], k, s, p, d, self.ceil_mode is not None)
            for i, (k, s, p, d) in enumerate(
                zip(
                    _ints(self.window),
                    _ints(self.stride),
                    _ints(self.padding),
                    _ints(self.dilation),
                )
            )
        ]
        if list(y) != expected:
            raise VerifyException(f"'rdu.pool' result shape {list(y)} should be {expected}")
        _same_element(self, self.input.type, self.result.type, "input and result")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Leading dims stay; the pooled spatial dims are windows (blocked)."""
        lead = len(outs[0]) - len(_ints(self.window))
        return DimMap((identity(len(ins[0]), range(lead, len(ins[0]))),),
                      frozenset(range(lead, len(outs[0]))))

    def flops(self) -> int:
        """out_elems x prod(window)."""
        return elements(self.result) * num_elements(_ints(self.window))



# --------------------------------------------------------------------------
# Layout and data movement
# --------------------------------------------------------------------------


class _UnaryLayoutOp(IRDLOperation):
    """Shared shape of the one-input, one-result layout ops."""

    input = operand_def(STATIC_TENSOR)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure(), RduCanonicalization())

    def _verify_same_element(self) -> tuple[Shape, Shape]:
        """Check the tensors and their element type; the input's and the result's shapes."""
        _same_element(self, self.input.type, self.result.type, "input and result")
        return shape_of(self.input.type), shape_of(self.result.type)


@irdl_op_definition
class ReshapeOp(_UnaryLayoutOp, OpFacts):
    """Same elements, new shape (row-major order is kept)."""

    name = "rdu.reshape"
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        a, b = self._verify_same_element()
        if num_elements(a) != num_elements(b):
            raise VerifyException(
                f"'rdu.reshape' cannot reshape {num_elements(a)} elements into "
                f"{list(b)} ({num_elements(b)} elements)"
            )

    SHARDS: ClassVar[bool] = True
    PCU_STAGES: ClassVar[int] = 0
    READS_BY_ADDRESS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Dims kept whole pair up (`shapes.reshape_groups`); merged or split ones are blocked."""
        return reshape_dims(ins[0], outs[0])

    def flops(self) -> int:
        """None: a change of addressing."""
        return 0



@irdl_op_definition
class TransposeOp(_UnaryLayoutOp, OpFacts):
    """Permutes dims: result dim i is input dim `perm[i]`."""

    name = "rdu.transpose"
    perm = prop_def(DenseArrayBase.constr(I64))
    assembly_format = "$input `perm` $perm attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, perm: Sequence[int], result_type: Attribute):
        super().__init__(
            operands=[input], result_types=[result_type], properties={"perm": _i64_array(perm)}
        )

    def verify_(self) -> None:
        self._verify_same_element()
        shape, perm = shape_of(self.input.type), _ints(self.perm)
        if sorted(perm) != list(range(len(shape))):
            raise VerifyException(
                f"'rdu.transpose' perm {list(perm)} is not a permutation of rank {len(shape)}"
            )
        expected = [shape[p] for p in perm]
        if list(shape_of(self.result.type)) != expected:
            raise VerifyException(
                f"'rdu.transpose' result shape {list(shape_of(self.result.type))} "
                f"should be {expected}"
            )

    SHARDS: ClassVar[bool] = True
    READS_BY_ADDRESS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Input dim perm[i] becomes result dim i."""
        dests: list[Dest] = [Dim.BLOCKED] * len(ins[0])
        for i, p in enumerate(_ints(self.perm)):
            dests[p] = i
        return DimMap((tuple(dests),))

    def flops(self) -> int:
        """None: data movement."""
        return 0



@irdl_op_definition
class BroadcastOp(_UnaryLayoutOp, OpFacts):
    """Expands size-1 (or missing leading) dims to the result shape."""

    name = "rdu.broadcast"
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue, result_type: Attribute):
        super().__init__(operands=[input], result_types=[result_type])

    def verify_(self) -> None:
        a, b = self._verify_same_element()
        if not broadcasts_to(a, b):
            raise VerifyException(f"'rdu.broadcast' cannot broadcast {list(a)} to {list(b)}")

    SHARDS: ClassVar[bool] = True
    READS_BY_ADDRESS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """NumPy broadcasting; new leading dims come from no input dim."""
        return DimMap((aligned(ins[0], outs[0]),))

    def flops(self) -> int:
        """None: data movement."""
        return 0



@irdl_op_definition
class SliceOp(_UnaryLayoutOp, OpFacts):
    """Strided window: result[i] = input[offsets + i * strides]; sizes = result shape."""

    name = "rdu.slice"
    offsets = prop_def(DenseArrayBase.constr(I64))
    strides = prop_def(DenseArrayBase.constr(I64))
    assembly_format = (
        "$input `offsets` $offsets `strides` $strides attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue,
        offsets: Sequence[int],
        strides: Sequence[int],
        result_type: Attribute,
    ):
        super().__init__(
            operands=[input],
            result_types=[result_type],
            properties={"offsets": _i64_array(offsets), "strides": _i64_array(strides)},
        )

    def verify_(self) -> None:
        self._verify_same_element()
        shape, sizes = shape_of(self.input.type), shape_of(self.result.type)
        offsets, strides = _ints(self.offsets), _ints(self.strides)
        if not len(offsets) == len(strides) == len(sizes) == len(shape):
            raise VerifyException("'rdu.slice' offsets, strides and shapes need equal rank")
        for axis, (dim, off, size, stride) in enumerate(zip(shape, offsets, sizes, strides)):
            if stride < 1:
                raise VerifyException(f"'rdu.slice' stride of dim {axis} must be >= 1")
            if size and not (0 <= off and off + (size - 1) * stride < dim):
                raise VerifyException(
                    f"'rdu.slice' dim {axis}: offset {off}, size {size}, stride "
                    f"{stride} reads past its size {dim}"
                )

    SHARDS: ClassVar[bool] = True
    READS_BY_ADDRESS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """A dim taken whole (offset 0, stride 1, full size) stays; others are blocked."""
        cut = [
            d
            for d, (offset, stride, size) in enumerate(zip(_ints(self.offsets), _ints(self.strides), outs[0]))
            if not (offset == 0 and stride == 1 and size == ins[0][d])
        ]
        return DimMap((identity(len(ins[0]), cut),), frozenset(cut))

    def flops(self) -> int:
        """None: data movement."""
        return 0



@irdl_op_definition
class ConcatOp(IRDLOperation, OpFacts):
    """Joins tensors along `dim`."""

    name = "rdu.concat"
    inputs = var_operand_def(STATIC_TENSOR)
    dim = prop_def(IntegerAttr[I64])
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure(), RduCanonicalization())
    assembly_format = (
        "$inputs `dim` $dim attr-dict `:` functional-type($inputs, $result)"
    )

    def __init__(self, inputs: Sequence[SSAValue], dim: int, result_type: Attribute):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={"dim": IntegerAttr(dim, i64)},
        )

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException("'rdu.concat' needs at least one input")
        out = shape_of(self.result.type)
        if not out:
            raise VerifyException("'rdu.concat' cannot concatenate rank-0 tensors")
        dim = self.dim.value.data
        _verify_dims(self.name, [dim], len(out))
        total = 0
        for i, value in enumerate(self.inputs):
            shape = shape_of(value.type)
            _same_element(self, value.type, self.result.type, f"input #{i} and result")
            if len(shape) != len(out) or any(
                a != b for axis, (a, b) in enumerate(zip(shape, out)) if axis != dim
            ):
                raise VerifyException(
                    f"'rdu.concat' input #{i} shape {list(shape)} does not match "
                    f"the result {list(out)} outside dim {dim}"
                )
            total += shape[dim]
        if total != out[dim]:
            raise VerifyException(
                f"'rdu.concat' inputs add up to {total} along dim {dim}, result has {out[dim]}"
            )

    SHARDS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Every dim but the joined one stays."""
        dim = self.dim.value.data
        return DimMap(tuple(identity(len(shape), [dim]) for shape in ins), frozenset({dim}))

    def flops(self) -> int:
        """None: data movement."""
        return 0



@irdl_op_definition
class GatherOp(IRDLOperation, OpFacts):
    """Advanced indexing of consecutive dims starting at `dim`.

    With k integer index tensors broadcasting to shape I, the result is
    `source.shape[:dim] + I + source.shape[dim + k:]`. An embedding lookup is
    a gather at dim 0 with one index tensor.

    An index must lie in [0, size) of the dim it indexes (an embedding,
    index_select, gather), or in [-size, size) with `wraps`, where a negative
    index counts from the end (advanced indexing `x[idx]`); any other index is
    an error at run time, as in eager.
    """

    name = "rdu.gather"
    source = operand_def(STATIC_TENSOR)
    indices = var_operand_def(STATIC_TENSOR)
    dim = prop_def(IntegerAttr[I64])
    wraps = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$source `[` $indices `]` `dim` $dim (`wraps` $wraps^)? attr-dict "
        "`:` type($source) `,` type($indices) `->` type($result)"
    )

    def __init__(
        self,
        source: SSAValue,
        indices: Sequence[SSAValue],
        dim: int,
        result_type: Attribute,
        wraps: bool = False,
    ):
        props: dict[str, Attribute] = {"dim": IntegerAttr(dim, i64)}
        if wraps:
            props["wraps"] = UnitAttr()
        super().__init__(
            operands=[source, indices],
            result_types=[result_type],
            properties=props,
        )

    def verify_(self) -> None:
        shape = shape_of(self.source.type)
        dim, count = self.dim.value.data, len(self.indices)
        if count < 1 or dim < 0 or dim + count > len(shape):
            raise VerifyException(
                f"'rdu.gather' indexes dims [{dim}, {dim + count}) of a rank-{len(shape)} source"
            )
        for i, value in enumerate(self.indices):
            if not is_integer(element_of(value.type)) or is_bool(element_of(value.type)):
                raise VerifyException(f"'rdu.gather' index #{i} must be an integer tensor")
        index_shape = broadcast_shapes([shape_of(v.type) for v in self.indices])
        if index_shape is None:
            raise VerifyException("'rdu.gather' index shapes do not broadcast")
        expected = (*shape[:dim], *index_shape, *shape[dim + count :])
        if shape_of(self.result.type) != expected:
            raise VerifyException(
                f"'rdu.gather' result shape {list(shape_of(self.result.type))} "
                f"should be {list(expected)}"
            )
        _same_element(self, self.source.type, self.result.type, "source and result")

    READS_BY_ADDRESS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Source dims before `dim` stay, the indexed ones are read by index (blocked),
        later ones move past the index dims; the indices broadcast into the
        result's index dims."""
        source, out, dim, count = ins[0], outs[0], self.dim.value.data, len(self.indices)
        index_rank = len(out) - len(source) + count
        table: list[Dest] = [*range(dim), *[Dim.BLOCKED] * count,
                             *range(dim + index_rank, dim + index_rank + len(source) - dim - count)]
        window = out[dim:dim + index_rank]
        indices = tuple(
            tuple(d + dim if isinstance(d, int) else d for d in aligned(shape, window)) for shape in ins[1:]
        )
        return DimMap((tuple(table), *indices))

    def flops(self) -> int:
        """None: data movement."""
        return 0



@irdl_op_definition
class IotaOp(IRDLOperation, OpFacts):
    """A rank-1 ramp: element i is `start + i * step` (torch.arange)."""

    name = "rdu.iota"
    start = prop_def(irdl_to_attr_constraint(IntegerAttr[I64]) | base(FloatAttr))
    step = prop_def(irdl_to_attr_constraint(IntegerAttr[I64]) | base(FloatAttr))
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())

    def __init__(self, start: int | float, step: int | float, result_type: Attribute):
        super().__init__(
            result_types=[result_type],
            properties={"start": _number_attr(start), "step": _number_attr(step)},
        )

    @staticmethod
    def _value(attr: Attribute) -> int | float:
        assert isinstance(attr, IntegerAttr | FloatAttr)
        return attr.value.data

    def print(self, printer: Printer) -> None:
        printer.print_string(
            f" start {self._value(self.start)!r} step {self._value(self.step)!r}"
        )
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> IotaOp:
        parser.parse_keyword("start")
        start = parser.parse_number()
        parser.parse_keyword("step")
        step = parser.parse_number()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        op = cls(start, step, parser.parse_type())
        op.attributes |= attributes
        return op

    def verify_(self) -> None:
        if len(shape_of(self.result.type)) != 1:
            raise VerifyException("'rdu.iota' result must be rank 1")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """No input; the result is made whole."""
        return opaque(ins, outs)

    def flops(self) -> int:
        """One per element."""
        return elements(self.result)



@irdl_op_definition
class ArgsortOp(IRDLOperation, OpFacts):
    """The i64 positions that sort `input` along `dim`, stably (equal elements
    keep their order); NaN sorts as the largest value, as in torch.sort."""

    name = "rdu.argsort"
    input = operand_def(STATIC_TENSOR)
    dim = prop_def(IntegerAttr[I64])
    descending = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `dim` $dim (`descending` $descending^)? attr-dict `:` type($input) `->` type($result)"
    )

    def __init__(self, input: SSAValue, dim: int, descending: bool, result_type: Attribute):
        props: dict[str, Attribute] = {"dim": IntegerAttr(dim, i64)}
        if descending:
            props["descending"] = UnitAttr()
        super().__init__(operands=[input], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        shape = shape_of(self.input.type)
        _verify_dims(self.name, [self.dim.value.data], len(shape))
        if shape_of(self.result.type) != shape or element_of(self.result.type) != i64:
            raise VerifyException("'rdu.argsort' result must be i64 of the input's shape")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Every dim stays, the sorted one read whole."""
        dim = self.dim.value.data
        return DimMap((identity(len(ins[0]), [dim]),), frozenset({dim}))

    def flops(self) -> int:
        """out_elems x ceil(log2(n)) for n elements along the sorted dim."""
        size = shape_of(self.input.type)[self.dim.value.data]
        return elements(self.result) * max(1, ceil(log2(max(size, 1))))



SCATTER_REDUCTIONS = (ReduceKind.SUM, ReduceKind.PROD, ReduceKind.MAX, ReduceKind.MIN)
"""What an `rdu.scatter` can combine its writes with."""


@irdl_op_definition
class ScatterOp(IRDLOperation, OpFacts):
    """`input` with `source` written along `dim` at `index` (torch.scatter, and
    torch.scatter_add / scatter_reduce with `reduce`): for every position p of
    `index`, the result at p with p[dim] replaced by index[p] takes source[p].
    `index` and `source` have one shape, of the input's rank and at most its
    size outside `dim`. Without `reduce`, of several writes to one position the
    last in row-major order of `index` wins (torch's CPU order); with `reduce`
    (sum, prod, max or min) every write combines with the position's value."""

    name = "rdu.scatter"
    input = operand_def(STATIC_TENSOR)
    index = operand_def(STATIC_TENSOR)
    source = operand_def(STATIC_TENSOR)
    dim = prop_def(IntegerAttr[I64])
    reduce = opt_prop_def(ReduceKindAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure(), RduCanonicalization())
    assembly_format = (
        "$input `[` $index `]` `=` $source `dim` $dim (`reduce` $reduce^)? attr-dict "
        "`:` type($input) `,` type($index) `,` type($source) `->` type($result)"
    )

    def __init__(self, input: SSAValue, index: SSAValue, source: SSAValue, dim: int, reduce: ReduceKind | None = None):
        props: dict[str, Attribute] = {"dim": IntegerAttr(dim, i64)}
        if reduce is not None:
            props["reduce"] = ReduceKindAttr(reduce)
        super().__init__(operands=[input, index, source], result_types=[input.type], properties=props)

    def verify_(self) -> None:
        shape, index = shape_of(self.input.type), shape_of(self.index.type)
        dim = self.dim.value.data
        if not shape:
            raise VerifyException("'rdu.scatter' input must have rank 1 or more")
        if self.reduce is not None and self.reduce.data not in SCATTER_REDUCTIONS:
            raise VerifyException(
                f"'rdu.scatter' reduce must be one of {', '.join(SCATTER_REDUCTIONS)}, not {self.reduce.data}"
            )
        _verify_dims(self.name, [dim], len(shape))
        if self.result.type != self.input.type:
            raise VerifyException("'rdu.scatter' result must have the input's type")
        _same_element(self, self.input.type, self.source.type, "input and source")
        if not is_integer(element_of(self.index.type)) or is_bool(element_of(self.index.type)):
            raise VerifyException("'rdu.scatter' index must have an integer element type")
        if shape_of(self.source.type) != index:
            raise VerifyException(
                f"'rdu.scatter' source shape {list(shape_of(self.source.type))}"
                f" differs from the index shape {list(index)}"
            )
        if len(index) != len(shape) or any(i > s for d, (i, s) in enumerate(zip(index, shape)) if d != dim):
            raise VerifyException(
                f"'rdu.scatter' index shape {list(index)} must have the input's rank"
                f" and fit its shape {list(shape)} outside dim {dim}"
            )

    SHARDS: ClassVar[bool] = True

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """A dim other than the scattered one that the index and the source span
        moves with all three; the scattered one (the index's values point along
        it) and any the index covers in part (its positions are the input's first
        ones) are blocked. A KV cache written at a position stays split by heads."""
        dim, full, index = self.dim.value.data, ins[0], ins[1]
        spanned = [d for d, size in enumerate(full) if d != dim and index[d] == size]
        cut = [d for d in range(len(full)) if d not in spanned]
        partial = identity(len(index), cut)
        return DimMap((partial, partial, partial), frozenset(cut))

    def flops(self) -> int:
        """Index elements with `reduce`, else none (a write)."""
        return elements(self.index) if self.reduce is not None else 0



class Distribution(StrEnum):
    """`rdu.random`'s distributions: uniform on [0, 1) and the standard normal."""

    UNIFORM = "uniform"
    NORMAL = "normal"


@irdl_attr_definition
class DistributionAttr(EnumAttribute[Distribution], SpacedOpaqueSyntaxAttribute):
    name = "rdu.distribution"


@irdl_op_definition
class RandomOp(IRDLOperation, OpFacts):
    """Random numbers of one distribution (torch.rand, torch.randn).

    Each op has its own `seed`; the runtime draws from (seed, run number), so
    one run of the program sees the same values wherever the op is evaluated
    (in every tile of a loop) and the next run sees fresh ones. The seed makes
    two random ops distinct, so CSE never merges them.
    """

    name = "rdu.random"
    distribution = prop_def(DistributionAttr)
    seed = prop_def(IntegerAttr[I64])
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = "$distribution `seed` $seed attr-dict `:` type($result)"

    def __init__(self, distribution: Distribution | str, seed: int, result_type: Attribute):
        super().__init__(
            result_types=[result_type],
            properties={"distribution": DistributionAttr(Distribution(distribution)),
                        "seed": IntegerAttr(seed, i64)},
        )

    def verify_(self) -> None:
        if not is_float(element_of(self.result.type)):
            raise VerifyException("'rdu.random' result must have a float element type")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """No input; the result is drawn whole (one stream per tensor)."""
        return opaque(ins, outs)

    def flops(self) -> int:
        """One per element."""
        return elements(self.result)



Dataflow = Dialect(
    "rdu",
    [
        MapOp,
        YieldOp,
        RemFOp,
        PointwiseCallOp,
        KernelOp,
        MatmulOp,
        GroupedMatmulOp,
        ReduceOp,
        ScanOp,
        ConvOp,
        PoolOp,
        ReshapeOp,
        TransposeOp,
        BroadcastOp,
        SliceOp,
        ConcatOp,
        GatherOp,
        IotaOp,
        RandomOp,
        ArgsortOp,
        ScatterOp,
        LayerNormOp,
        LayerNormGradOp,
        ConvGradOp,
        HostCallOp,
        CheckOp,
        *COLLECTIVE_OPS,
    ],
    [ReduceKindAttr, ScanKindAttr, PoolKindAttr, DistributionAttr, AtenOpAttr, CustomOpAttr, ReplicaGroupsAttr,
     *CONTRACT_ATTRS],
)

__all__ = [
    "Dataflow",
    "MapOp",
    "YieldOp",
    "RemFOp",
    "PointwiseCallOp",
    "AtenOpAttr",
    "CustomOpAttr",
    "KernelOp",
    "MatmulOp",
    "GroupedMatmulOp",
    "ReduceOp",
    "ReduceKind",
    "ScanOp",
    "ScanKind",
    "ConvOp",
    "PoolOp",
    "PoolKind",
    "ReshapeOp",
    "TransposeOp",
    "BroadcastOp",
    "SliceOp",
    "ConcatOp",
    "GatherOp",
    "IotaOp",
    "RandomOp",
    "ArgsortOp",
    "LayerNormOp",
    "LayerNormGradOp",
    "ConvGradOp",
    "ScatterOp",
    "HostCallOp",
    "CheckOp",
]
