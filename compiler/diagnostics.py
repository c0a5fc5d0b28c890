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
