"""An SRAM plan checker that shares no code with the allocator.

It reads a placed program (level 4) and proves, with its own liveness and
size computations:

- every SRAM buffer (each `tier.alloc` in sram, all its rotating copies, and
  every non-yielded value of a `tier.compute` body) has an offset, and
  offset + size <= the SRAM capacity;
- no two buffers live at the same time share a byte;
- every buffer is used only while allocated (after its alloc, before its
  dealloc); values a body yields live in its output buffers (no offset);
  time is the order of a walk, so a kernel's values and a loop's buffers
  fall inside the live range of a buffer allocated before and freed after;
- no buffer live across a `func.call` shares a byte with what the callee
  (and the functions it calls) places: the callee's buffers are checked in
  its own place in the walk, a time span of their own.

`check_placed(module, capacity)` returns the peak and the max-live lower bound,
or raises AssertionError naming the first violation.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation

ELEMENT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "i1": 1}


def _bytes(type_text: str) -> int:
    """Bytes of `tensor<4x8xf32>` or `!tier.buffer<sram, 4x8xf32>`, from the text alone."""
    inner = type_text[type_text.index("<") + 1 : type_text.rindex(">")]
    inner = inner.split(",")[-1].strip()
    *dims, element = inner.split("x")
    size = ELEMENT_BYTES[element]
    for dim in dims:
        size *= int(dim)
    return size


def _elements(type_text: str) -> int:
    """Elements of `tensor<4x8xf32>` (1 for `tensor<f32>`), from the text alone."""
    count = 1
    for dim in type_text[type_text.index("<") + 1 : type_text.rindex(">")].split("x")[:-1]:
        count *= int(dim)
    return count


@dataclass
class Interval:
    function: str
    name: str
    start_byte: int
    end_byte: int
    first: int
    last: int


def _int(op: Operation, name: str) -> int | None:
    attr = op.properties.get(name)
    if attr is None:
        attr = op.attributes.get(name)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _intervals(module: ModuleOp) -> list[Interval]:
    order = {op: i for i, op in enumerate(module.walk())}
    intervals: list[Interval] = []
    for op in order:
        if op.name == "tier.alloc" and "<sram" in str(op.results[0].type):
            intervals.append(_alloc_interval(op, order))
        elif op.name == "tier.compute":
            intervals.extend(_body_intervals(op, order))
    return intervals


def _function_of(op: Operation) -> str:
    while op.name != "func.func":
        op = op.parent_op()
    return op.properties["sym_name"].data


def _alloc_interval(op: Operation, order: dict[Operation, int]) -> Interval:
    offset = _int(op, "offset")
    assert offset is not None, f"SRAM buffer without an offset: {op}"
    copies = _int(op, "buffers") or 1
    size = _bytes(str(op.results[0].type)) * copies
    frees = [order[u.operation] for u in op.results[0].uses if u.operation.name == "tier.dealloc"]
    assert len(frees) <= 1, f"buffer freed twice: {op}"
    last = frees[0] if frees else len(order)
    for use in op.results[0].uses:
        position = order[use.operation]
        assert order[op] < position <= last, f"buffer used outside its live range: {use.operation.name}"
    name = op.results[0].name_hint or "alloc"
    return Interval(_function_of(op), name, offset, offset + size, order[op], last)


STREAMABLE = {"rdu.reshape", "rdu.transpose", "rdu.broadcast", "rdu.slice", "rdu.gather", "rdu.map"}
"""Ops whose result may be a streamed view (dialects/streamed.py): no slot of its own."""


OPERAND_VIEWS = {"rdu.reshape", "rdu.transpose", "rdu.slice"}
"""Ops the allocator may place on their operand's bytes (the same elements; a
slice some of them, anywhere in those bytes): one interval with the operand,
live until the later one's last reader."""


def _read_through(op: Operation) -> Operation | None:
    """The op defining what a streamed view reads (a layout op's first operand, a map's
    one input of more than one element); None for a block argument."""
    if op.name == "rdu.map":
        wide = [v for v in op.operands if _elements(str(v.type)) > 1]
        assert len(wide) == 1, f"a streamed map reads one tensor: {op}"
        source = wide[0]
    else:
        source = op.operands[0]
    return source.owner if isinstance(source.owner, Operation) else None


def _body_intervals(compute: Operation, order: dict[Operation, int]) -> list[Interval]:
    block = compute.regions[0].blocks[0]
    yielded = set(block.last_op.operands) if block.last_op is not None else set()

    def top(user: Operation) -> Operation:
        while user.parent_block() is not block:
            user = user.parent_op()
        return user

    result: dict[Operation, Interval] = {}
    held: dict[Operation, Operation] = {}  # a view on its operand's bytes -> the op whose interval holds it
    extent: dict[Operation, tuple[int, int]] = {}  # each placed value's own bytes
    streamed: list[tuple[Operation, int]] = []
    for op in block.ops:
        if not op.results or op.name == "rdu.yield":
            continue
        offset = _int(op, "tier.offset")
        if op.results[0] in yielded:
            assert offset is None, f"a yielded value needs no SRAM slot of its own: {op.name}"
            continue
        last = max((order[top(u.operation)] for u in op.results[0].uses), default=order[op])
        if offset is None:  # a streamed view: read by address by products, its source live until then
            assert op.name in STREAMABLE, f"body value without an SRAM offset: {op.name}"
            for use in op.results[0].uses:
                reader = use.operation
                assert reader.name == "rdu.matmul" or _int(reader, "tier.offset") is None, (
                    f"a streamed view read by a non-product with a slot of its own: {op.name} -> {reader.name}")
            streamed.append((op, last))
            continue
        size = _bytes(str(op.results[0].type))
        extent[op] = (offset, offset + size)
        operand = op.operands[0].owner if op.name in OPERAND_VIEWS and op.operands else None
        if operand in extent and extent[operand][0] == offset and (  # type: ignore[index]
                offset + size == extent[operand][1]  # type: ignore[index]
                or op.name == "rdu.slice" and offset + size <= extent[operand][1]):  # type: ignore[index]
            # a reshape, transpose or slice on its operand's bytes: one buffer live for both
            source = held.get(operand, operand)  # type: ignore[arg-type]
            result[source].last = max(result[source].last, last)
            held[op] = source
            continue
        result[op] = Interval(_function_of(compute), op.results[0].name_hint or op.name, offset, offset + size,
                              order[op], last)
    for view, last in streamed:
        source = _read_through(view)
        while source is not None and source not in result:
            source = held[source] if source in held else (
                _read_through(source) if source.name in STREAMABLE else None)
        if source is not None:
            result[source].last = max(result[source].last, last)
    return list(result.values())


def _footprint(module: ModuleOp, intervals: list[Interval], function: str, seen: frozenset[str] = frozenset()) -> list[Interval]:
    """Every SRAM interval of `function` and of the functions it calls."""
    found = [i for i in intervals if i.function == function]
    for op in module.walk():
        if op.name == "func.call" and _function_of(op) == function and function not in seen:
            found += _footprint(module, intervals, op.properties["callee"].string_value(), seen | {function})
    return found


def _check_calls(module: ModuleOp, intervals: list[Interval]) -> None:
    """A `func.call` runs its callee, whose buffers are checked in the callee's own
    place in the walk (a time span of its own): so no caller buffer live across
    the call may share a byte with what the callee places."""
    order = {op: i for i, op in enumerate(module.walk())}
    for op, position in order.items():
        if op.name != "func.call":
            continue
        callee = op.properties["callee"].string_value()
        placed = _footprint(module, intervals, callee)
        for live in (i for i in intervals if i.first < position < i.last):
            for other in placed:
                assert not (live.start_byte < other.end_byte and other.start_byte < live.end_byte), (
                    f"SRAM buffer {live.name} [{live.start_byte}, {live.end_byte}) is live across a call of "
                    f"@{callee}, which places {other.name} [{other.start_byte}, {other.end_byte}) over it"
                )


def check_placed(module: ModuleOp, capacity: int) -> tuple[int, int]:
    """Prove the SRAM plan sound; return (peak byte, max-live lower bound)."""
    intervals = _intervals(module)
    for item in intervals:
        assert 0 <= item.start_byte and item.end_byte <= capacity, (
            f"{item.name} [{item.start_byte}, {item.end_byte}) passes the capacity {capacity}"
        )
    by_start = sorted(intervals, key=lambda i: i.first)
    for index, a in enumerate(by_start):
        for b in by_start[index + 1 :]:
            if b.first > a.last:
                break
            if a.start_byte < b.end_byte and b.start_byte < a.end_byte and a.end_byte > a.start_byte and b.end_byte > b.start_byte:
                raise AssertionError(
                    f"{a.name} [{a.start_byte}, {a.end_byte}) and {b.name} "
                    f"[{b.start_byte}, {b.end_byte}) overlap while both are live"
                )
    _check_calls(module, intervals)
    peak = max((i.end_byte for i in intervals), default=0)
    events = sorted(
        [(i.first, 1, i.end_byte - i.start_byte) for i in intervals]
        + [(i.last + 1, 0, -(i.end_byte - i.start_byte)) for i in intervals]
    )
    bound = live = 0
    for _, _, change in events:  # frees (kind 0) sort before allocs at the same point
        live += change
        bound = max(bound, live)
    return peak, bound
