"""Per-op facts: what each op of rducc's dialects does to dims, FLOPs and bytes.

Every op of the `rdu` and `tier` dialects either carries these facts (it
mixes in `OpFacts`) or says it computes nothing (`NoCompute`: terminators,
allocation, transfers, the ops that hold a region of other ops, scalar ops
counted by the map that holds them). Analyses read the facts instead of
keeping their own per-op rules: tiling (`rducc.model.kernel_model`) and
sharding (`rdu-partition`) read `dim_map`, the cost model reads `flops` and
`bytes_read`/`bytes_written`. Nothing falls back silently: `facts_of` raises
for an op that has none (`test_op_facts.py` checks every registered op).

A `DimMap` says, for each dim of each operand, the result dim it becomes (an
`int`) or why it has none (`Dim.REDUCED`, `Dim.BLOCKED`, `Dim.BROADCAST`),
and which result dims are not a whole operand dim (`blocked`). Dims are
computed from shapes, so a caller that knows other shapes (a sharding pass
seeing the full shapes of split values) passes them to `dims_for`.

Size-1 dims: a reshape pairs none of them (`shapes.reshape_groups`, the one
pairing both tiling and sharding read), as sharding always did; a size-1 dim
is never tiled nor split, so this changes no tiling answer.

A new op: mix in `OpFacts` and define `dims_for` and `flops` (override
`bytes_read`/`bytes_written` if it touches other than its tensors; set
`SHARDS` once its numerics are checked on split operands, `PCU_STAGES` if it
takes other than one stage, `READS_BY_ADDRESS` if its result only re-addresses
its first operand's elements), or mix in `NoCompute`. `test_op_facts.py`
fails for an op that does neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.traits import IsTerminator

from rducc.dialects.shapes import num_elements, reshape_groups, shape_of, value_bytes
from rducc.errors import RduccError

Shape = tuple[int, ...]


class Dim(Enum):
    """Why an operand dim becomes no result dim."""

    REDUCED = "reduced"
    """Combined away: a reduction's or a contraction's dim (split: partial results)."""
    BLOCKED = "blocked"
    """Read whole, or only in part, to make each result element (concat's dim, a window)."""
    BROADCAST = "broadcast"
    """A size-1 dim stretched to a larger result dim."""


Dest = int | Dim
"""Where one operand dim goes: a result dim, or why none."""


@dataclass(frozen=True)
class DimMap:
    """Per operand, per dim, the result dim it becomes (or a `Dim` saying why none).

    `blocked`: result dims that are no whole operand dim (merged by a reshape,
    a concat's dim, a window's output). `sums`: the reduced dims are summed, so a
    value split along one gives partial sums (a matmul's K, a sum reduction).
    """

    operands: tuple[tuple[Dest, ...], ...]
    blocked: frozenset[int] = frozenset()
    sums: bool = False

    def reduced(self, operand: int) -> list[int]:
        """The dims of operand `operand` that are reduced."""
        return [d for d, dest in enumerate(self.operands[operand]) if dest is Dim.REDUCED]


def aligned(source: Sequence[int], result: Sequence[int]) -> tuple[Dest, ...]:
    """NumPy broadcasting: right-aligned dims of equal size move together; a size-1
    dim under a larger one is broadcast."""
    offset = len(result) - len(source)
    return tuple(
        i + offset if size == result[i + offset] else Dim.BROADCAST for i, size in enumerate(source)
    )


def identity(rank: int, blocked: Sequence[int] = ()) -> tuple[Dest, ...]:
    """Dim d becomes result dim d, except `blocked` ones."""
    return tuple(Dim.BLOCKED if d in blocked else d for d in range(rank))


def opaque(ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
    """Every dim blocked: an op that needs its operands and results whole."""
    return DimMap(
        tuple((Dim.BLOCKED,) * len(shape) for shape in ins),
        frozenset(range(len(outs[0]))) if outs else frozenset(),
    )


def reshape_dims(source: Sequence[int], result: Sequence[int]) -> DimMap:
    """A reshape keeps a dim whole where its group (`reshape_groups`) is one dim on
    each side; every other dim, size-1 dims included, is blocked."""
    dests: list[Dest] = [Dim.BLOCKED] * len(source)
    kept: set[int] = set()
    for group_src, group_res in reshape_groups(source, result):
        if len(group_src) == 1 and len(group_res) == 1:
            dests[group_src[0]] = group_res[0]
            kept.add(group_res[0])
    return DimMap((tuple(dests),), frozenset(range(len(result))) - kept)


def _shape(value: SSAValue) -> Shape:
    return shape_of(value.type) if isinstance(value.type, TensorType) else ()


def tensor_bytes(value: SSAValue) -> int:
    """Bytes of a tensor value (0 for a scalar or a buffer)."""
    return value_bytes(value) if isinstance(value.type, TensorType) else 0


def elements(value: SSAValue) -> int:
    """Elements of a tensor value."""
    return num_elements(_shape(value))


class OpFacts:
    """Mixin of an op that computes: its dim map, FLOPs and bytes.

    `dims_for` and `flops` must be defined by the op; the bytes default to its
    tensor operands (read) and results (written). `SHARDS`: whether
    `rdu-partition` lets a split flow through the op by its dim map (else the
    op runs replicated, its split operands gathered first). `PCU_STAGES`: the
    pipeline stages it takes in a kernel (0 for a change of PMU addressing).
    `READS_BY_ADDRESS`: its result is elements of its first operand, each read
    at an address computed from the result's index (a layout op: reshape,
    transpose, broadcast, slice, gather), so a reader in the same kernel can
    read them from the operand's PMUs instead of a copy
    (`rducc.dialects.liveness.streamed_views`).
    """

    SHARDS: ClassVar[bool] = False
    PCU_STAGES: ClassVar[int] = 1
    READS_BY_ADDRESS: ClassVar[bool] = False

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """The dim map for operands of shapes `ins` and results of shapes `outs`."""
        raise RduccError(f"'{type(self).__name__}' has no dim map")

    def dim_map(self) -> DimMap:
        """The dim map for the op's own types."""
        assert isinstance(self, Operation)
        return self.dims_for([_shape(v) for v in self.operands], [_shape(r) for r in self.results])

    def flops(self) -> int:
        """Arithmetic operations of one execution (docs/cost-model.md lists the rules)."""
        raise RduccError(f"'{type(self).__name__}' has no FLOP count")

    def bytes_read(self) -> int:
        """Bytes of the tensors it reads."""
        assert isinstance(self, Operation)
        return sum(tensor_bytes(v) for v in self.operands)

    def bytes_written(self) -> int:
        """Bytes of the tensors it writes."""
        assert isinstance(self, Operation)
        return sum(tensor_bytes(r) for r in self.results)


class NoCompute:
    """Marker of an op that computes nothing itself (no dims, no FLOPs, no bytes):
    a terminator, an allocation, a transfer costed as such, a region holder whose
    body ops carry the facts, or a scalar op counted by the map holding it."""


def facts_of(op: Operation) -> OpFacts | None:
    """The op's facts; None for an op that declares it computes nothing (or a
    constant, or another dialect's terminator); an error for any other op, so that nothing falls back silently."""
    if isinstance(op, OpFacts):
        return op
    if isinstance(op, NoCompute | arith.ConstantOp) or op.has_trait(IsTerminator):
        return None
    raise RduccError(f"'{op.name}' has no op facts (dims, FLOPs, bytes): see dialects/op_facts.py")


__all__ = [
    "Dim",
    "DimMap",
    "Dest",
    "NoCompute",
    "OpFacts",
    "Shape",
    "aligned",
    "elements",
    "facts_of",
    "identity",
    "opaque",
    "reshape_dims",
    "tensor_bytes",
]
