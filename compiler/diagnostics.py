"""Located error messages: `file:line:col: error: message`, MLIR style."""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc, NameLoc
from xdsl.ir import Attribute, Operation
from xdsl.utils.exceptions import ParseError

from rducc.errors import RduccError


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


def format_parse_error(error: ParseError) -> str:
    """An xDSL parse error as `file:line:col: error: message`, then the source line
    with carets under the offending text (what xDSL prints, reordered MLIR-style)."""
    where = error.span.get_location()
    context = error.span.print_with_context().splitlines()[1:]  # drop xDSL's location line
    text = str(error)
    extra = text[text.find(error.msg) + len(error.msg):].strip() if error.msg in text else ""
    lines = [f"{where}: error: {error.msg.strip()}", *context]
    return "\n".join(lines + ([extra] if extra else []))
