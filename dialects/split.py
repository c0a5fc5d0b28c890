"""How a value is split over the ranks of a tensor-parallel group: `Split` and
its typed attribute `#rdu.split<...>` (`SplitAttr`).

The algebra of splits (which part a rank holds, how a split moves through a
reshape or transpose, whether it fits a shape) lives here, beside the
attribute; `rdu-partition` chooses splits, the runtime slices by them
(`Split.indices`), and `contracts` keeps the accessors that read and write the
`rdu.shard` attributes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

SplitBlock = int | tuple[int, int]
"""One of a dim's unequal consecutive blocks: its size, split into the entry's parts
(> 0) or held whole by every rank (< 0), or `(size, parts)`: split into its own number
of parts, a factor of the entry's (grouped-query k and v beside q: 8 KV heads over
16 ranks, each held by a pair)."""

Period = int | tuple[SplitBlock, ...]
"""A split dim's period (0: none), or the sizes of its unequal consecutive blocks."""


def block_size(block: SplitBlock) -> int:
    """A block's length along its dim."""
    return block[0] if isinstance(block, tuple) else abs(block)


def block_parts(block: SplitBlock, parts: int) -> int:
    """How many parts a block of an entry of `parts` splits into (1: held whole)."""
    if isinstance(block, tuple):
        return block[1]
    return 1 if block < 0 else parts


def block_of(size: int, own: int, parts: int) -> SplitBlock:
    """The block of `size` split into `own` parts, in an entry of `parts` (the
    shortest spelling: the size when `own` is the entry's, its negative when 1)."""
    return size if own == parts else -size if own == 1 else (size, own)


def block_starts(blocks: Sequence[SplitBlock]) -> list[int]:
    """Where each of consecutive blocks of these sizes starts (see `Split`)."""
    starts, at = [], 0
    for block in blocks:
        starts.append(at)
        at += block_size(block)
    return starts


def block_part(block: SplitBlock, parts: int) -> int:
    """How much of a block one rank holds: its part, or all of a block held whole."""
    return block_size(block) // block_parts(block, parts)


def block_rank_part(block: SplitBlock, parts: int, part: int) -> int:
    """Which part of `block` the rank that holds part `part` of the entry holds: the
    major factor of the entry's parts (ranks of consecutive parts share a block split fewer ways)."""
    return part // (parts // block_parts(block, parts))


def run_parts(blocks: Sequence[SplitBlock], parts: int) -> int:
    """The parts one run of `blocks` splits into: the most any block does, the minor
    factor of the entry's `parts`; the runs split over the major one (`parts // run_parts`)."""
    return max(block_parts(b, parts) for b in blocks)


def runs_held(length: int, parts: int, blocks: Sequence[SplitBlock]) -> int:
    """How many runs of `blocks` one rank holds of a dim of `length` (the runs split
    over `parts // run_parts` consecutive groups)."""
    return length // sum(map(block_size, blocks)) // (parts // run_parts(blocks, parts))


def part_length(length: int, parts: int, period: Period) -> int:
    """One rank's length of a dim of `length` split into `parts` with `period`."""
    if isinstance(period, tuple):
        return runs_held(length, parts, period) * sum(block_part(b, parts) for b in period)
    return length // parts


def whole_length(length: int, parts: int, period: Period) -> int:
    """The whole length of a dim of which one rank holds `length` (`part_length`'s inverse)."""
    if isinstance(period, tuple):
        held = length // sum(block_part(b, parts) for b in period)
        return held * (parts // run_parts(period, parts)) * sum(block_size(b) for b in period)
    return length * parts


def runs_fit(length: int, parts: int, blocks: Sequence[SplitBlock]) -> bool:
    """Whether a dim of `length` is whole runs of `blocks`, as many as their rank groups
    (`parts // run_parts`) divide."""
    run = sum(map(block_size, blocks))
    return length > 0 and length % run == 0 and (length // run) % (parts // run_parts(blocks, parts)) == 0


def blocks_fit(blocks: Sequence[SplitBlock], parts: int) -> bool:
    """Whether each block is a size > 0 that its parts divide, its parts a factor of
    the entry's, and at least one block split (else the dim is not split)."""
    if not blocks:
        return False
    for block in blocks:
        own = block_parts(block, parts)
        if block_size(block) <= 0 or own < 1 or parts % own or block_size(block) % own:
            return False
    return any(block_parts(b, parts) > 1 for b in blocks)


def _normal(entry: tuple[int, int, int, Period]) -> tuple[int, int, int, Period]:
    dim, parts, stride, period = entry
    if not isinstance(period, tuple):
        return entry
    return dim, parts, stride, tuple(block_of(block_size(b), block_parts(b, parts), parts) for b in period)


@dataclass(frozen=True)
class Split:
    """How a value is split over the `tp` ranks of a group.

    Along each `(dim, parts, stride, period)` of `entries` (one per split dim,
    sorted by dim) rank r holds part `(r // stride) % parts`. A split over every
    rank along one dim is `(dim, tp, 1)`. With 16 ranks seen as 8 x 2, `(1, 8, 2)`
    splits dim 1 over the major factor and replicates over the minor one (ranks
    2k and 2k + 1 hold the same part: a KV head), and `{(1, 8, 2), (2, 2, 1)}`
    splits dim 1 over the major factor and dim 2 over the minor one (the query
    heads grouped under that KV head). Entries use disjoint factors of the rank.

    `period` 0 (the default, not printed) splits the whole dim into `parts`
    consecutive blocks. A period p > 0 splits each run of p consecutive indices
    of the dim so, the same way in every run: index i is in part
    `(i % p) // (p // parts)`. It is what a split of the heads becomes when a
    reshape merges batch x heads: `[2, 4, 16, 32] -> [8, 16, 32]` with dim 1
    split 2 ways is `(0, 2, 1, 4)`, the heads of every batch row split 2 ways.

    `period` may instead be a tuple of block sizes, consecutive along the dim
    and adding up to it, each split into `parts` the same way: a rank holds its
    part of every block, in block order. It is a fused projection sliced into
    unequal blocks (Phi-3's grouped-query qkv: q of heads x head_dim, k and v of
    kv_heads x head_dim each): `(2, 2, 1, [64, 32, 32])`. A negative block size
    is a block of that many held whole by every rank: multi-query attention's
    fused q/k/v (GPTBigCode's `c_attn`: q split by heads, the one k and the one
    v head on every rank) is `(2, 2, 1, [64, -16, -16])`. A block `(size, p)`
    splits into its own p parts, a factor of the entry's: the rank holding part
    e of the entry holds part `e // (parts // p)` of it. Grouped-query q/k/v
    fused in one weight with more ranks than KV heads (32 query heads, 8 KV
    heads, 16 ranks) is `(1, 16, 1, [4096, (1024, 8), (1024, 8)])`: q split 16
    ways, k and v 8 ways, each KV head held by a pair of ranks, as unfused k
    and v weights split `(0, 8, 2)`. Blocks are kept in that shortest spelling.

    Blocks whose sizes add up to a proper divisor of the dim repeat along it,
    one run after another: q/k/v fused per KV group (Falcon's layout, `[kv,
    q heads + 2, head_dim]` flattened). The blocks split into `run_parts` parts
    (the most any block does), the minor factor of the entry's; the runs split
    over the major factor, `parts // run_parts` consecutive groups of runs:
    the rank holding part e holds runs group `e // run_parts` and, in each of
    them, part `e % run_parts` of the blocks, as above. 8 groups of 4 query
    heads, one k and one v head of 128, over 16 ranks, are `(1, 16, 1, [512:2,
    -128, -128])`: rank e holds group e // 2, half its query heads, and its k
    and v whole, as unfused weights split `(0, 8, 2)` beside `(0, 16, 1)`.
    One run (the blocks add up to the dim) is the case above, and then the
    blocks split over every part (`run_parts == parts`).
    """

    entries: tuple[tuple[int, int, int, Period], ...]

    def __post_init__(self) -> None:
        padded = tuple((*entry, 0)[:4] if len(entry) == 3 else tuple(entry) for entry in self.entries)
        object.__setattr__(self, "entries", tuple(_normal(entry) for entry in padded))  # type: ignore[arg-type]

    @staticmethod
    def of(entries: Iterable[tuple[Period, ...]]) -> Split | None:
        """The split of these `(dim, parts, stride[, period])` entries; None (replicated) when there are none."""
        ordered = tuple(sorted((*entry, 0)[:4] if len(entry) == 3 else tuple(entry) for entry in entries))
        return Split(ordered) if ordered else None  # type: ignore[arg-type]

    @staticmethod
    def whole(dim: int, tp: int) -> Split:
        """Split along `dim` over every one of `tp` ranks."""
        return Split(((dim, tp, 1, 0),))

    def dims(self) -> set[int]:
        return {entry[0] for entry in self.entries}

    def parts(self, dim: int) -> int:
        return next((entry[1] for entry in self.entries if entry[0] == dim), 1)

    def on(self, dim: int) -> tuple[int, int] | None:
        """(parts, stride) along `dim`, or None."""
        return next(((parts, stride) for d, parts, stride, _ in self.entries if d == dim), None)

    def period(self, dim: int) -> Period:
        """The period of the split along `dim` (0: the whole dim in consecutive blocks; a
        tuple: unequal blocks)."""
        return next((period for d, _, _, period in self.entries if d == dim), 0)

    def part_shape(self, shape: Sequence[int]) -> list[int]:
        """One rank's shape of a whole value of `shape`."""
        part = list(shape)
        for dim, parts, _, period in self.entries:
            part[dim] = part_length(part[dim], parts, period)
        return part

    def whole_shape(self, shape: Sequence[int]) -> list[int]:
        """The whole shape of which one rank holds `shape`."""
        whole = list(shape)
        for dim, parts, _, period in self.entries:
            whole[dim] = whole_length(whole[dim], parts, period)
        return whole

    def contiguous(self) -> bool:
        """Whether every split dim is cut into consecutive blocks (no period)."""
        return all(period == 0 for *_, period in self.entries)

    def joined(self, dim: int, length: int) -> Split | None:
        """The split of blocks of `length` along `dim`, each split as this one, joined
        one after another (`rdu.concat`): each block's parts are a run of `length`, the
        period of the joined dim (a period of the blocks' own stays); None when the
        blocks are split into unequal blocks of their own."""
        if any(d == dim and isinstance(period, tuple) for d, _, _, period in self.entries):
            return None
        return Split.of((d, parts, stride, (period or length) if d == dim else period)
                        for d, parts, stride, period in self.entries)

    def moved(self, where: Callable[[int], int | None]) -> Split | None:
        """The same split with each dim d moved to `where(d)` (dropped where None)."""
        return Split.of((new, parts, stride, period) for dim, parts, stride, period in self.entries
                        if (new := where(dim)) is not None)

    def valid(self, tp: int) -> bool:
        """Each entry a factor of the rank, disjoint from the others."""
        covered = 1
        for _, parts, stride, _ in sorted(self.entries, key=lambda entry: entry[2]):
            if parts < 2 or stride < covered or tp % (stride * parts):
                return False
            covered = stride * parts
        return True

    def fits(self, shape: Sequence[int]) -> bool:
        """Whether a value of `shape` splits so: each period divides its dim, the parts each period."""
        for dim, parts, _, period in self.entries:
            if isinstance(period, tuple):
                if dim >= len(shape) or not blocks_fit(period, parts) or not runs_fit(shape[dim], parts, period):
                    return False
                continue
            length = period or (shape[dim] if dim < len(shape) else 0)
            if dim >= len(shape) or length == 0 or shape[dim] % length or length % parts:
                return False
        return True

    def holds_part(self, part: Sequence[int]) -> bool:
        """Whether `part` is one rank's shape of a whole value this split fits (repeated
        blocks: whole runs, as many as their rank groups divide)."""
        whole = self.whole_shape(part)
        return self.fits(whole) and self.part_shape(whole) == list(part)

    def indices(self, shape: Sequence[int], rank: int) -> list[tuple[int, list[tuple[int, int]]]]:
        """Per split dim of a whole value of `shape`, the index runs `rank` holds
        along it, in order: (dim, [(start, length), ...])."""
        window = []
        for dim, parts, stride, period in self.entries:
            part = (rank // stride) % parts
            if isinstance(period, tuple):
                runs = _block_runs(shape[dim], parts, period, part)
            else:
                length = period or shape[dim]
                size = length // parts
                runs = [(start + part * size, size) for start in range(0, shape[dim], length)]
            window.append((dim, runs))
        return window

    def describe(self) -> str:
        return ", ".join(f"dim {dim} split {parts} ways"
                         + (f" in blocks {[_block_words(b, parts) for b in period]}" + _runs_words(period, parts)
                            if isinstance(period, tuple)
                            else f" in every {period}" if period else "")
                         + (f" (rank / {stride})" if stride > 1 else "")
                         for dim, parts, stride, period in self.entries)


def _block_runs(length: int, parts: int, blocks: tuple[SplitBlock, ...], part: int) -> list[tuple[int, int]]:
    """The (start, length) index runs part `part` holds of a dim of `length` split in
    repeated `blocks` (see `Split`): its group of runs, its part of each block in each."""
    inner = run_parts(blocks, parts)
    run, held = sum(map(block_size, blocks)), runs_held(length, parts, blocks)
    first = part // inner * held
    return [(at * run + start + block_rank_part(block, inner, part % inner) * block_part(block, parts),
             block_part(block, parts))
            for at in range(first, first + held) for start, block in zip(block_starts(blocks), blocks)]


def _runs_words(blocks: tuple[SplitBlock, ...], parts: int) -> str:
    """How `Split.describe` names the split of repeated blocks' runs (nothing when every part holds every run)."""
    groups = parts // run_parts(blocks, parts)
    return f" repeated, the runs split {groups} ways" if groups > 1 else ""


@irdl_attr_definition
class SplitAttr(ParametrizedAttribute):
    """`#rdu.split<(dim, parts, stride[, period]), ...>`: a `Split`; `#rdu.split<>` is a
    whole value. The period may be a list of unequal block sizes: `(2, 2, 1, [64, 32, 32])`,
    a block split into its own parts written `size:parts`: `(2, 4, 1, [64, 32:2, 32:2])`."""

    name = "rdu.split"

    entries: ArrayAttr[ArrayAttr[Attribute]]

    @staticmethod
    def of(split: Split | None) -> SplitAttr:
        entries = split.entries if split is not None else ()
        return SplitAttr(ArrayAttr(ArrayAttr(_period_attr(n) for n in (entry if entry[3] else entry[:3]))
                                   for entry in entries))

    def split(self) -> Split | None:
        return Split.of(tuple(_period_value(n) for n in entry.data) for entry in self.entries.data)

    def verify(self) -> None:
        for entry in self.entries.data:
            values = entry.data
            if len(values) not in (3, 4) or not all(isinstance(v, IntAttr) for v in values[:3]):
                raise VerifyException("a split entry is (dim, parts, stride[, period or [block sizes]])")
            dim, parts, stride = (v.data for v in values[:3])  # type: ignore[attr-defined]
            if dim < 0 or parts < 1 or stride < 1:
                raise VerifyException(f"a split entry needs dim >= 0, parts >= 1 and stride >= 1, got "
                                      f"({dim}, {parts}, {stride})")
            period = _period_value(values[3]) if len(values) == 4 else 0
            if isinstance(period, tuple) and not blocks_fit(period, parts):
                raise VerifyException(f"split blocks [{', '.join(map(_block_text, period))}] must be sizes > 0 that "
                                      f"{parts} parts divide (or < 0: held whole; size:p: split p ways, p a factor "
                                      f"of {parts}), at least one split")
            if isinstance(period, int) and period < 0:
                raise VerifyException(f"a split period must be >= 0, got {period}")

    def print_parameters(self, printer: Printer) -> None:
        entries = ("(" + ", ".join(_period_text(n) for n in entry.data) + ")" for entry in self.entries.data)
        printer.print_string("<" + ", ".join(entries) + ">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        def block() -> Attribute:
            size = parser.parse_integer()
            if parser.parse_optional_punctuation(":") is None:
                return IntAttr(size)
            return ArrayAttr((IntAttr(size), IntAttr(parser.parse_integer())))

        def value() -> Attribute:
            blocks = parser.parse_optional_comma_separated_list(parser.Delimiter.SQUARE, block)
            return ArrayAttr(blocks) if blocks is not None else IntAttr(parser.parse_integer())

        def entry_after_paren() -> ArrayAttr[Attribute]:
            values = parser.parse_comma_separated_list(parser.Delimiter.NONE, value)
            parser.parse_punctuation(")")
            if len(values) not in (3, 4) or not all(isinstance(v, IntAttr) for v in values[:3]):
                parser.raise_error("a split entry is (dim, parts, stride), (dim, parts, stride, period) "
                                   "or (dim, parts, stride, [block sizes])")
            return ArrayAttr(values)

        def optional_entry() -> ArrayAttr[Attribute] | None:
            return entry_after_paren() if parser.parse_optional_punctuation("(") else None

        def entry() -> ArrayAttr[Attribute]:
            parser.parse_punctuation("(")
            return entry_after_paren()

        with parser.in_angle_brackets():
            entries = parser.parse_optional_undelimited_comma_separated_list(optional_entry, entry) or []
        return [ArrayAttr(entries)]


def _period_attr(value: Period) -> Attribute:
    if not isinstance(value, tuple):
        return IntAttr(value)
    return ArrayAttr(ArrayAttr((IntAttr(b[0]), IntAttr(b[1]))) if isinstance(b, tuple) else IntAttr(b) for b in value)


def _block_value(attr: Attribute) -> SplitBlock:
    if isinstance(attr, ArrayAttr):
        size, parts = (b.data if isinstance(b, IntAttr) else 0 for b in attr.data)
        return size, parts
    assert isinstance(attr, IntAttr)
    return attr.data


def _period_value(attr: Attribute) -> Period:
    if isinstance(attr, ArrayAttr):
        return tuple(_block_value(b) for b in attr.data)
    assert isinstance(attr, IntAttr)
    return attr.data


def _block_text(block: SplitBlock) -> str:
    return f"{block[0]}:{block[1]}" if isinstance(block, tuple) else str(block)


def _block_words(block: SplitBlock, parts: int) -> str | int:
    """How `Split.describe` names a block."""
    if isinstance(block, tuple):
        return f"{block[0]} split {block[1]} ways"
    return block if block > 0 else f"{-block} held whole"


def _period_text(attr: Attribute) -> str:
    value = _period_value(attr)
    return "[" + ", ".join(map(_block_text, value)) + "]" if isinstance(value, tuple) else str(value)
