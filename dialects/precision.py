"""The element type an op computes in, one place for the cost model's readers.

An op computes in its operands' element type, but a contraction (`rdu.matmul`,
`rdu.grouped_matmul`, `rdu.conv`) whose float operands all hold values exactly
representable in a narrower float type (each widened by a convert from it) is,
up to accumulation order, that narrower product accumulated in the wider type:
what the PCUs do for a bf16 matmul with float32 accumulation. `compute_element`
names that narrower type; the runtime still computes what the IR says.

An operand's values are exact in the type of `exact_element`: followed back
through float casts (an `rdu.map` of one input whose body only extends or
truncates, which rounds to or widens from the narrowest type it passes),
layout ops (`READS_BY_ADDRESS`: their result is their first operand's
elements), an `rdu.kernel`'s or `tier.compute`'s block argument (its input),
a buffer's writers (every `tier.compute` output, DMA, gather or scatter into
it or a view of it, a callee's writes to it) and function boundaries (an
argument: every caller's operand; a call's result: what the callee returns),
all of which must agree; anything else (an entry argument, a writer not named
here, a cycle) is its own element type.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import AnyFloat, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from rducc.dialects.op_facts import OpFacts
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.tier import BufferType, ComputeOp, DeallocOp, DmaOp, GatherDmaOp, ScatterDmaOp, ViewOp
from rducc.dialects.unchanged import remembered

CONTRACTIONS = (rdu.MatmulOp, rdu.GroupedMatmulOp, rdu.ConvOp)
"""Ops whose products may run narrower than their operands' type (see the module docstring)."""


def compute_element(op: Operation) -> Attribute | None:
    """The element type `op` computes in: a contraction's common `exact_element` of its
    float operands when they share one, else its first tensor operand's type, else its
    result's; None for an op with no tensor."""
    declared = next((v.type.element_type for v in (*op.operands, *op.results) if isinstance(v.type, TensorType)),
                    None)
    if not isinstance(op, CONTRACTIONS):
        return declared
    return remembered(("compute element", op), lambda: _traced_element(op, declared))


def _traced_element(op: Operation, declared: Attribute | None) -> Attribute | None:
    """`compute_element` of a contraction: one walk back from its float operands."""
    trace = _Trace()
    exact = {trace.exact(v, set()) for v in op.operands if isinstance(_element(v), AnyFloat)}
    return exact.pop() if len(exact) == 1 else declared


def exact_element(value: SSAValue) -> Attribute | None:
    """The narrowest float type `value`'s elements are known to be exact in (the
    module docstring's rules); its own element type when nothing narrower is known."""
    return _Trace().exact(value, set())


def _element(value: SSAValue) -> Attribute | None:
    kind = value.type
    return kind.element_type if isinstance(kind, TensorType | BufferType) else None


def _width(element: Attribute | None) -> int:
    return element.bitwidth if isinstance(element, AnyFloat) else 1 << 30


def _narrowest(values: list[Attribute | None], own: Attribute | None) -> Attribute | None:
    """The narrowest of `values` (ties: the first), `own` when none is narrower."""
    return min([own, *values], key=_width)


def _common(found: Iterable[Attribute | None], own: Attribute | None) -> Attribute | None:
    """The type every value of `found` is exact in, when they agree and it is narrower
    than `own` (read lazily: the first disagreement ends it)."""
    values = iter(found)
    first = next(values, own)
    return _narrowest([first], own) if all(f == first for f in values) else own


def _cast_types(body: Block) -> list[Attribute] | None:
    """The types a map body's float casts pass through, when it does nothing else."""
    ops = list(body.ops)[:-1]
    if not ops or not all(isinstance(op, arith.ExtFOp | arith.TruncFOp) for op in ops):
        return None
    return [op.results[0].type for op in ops]


_NO_CALLS = frozenset({ComputeOp, rdu.KernelOp, rdu.MapOp, rdu.ReduceOp, rdu.ScanOp})
"""Ops whose regions hold scalar or tensor bodies, never a call: not walked for calls."""


_Index = tuple[dict[str, func.FuncOp], dict[str, list[func.CallOp]]]


def _module_index(top: Operation) -> _Index:
    """The functions under `top` by name and its calls by callee (the bodies of tiles,
    kernels and maps hold no calls and are not walked)."""
    functions: dict[str, func.FuncOp] = {}
    calls: dict[str, list[func.CallOp]] = {}
    pending = [top]
    while pending:
        current = pending.pop()
        kind = type(current)
        if kind is func.FuncOp:
            functions[cast(func.FuncOp, current).sym_name.data] = cast(func.FuncOp, current)
        elif kind is func.CallOp:
            call = cast(func.CallOp, current)
            calls.setdefault(call.callee.string_value(), []).append(call)
        if current.regions and kind not in _NO_CALLS:
            pending += [inner for region in current.regions for block in region.blocks for inner in block.ops]
    return functions, calls


class _Trace:
    """One question's walk back through the program, with its module's functions and
    calls indexed on the first function boundary it crosses (once for every question
    inside an `unchanged()` block)."""

    def __init__(self) -> None:
        self.functions: dict[str, func.FuncOp] | None = None
        self.calls: dict[str, list[func.CallOp]] = {}
        self.known: dict[SSAValue, Attribute | None] = {}

    def exact(self, value: SSAValue, seen: set[SSAValue]) -> Attribute | None:
        """`exact_element` of `value`; `seen`: the values on the path here (a cycle ends it)."""
        own = _element(value)
        if value in seen or not isinstance(own, AnyFloat):
            return own
        if value not in self.known:
            self.known[value] = self.traced(value, own, seen | {value})
        return self.known[value]

    def traced(self, value: SSAValue, own: Attribute, seen: set[SSAValue]) -> Attribute | None:
        """`exact` of a float value not seen on this path (a cycle met inside ends that path at its own type)."""
        if isinstance(value.type, BufferType):
            return _common((self.exact(v, seen) for v in self.written(value, set())), own)
        if isinstance(value, BlockArgument):
            return _common((self.exact(v, seen) for v in self.block_inputs(value)), own)
        op = value.owner
        assert isinstance(op, Operation)
        if isinstance(op, func.CallOp):
            returned = self.returned(op, op.results.index(value))
            return self.exact(returned, seen) if returned is not None else own
        if isinstance(op, rdu.MapOp) and len(op.inputs) == 1 and (casts := _cast_types(op.body.block)) is not None:
            return _narrowest([self.exact(op.inputs[0], seen), *casts], own)
        if isinstance(op, OpFacts) and op.READS_BY_ADDRESS and op.operands and _element(op.operands[0]) == own:
            return self.exact(op.operands[0], seen)
        return own

    def block_inputs(self, arg: BlockArgument) -> list[SSAValue]:
        """The values a block argument reads: a kernel's or tile's input (a buffer for a
        tile), a function's callers' operands; none when nothing here names them."""
        parent = arg.block.parent_op()
        if isinstance(parent, rdu.KernelOp):
            return [parent.inputs[arg.index]]
        if isinstance(parent, ComputeOp):
            return [parent.ins[arg.index]]
        if isinstance(parent, func.FuncOp):
            return [call.operands[arg.index] for call in self.calls_of(parent)]
        return []

    def written(self, buffer: SSAValue, visited: set[SSAValue]) -> list[SSAValue]:
        """The values written into `buffer` (or a view of it, or what it views): each
        tile's yielded value, each DMA's source; across a function boundary, the
        callers' operands or the callee's returned value. `buffer` itself stands for
        a writer nothing here names (an entry argument, an op that may write it)."""
        if buffer in visited:
            return []
        visited.add(buffer)
        values = self.local_writes(buffer, visited)
        if isinstance(buffer, BlockArgument):
            values += self.block_inputs(buffer) or [buffer]
        elif isinstance(buffer.owner, ViewOp):
            values += self.written(buffer.owner.source, visited)
        elif isinstance(buffer.owner, func.CallOp):
            returned = self.returned(buffer.owner, buffer.owner.results.index(buffer))
            values.append(returned if returned is not None else buffer)
        return values

    def local_writes(self, buffer: SSAValue, visited: set[SSAValue]) -> list[SSAValue]:
        """What the ops that take `buffer` write into it (a called function's writes to its argument included)."""
        values: list[SSAValue] = []
        for use in buffer.uses:
            user = use.operation
            if isinstance(user, ComputeOp):
                if buffer in user.outs:
                    yielded = user.body.block.last_op
                    assert yielded is not None
                    values.append(yielded.operands[list(user.outs).index(buffer)])
            elif isinstance(user, DmaOp | GatherDmaOp | ScatterDmaOp):
                if user.dest is buffer:
                    values.append(user.source)
            elif isinstance(user, ViewOp):
                values += self.written(user.result, visited)
            elif isinstance(user, func.CallOp):
                callee = self.callee(user)
                values += self.local_writes(callee.args[use.index], visited) if callee is not None else [buffer]
            elif not isinstance(user, func.ReturnOp | DeallocOp):
                values.append(buffer)
        return values

    def index(self, op: Operation) -> dict[str, func.FuncOp]:
        """The module's functions by name, its calls by callee (`_module_index`, made on first use)."""
        if self.functions is None:
            top: Operation = op
            while (parent := top.parent_op()) is not None:
                top = parent
            self.functions, self.calls = remembered(("functions and calls", top), lambda: _module_index(top))
        return self.functions

    def callee(self, call: func.CallOp) -> func.FuncOp | None:
        return self.index(call).get(call.callee.string_value())

    def calls_of(self, function: func.FuncOp) -> list[func.CallOp]:
        self.index(function)
        return self.calls.get(function.sym_name.data, [])

    def returned(self, call: func.CallOp, index: int) -> SSAValue | None:
        """The value the callee returns as the call's result `index`."""
        callee = self.callee(call)
        last = callee.body.block.last_op if callee is not None and callee.body.blocks else None
        return last.operands[index] if isinstance(last, func.ReturnOp) else None
