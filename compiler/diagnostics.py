"""Located error messages: `file:line:col: error: message`, MLIR style."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, TypeVar, cast

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, NameLoc
from xdsl.frontend.mlir import MLIRFrontend
from xdsl.ir import Attribute, Operation, TypeAttribute
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Position
from xdsl.utils.mlir_lexer import MLIRTokenKind

from rducc.errors import RduccError

T = TypeVar("T")
A = TypeVar("A", bound=Attribute | None)


def format_location(location: Attribute) -> str | None:
    """`file:line:col` (or the name of a name location), if the op has one."""
    if isinstance(location, FileLineColLoc):
        return f"{location.filename.data}:{location.line.data}:{location.column.data}"
    if isinstance(location, NameLoc):
        inner = format_location(location.location)
        return inner or location.desc.data
    return None


class LocatedError(RduccError):
    """A user-facing error about one op, prefixed with its source location."""

    def __init__(self, op: Operation, message: str):
        where = format_location(op.location)
        super().__init__(f"{where}: error: {message}" if where else message)
        self.op = op


def first_invalid_op(module: Operation) -> tuple[Operation, Exception] | None:
    """The first op (in walk order) whose own verifier fails, with its error."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception as error:  # noqa: BLE001 - any verifier failure counts
            return op, error
    return None


def op_headline(op: Operation, limit: int = 240) -> str:
    """The op's first printed line (its header, without a region body), shortened."""
    from io import StringIO

    from xdsl.printer import Printer

    stream = StringIO()
    try:
        Printer(stream=stream).print_op(op)
    except Exception:  # noqa: BLE001 - a broken op may not print
        return op.name
    line = stream.getvalue().splitlines()[0] if stream.getvalue() else op.name
    return line if len(line) <= limit else line[: limit - 3] + "..."


def describe_verify_failure(module: Operation, error: Exception) -> str:
    """`file:line:col: error: message` and the failing op, for a module that does not verify."""
    found = first_invalid_op(module)
    if found is None:
        return f"error: {str(error).strip()}"
    op, op_error = found
    where = format_location(op.location) or "<no location: the op was created without one>"
    return f"{where}: error: {str(op_error).strip()}\n  {op_headline(op)}"


def user_frame(error: BaseException, cls: type) -> str | None:
    """`file:line` of the innermost traceback frame in the file that defines `cls`."""
    import inspect
    import traceback

    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        return None
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == source]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


def format_parse_error(error: ParseError) -> str:
    """An xDSL parse error as `file:line:col: error: message`, then the source line
    with carets under the offending text (what xDSL prints, reordered MLIR-style)."""
    where = error.span.get_location()
    context = error.span.print_with_context().splitlines()[1:]  # drop xDSL's location line
    text = str(error)
    extra = text[text.find(error.msg) + len(error.msg):].strip() if error.msg in text else ""
    lines = [f"{where}: error: {error.msg.strip()}", *context]
    return "\n".join(lines + ([extra] if extra else []))


MAX_SPLAT_ELEMENTS = 1 << 26
"""The largest `dense<v> : tensor<...>` splat the MLIR tools accept (64 Mi
elements): xDSL's parser expands a splat into one Python object an element,
so a mistyped shape (`tensor<999999999999xf32>`) would exhaust memory or run
for minutes. Real programs keep large weights in the sidecar, not inline."""

_SPLAT = re.compile(r"dense<\s*([^\[\]<>]*?)\s*>\s*:\s*(?:tensor|vector)<((?:\d+x)+)")


def check_splat_sizes(text: str, filename: str, first_line: int = 0) -> None:
    """Refuse a dense splat larger than MAX_SPLAT_ELEMENTS, located, before parsing."""
    for match in _SPLAT.finditer(text):
        elements = 1
        for dim in match.group(2).rstrip("x").split("x"):
            elements *= int(dim)
        if elements > MAX_SPLAT_ELEMENTS:
            line = text.count("\n", 0, match.start()) + 1 + first_line
            column = match.start() - text.rfind("\n", 0, match.start())
            raise RduccError(
                f"{filename}:{line}:{column}: error: a dense splat of {elements} elements is too large "
                f"(at most {MAX_SPLAT_ELEMENTS}); keep large constants out of the MLIR text"
            )


_ESCAPES = frozenset('"nt\\')
_HEX = frozenset("0123456789abcdefABCDEF")


def _string_problem(line: str) -> tuple[int, str] | None:
    """(column, problem) of the first bad string literal on one line, if any."""
    index, opened = 0, -1
    while index < len(line):
        char = line[index]
        if opened < 0:
            if line.startswith("//", index):
                return None
            if char == '"':
                opened = index
        elif char == '"':
            opened = -1
        elif char in "\v\f":
            return index + 1, "a string literal holds a vertical tab or form feed"
        elif char == "\\":
            follow = line[index + 1 : index + 3]
            if follow[:1] in _ESCAPES:
                index += 1
            elif len(follow) == 2 and set(follow) <= _HEX:
                index += 2
            else:
                return index + 1, f"invalid escape '\\{follow[:1]}' in a string literal"
        index += 1
    return (opened + 1, "a string literal is not closed on its line") if opened >= 0 else None


def check_string_literals(text: str, filename: str, first_line: int = 0) -> None:
    """Refuse an unclosed string literal or a bad escape, located, before parsing:
    xDSL's lexer backtracks exponentially on them (a long line takes minutes)."""
    for number, line in enumerate(text.split("\n"), start=1 + first_line):
        problem = _string_problem(line)
        if problem is not None:
            raise RduccError(f"{filename}:{number}:{problem[0]}: error: {problem[1]}")


MAX_NESTING = 64
"""The deepest nesting of brackets, braces, parentheses and angle brackets the
MLIR text may have: xDSL's recursive parser, verifier and printer exhaust
Python's stack near 100 levels; real programs nest about 10 deep."""
MAX_INTEGER_DIGITS = 100
"""The longest integer literal (2^256 has 78 digits; Python refuses to convert
more than 4300)."""

_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*')
_NESTING_TOKEN = re.compile(r"->|[\[{(<]|[\]})>]|\d{" + str(MAX_INTEGER_DIGITS + 1) + ",}")


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def check_nesting_and_integers(text: str, filename: str, first_line: int = 0) -> None:
    """Refuse nesting deeper than MAX_NESTING and integer literals longer than
    MAX_INTEGER_DIGITS, located, before xDSL recurses or converts them."""
    code = _STRING_OR_COMMENT.sub(_blank, text)  # same length: columns stay right
    depth = 0
    for match in _NESTING_TOKEN.finditer(code):
        token = match.group(0)
        problem = None
        if token[0].isdigit():
            problem = f"an integer literal of {len(token)} digits (at most {MAX_INTEGER_DIGITS})"
        elif token in "[{(<":
            depth += 1
            if depth > MAX_NESTING:
                problem = f"nesting deeper than {MAX_NESTING} levels (brackets, braces, regions, types)"
        elif token != "->":
            depth -= 1
        if problem is not None:
            line = code.count("\n", 0, match.start()) + 1 + first_line
            column = match.start() - code.rfind("\n", 0, match.start())
            raise RduccError(f"{filename}:{line}:{column}: error: {problem}")


_DENSE_LITERAL = re.compile(
    r"dense<(\[[-+0-9.eE,\t \[\]]*\])>(\s*:\s*tensor<((?:\d+x)+)(f16|f32|f64|i8|i16|i32|i64)>)"
)
_DENSE_DTYPES = {"f16": "<f2", "f32": "<f4", "f64": "<f8", "i8": "<i1", "i16": "<i2", "i32": "<i4", "i64": "<i8"}
MIN_COMPACTED_CHARS = 65536
"""Dense literals longer than this are read by numpy, not by xDSL's parser, which
keeps a few hundred bytes of Python objects per element (a 15 MB literal took
1.7 GB and minutes): they are rewritten to the hex form xDSL reads as bytes."""


def _brackets(shape: list[int]) -> str:
    """The bracket skeleton of a nested literal of this shape: [2, 3] -> '[[][]]'."""
    return "" if not shape else "[" + _brackets(shape[1:]) * shape[0] + "]"


def _dense_hex(body: str, shape: list[int], element: str) -> str | None:
    """The little-endian hex bytes of a nested numeric literal, or None when it is
    not exactly a literal of this shape and type (xDSL's parser then reports it)."""
    import numpy as np

    if re.sub(r"[^\[\]]", "", body) != _brackets(shape):
        return None
    values = re.sub(r"[\[\]\s]", "", body).split(",")
    if len(values) != math.prod(shape):
        return None
    dtype = np.dtype(_DENSE_DTYPES[element])
    try:
        if dtype.kind == "f":
            array = np.array(values, dtype=np.float64).astype(dtype)
        else:
            wide = np.array(values, dtype=np.int64)
            info = np.iinfo(dtype)
            if wide.min() < info.min or wide.max() > info.max:
                return None
            array = wide.astype(dtype)
    except (ValueError, OverflowError):
        return None
    return array.tobytes().hex().upper()


def compact_dense_literals(text: str) -> str:
    """The text with every long one-line numeric dense literal in hex form
    (same values, same lines): xDSL then parses it as bytes."""
    if "dense<[" not in text:
        return text
    pieces: list[str] = []
    last = 0
    for match in _DENSE_LITERAL.finditer(text):
        body = match.group(1)
        if len(body) < MIN_COMPACTED_CHARS or "\n" in body:
            continue
        shape = [int(d) for d in match.group(3).rstrip("x").split("x")]
        hexed = _dense_hex(body, shape, match.group(4))
        if hexed is not None:
            pieces += [text[last:match.start()], f'dense<"0x{hexed}">', match.group(2)]
            last = match.end()
    return "".join(pieces) + text[last:] if pieces else text


def check_mlir_text(text: str, filename: str, first_line: int = 0) -> None:
    """What xDSL's parser would choke on rather than report: refused here, located."""
    check_string_literals(text, filename, first_line)
    check_splat_sizes(text, filename, first_line)
    check_nesting_and_integers(text, filename, first_line)


class LocatedParser(Parser):
    """xDSL's parser, with a type constraint that fails while an op's assembly
    format is read (`STATIC_TENSOR` on `tensor<?x8xf32>`) reported as a parse
    error at that op's first line, `file:line:col` and caret, instead of a bare
    VerifyException that names no place in the text."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_before: dict[tuple[str, str], Attribute] = {}

    def _remembered(self, kind: str, start: Position, angle: Position, parse: Callable[[], A]) -> A:
        """The attribute `parse` reads from `start`, whose `<` at `angle` opens a balanced body: read
        once per distinct text (an attribute is immutable, so one serves every place it is spelt),
        later spellings skipped without lexing them. A placed program spells `tensor<4x8xf32>` and
        `!tier.buffer<sram, 4x8xf32>` thousands of times. What is read, and every error, is xDSL's."""
        content = self.lexer.input.content
        try:
            close = self._raw_scan_balanced(angle + 1)
        except ParseError:  # unbalanced: xDSL's own reading reports it
            return parse()
        key = (kind, content[start:close + 1])
        if (known := self._read_before.get(key)) is not None:
            self._resume_from(close + 1)
            return cast(A, known)
        parsed = parse()
        if parsed is not None and not content[close + 1:self._current_token.span.start].strip():  # read exactly that
            self._read_before[key] = parsed
        return parsed

    def _parse_dialect_type_or_attribute_body(self, attr_name: str, is_type: bool, is_opaque: bool,
                                              starting_opaque_pos: Position | None) -> Attribute:
        """xDSL's reading of a dialect attribute's `<body>`, each distinct text read once (`_remembered`)."""
        def parse() -> Attribute:
            return super(LocatedParser, self)._parse_dialect_type_or_attribute_body(
                attr_name, is_type, is_opaque, starting_opaque_pos)

        if "." not in attr_name or starting_opaque_pos is not None or self._current_token.text != "<":
            return parse()
        start = self._current_token.span.start
        return self._remembered(f"{'!' if is_type else '#'}{attr_name}", start, start, parse)

    def _parse_optional_builtin_parametrized_type(self) -> TypeAttribute | None:
        """xDSL's reading of `tensor<...>` (and vector, memref, ...), each distinct text read once."""
        token = self._current_token
        parse = super()._parse_optional_builtin_parametrized_type
        if token.kind != MLIRTokenKind.BARE_IDENT or self.lexer.input.content[token.span.end:token.span.end + 1] != "<":
            return parse()
        return self._remembered("builtin", token.span.start, token.span.end, parse)

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        try:
            return super().parse_operation()
        except VerifyException as error:
            content = self.lexer.input.content
            line_end = content.find("\n", start)
            self.raise_error(str(error).strip(), start, line_end if line_end > start else self.pos)


@dataclass(frozen=True)
class LocatedMLIRFrontend(MLIRFrontend):
    """xDSL's MLIR frontend (rducc-opt's `-f mlir`) reading with `LocatedParser`."""

    def parse(self, ctx: Context, input: IO[bytes], input_name: str = "input") -> ModuleOp:
        return LocatedParser(ctx, input.read(), input_name).parse_module(not self.no_implicit_module)


def parse_guarded(parse: Callable[[], T], filename: str, text: str | None = None,
                  position: Callable[[], int] | None = None,
                  passthrough: tuple[type[Exception], ...] = ()) -> T:
    """Run xDSL's parser on a user's text: a ParseError stays one (the callers
    format it, located); any other exception the parser raises on hostile text
    (struct.error packing an out-of-range array element, a VerifyException from
    an attribute built while parsing, OverflowError, ...) is the text's fault,
    so it is one `FILE[:LINE:COL]: error:` line naming what xDSL refused (located
    at the parser's `position` in `text` when given), not an internal error.
    `passthrough`: exceptions the caller reports itself (rducc-opt: xDSL's
    diagnostics, which --verify-diagnostics prints and matches)."""
    reraised: tuple[type[BaseException], ...] = (ParseError, RduccError, RecursionError, MemoryError,
                                                 *passthrough)
    try:
        return parse()
    except reraised:
        raise
    except Exception as error:  # noqa: BLE001 - the parser's own failure on this input
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        where = filename
        if text is not None and position is not None:
            offset = min(position(), len(text))
            line = text.count("\n", 0, offset) + 1
            where = f"{filename}:{line}:{offset - text.rfind(chr(10), 0, offset)}"
        raise RduccError(f"{where}: error: cannot parse the program: {reason}") from error
