"""Source locations of FX nodes: the user's line that created each node
(the innermost frame of its stack trace outside torch), as an MLIR location
and as text for messages.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, LocationAttr, NameLoc, NoneAttr, StringAttr

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n?([ \t]*)([^\n]*)')
"""One traceback frame: file, line, the code line's indent and its text."""


@dataclass(frozen=True)
class SourceLine:
    """Where in the user's Python an FX node came from."""

    file: str
    line: int
    column: int
    code: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


_TORCH_DIR = str(Path(torch.__file__).parent) + os.sep


_INSTALLED_TORCH = re.compile(r"[/\\](?:site|dist)-packages[/\\]torch[/\\]")


def _in_torch(file: str) -> bool:
    """A frame inside torch itself: this torch, or the one that exported the archive."""
    return file.startswith(_TORCH_DIR) or _INSTALLED_TORCH.search(file) is not None


@lru_cache(maxsize=4096)
def _innermost_frame(stack_trace: str) -> SourceLine | None:
    """The innermost frame of model code: frames inside torch itself are skipped."""
    frames = _FRAME.findall(stack_trace)
    model_frames = [f for f in frames if not _in_torch(f[0])] or frames
    if not model_frames:
        return None
    file, line, _, code = model_frames[-1]
    return SourceLine(file, int(line), _statement_column(file, int(line)), code.strip())


def _statement_column(file: str, line: int) -> int:
    """1-based column where the statement starts (tracebacks re-indent their code lines)."""
    text = linecache.getline(file, line)
    return len(text) - len(text.lstrip()) + 1 if text.strip() else 1


def trace_line(trace: str) -> SourceLine | None:
    """The innermost frame of model code in a formatted stack trace (as
    autograd's anomaly mode prints a backward error's forward call)."""
    return _innermost_frame(trace)


def source_line(node: torch.fx.Node) -> SourceLine | None:
    """The innermost frame of the node's stack trace, if it has one (a trace that
    is not text, as an edited archive may hold, is no location)."""
    trace = node.meta.get("stack_trace")
    return _innermost_frame(trace) if isinstance(trace, str) and trace else None


def location_of(node: torch.fx.Node) -> LocationAttr:
    """`loc("file.py":LINE:COL)` from the stack trace, else `loc("node_name")`."""
    where = source_line(node)
    if where is None:
        return NameLoc(StringAttr(node.name), NoneAttr())
    return FileLineColLoc(StringAttr(where.file), IntAttr(where.line), IntAttr(where.column))


def describe_location(node: torch.fx.Node) -> str:
    """`file:line:col (code)` for messages, or the node name."""
    where = source_line(node)
    if where is None:
        return f"node {node.name} (no source location)"
    return f"{where}: {where.code}" if where.code else str(where)




class _StackTraceReplay(torch.fx.Interpreter):
    """Runs a graph node by node with each node's stack trace current (torch's
    `preserve_node_meta` state, which a trace reads for the nodes it records).
    Only the stack trace: the rest of the meta (the module stack, which decides
    layers and torch.nn's training-mode refusals) stays the trace's own."""

    @contextlib.contextmanager
    def _set_current_node(self, node: torch.fx.Node) -> Iterator[None]:
        trace = node.meta.get("stack_trace")
        torch.fx.traceback.set_stack_trace([trace] if isinstance(trace, str) else [])
        yield


def replay(graph: torch.fx.GraphModule, *args: Any) -> Any:
    """`graph(*args)`, run so that a trace of the call records, for each node
    it makes, the stack trace of the node of `graph` that made it (the user's
    line), not the line of `graph`'s generated code (`<eval_with_key>`)."""
    with torch.fx.traceback.preserve_node_meta():
        return _StackTraceReplay(graph).run(*args)
