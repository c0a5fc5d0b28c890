"""The compile driver: archive to level-1 IR, stage by stage, with timings."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException

from xdsl.passes import ModulePass

from rducc.errors import RduccError
from rducc.dialects.contracts import set_target
from rducc.pipeline import IRBrokenError, default_passes, run_passes, verify_after
from rducc.targets import Target
from rducc.frontend.importer import decompose, import_program
from rducc.frontend.loader import load_exported_program


@dataclass
class StageTimes:
    """Wall-clock seconds per compile stage, in the order they ran.

    `progress`, when set, is told the name of each stage (and pass) as it
    starts, with the seconds since the first one started.
    """

    seconds: dict[str, float] = field(default_factory=dict)
    progress: Callable[[str, float], None] | None = None
    started: float = field(default_factory=time.perf_counter)

    def starting(self, name: str) -> None:
        if self.progress is not None:
            self.progress(name, time.perf_counter() - self.started)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.starting(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    def report(self) -> str:
        total = sum(self.seconds.values())
        rows = [f"  {name:<18} {secs:8.3f} s" for name, secs in self.seconds.items()]
        return "\n".join(["rducc: time by stage", *rows, f"  {'total':<18} {total:8.3f} s"])


def verify(module: ModuleOp) -> None:
    """Verify the module; a failure here is a bug in rducc, reported as such."""
    try:
        module.verify()
    except DiagnosticException as error:
        raise AssertionError(f"rducc produced IR that does not verify: {error}") from error


def decompose_and_import(
    program: torch.export.ExportedProgram, times: StageTimes | None = None, f64: str = "emulate",
    outline_layers: bool = False,
) -> tuple[ModuleOp, torch.export.ExportedProgram]:
    """Verified level-1 IR and the Core ATen program it came from (`f64`: the f64
    policy; `outline_layers`: import identical decoder layers once, as
    `rdu-outline-layers` would outline them, see `outlines_at_import`)."""
    times = times or StageTimes()
    with times.stage("decompose"):
        program = decompose(program)
    with times.stage("import"):
        module = import_program(program, f64, outline_layers)
    with times.stage("verify"):
        verify(module)
    return module, program


def import_exported(
    program: torch.export.ExportedProgram, times: StageTimes | None = None
) -> ModuleOp:
    """Decompose to Core ATen and import to verified level-1 IR."""
    return decompose_and_import(program, times)[0]


def import_file(
    path: str | Path, times: StageTimes | None = None, f64: str = "emulate", outline_layers: bool = False
) -> tuple[ModuleOp, torch.export.ExportedProgram]:
    """Load a saved archive and import it; also return the decomposed program."""
    times = times or StageTimes()
    with times.stage("load"):
        program = load_exported_program(path)
    return decompose_and_import(program, times, f64, outline_layers)


def outlines_at_import(target: Target, emit: str = "placed", passes: Sequence[ModulePass] | None = None) -> bool:
    """Whether the import may outline identical layers itself: the pipeline `lower`
    will run is an -O one (which runs `rdu-outline-layers` right after
    `rdu-canonicalize`, giving the same IR) past the graph level, on one socket
    (`rdu-partition` runs before the outlining and splits the inline layers)."""
    return passes is None and emit != "graph" and target.sockets == 1


def with_partition(passes: Sequence[ModulePass], tp: int = 0, pp: int = 0) -> list[ModulePass]:
    """The -O pipeline for a multi-socket target: `rdu-partition{tp pp}` right after
    `rdu-canonicalize` (0: the split chosen by the cost model)."""
    from rducc.passes.rdu_partition import RduPartition

    names = [p.name for p in passes]
    at = names.index("rdu-canonicalize") + 1 if "rdu-canonicalize" in names else 0
    return [*passes[:at], RduPartition(tp=tp, pp=pp), *passes[at:]]


def lower(
    module: ModuleOp, target: Target, opt_level: int = 2, emit: str = "placed",
    times: StageTimes | None = None, *, passes: Sequence[ModulePass] | None = None,
    verify_each: bool = False, split: tuple[int, int] = (0, 0),
) -> None:
    """Run the -O pipeline up to `emit` (or the given `passes` instead), timing
    each pass as its own stage. With `verify_each` the IR is verified after
    every pass; a pass that breaks it is named in the error. `split` is the
    (tp, pp) of a multi-socket target's rdu-partition (0: the cost model's)."""
    times = times or StageTimes()
    set_target(module, target)
    chosen = default_passes(opt_level, emit) if passes is None else list(passes)
    if passes is None and target.sockets > 1:
        chosen = with_partition(chosen, *split)
    clock = [time.perf_counter()]

    def between_passes(previous: ModulePass | None, _module: ModuleOp, following: object) -> None:
        now = time.perf_counter()
        if previous is not None:
            times.seconds[previous.name] = times.seconds.get(previous.name, 0.0) + now - clock[0]
        if isinstance(following, ModulePass):
            times.starting(following.name)
        clock[0] = now

    run_passes(module, chosen, verify_each=verify_each, callback=between_passes)
    with times.stage("verify"):
        if passes is None:
            verify(module)  # rducc's own pipeline: IR that does not verify is a bug
        else:
            _verify_user_pipeline(module, verify_each)


def _verify_user_pipeline(module: ModuleOp, verified_each: bool) -> None:
    if verified_each:
        return  # verified after every pass already
    try:
        verify_after(None, module)
    except IRBrokenError as error:
        raise IRBrokenError(f"{error}\n(rerun with --verify-each to name the pass that broke it)") from error


def module_text(module: ModuleOp, locations: bool = True) -> str:
    """The module as MLIR text, with `loc(...)` on every op unless told not to."""
    from io import StringIO

    stream = StringIO()
    Printer(stream=stream, print_debuginfo=locations).print_op(module)
    stream.write("\n")
    return stream.getvalue()


__all__ = ["StageTimes", "import_exported", "import_file", "module_text", "RduccError"]
