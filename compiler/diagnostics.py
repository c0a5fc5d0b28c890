"""Located error messages: `file:line:col: error: message`, MLIR style."""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc, NameLoc
from xdsl.ir import Attribute, Operation

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
