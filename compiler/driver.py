"""The compile driver: a torch.export program to lowered IR and its weights,
stage by stage, with timings. `rducc`, `rducc.compile` and the torch.compile
backend all compile through `compile_module`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException

from rducc.dialects.contracts import set_target
from rducc.dialects.unchanged import unchanged
from rducc.errors import RduccError
from rducc.frontend.dynamic_dims import dynamic_dims, dynamic_help, is_dynamic
from rducc.frontend.f64 import demote_weights
from rducc.frontend.importer import decompose, import_program
from rducc.frontend.loader import load_exported_program
from rducc.pipeline import (
    IRBrokenError,
    PipelineEdit,
    available_passes,
    default_passes,
    edit_pipeline,
    parse_passes,
    run_passes,
    verify_after,
)
from rducc.targets import DEFAULT_TARGET, Target, load_target
from rducc.weights import program_weights


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
        with unchanged():  # verifiers read the IR: what they share (a block's SRAM sweep) is worked out once
            module.verify()
    except DiagnosticException as error:
        raise AssertionError(f"rducc produced IR that does not verify: {error}") from error


def decompose_and_import(
    program: torch.export.ExportedProgram, times: StageTimes | None = None, f64: str = "emulate",
    outline_layers: bool = False, host_ops: bool = True, capacity: int | None = None,
) -> tuple[ModuleOp, torch.export.ExportedProgram]:
    """Verified level-1 IR and the Core ATen program it came from (`f64`: the f64
    policy; `outline_layers`: import identical decoder layers once, as
    `rdu-outline-layers` would outline them, see `outlines_at_import`;
    `host_ops`: ops with no chip lowering run on the host, see `rducc.frontend.host_ops`;
    `capacity`: the bound on each per-expert count, see `rducc.frontend.capacity`)."""
    times = times or StageTimes()
    if is_dynamic(program):  # compiled per size by rducc.shapes (--shapes)
        raise RduccError(dynamic_help(dynamic_dims(program)))
    with times.stage("decompose"):
        program = decompose(program, capacity)
    with times.stage("import"):
        module = import_program(program, f64, outline_layers, host_ops)
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


def outlines_at_import(passes: Sequence[ModulePass]) -> bool:
    """Whether the import may outline identical layers itself, for rducc's own
    pipeline `passes`: they run `rdu-outline-layers` right after
    `rdu-canonicalize`, whose folds across a layer's boundary the import asks
    its patterns about (`rducc.frontend.layer_reuse`), so the import gives the
    IR they would. (Not at the graph level, which runs no pass, nor with
    `rdu-partition` first, which splits the inline layers.)"""
    return [p.name for p in passes[:2]] == ["rdu-canonicalize", "rdu-outline-layers"]


def lower(
    module: ModuleOp, target: Target, opt_level: int = 2, emit: str = "placed",
    times: StageTimes | None = None, *, passes: Sequence[ModulePass] | None = None,
    verify_each: bool = False, split: tuple[int, ...] = (0, 0),
) -> None:
    """Run the -O pipeline up to `emit` (or the given `passes` instead), timing
    each pass as its own stage. With `verify_each` the IR is verified after
    every pass; a pass that breaks it is named in the error. `split` is the
    (tp, pp) or (tp, pp, dp) of a multi-socket target's rdu-partition (0: the cost model's)."""
    own = passes is None
    chosen = default_passes(opt_level, emit, target.sockets, split) if passes is None else list(passes)
    _run_pipeline(module, target, chosen, own, times or StageTimes(), verify_each)


def _run_pipeline(
    module: ModuleOp, target: Target, passes: Sequence[ModulePass], own: bool, times: StageTimes, verify_each: bool
) -> None:
    """Run `passes` (rducc's `own` -O pipeline, or a user's) on `module` for `target`."""
    set_target(module, target)
    clock = [time.perf_counter()]

    def between_passes(previous: ModulePass | None, _module: ModuleOp, following: object) -> None:
        now = time.perf_counter()
        if previous is not None:
            times.seconds[previous.name] = times.seconds.get(previous.name, 0.0) + now - clock[0]
        if isinstance(following, ModulePass):
            times.starting(following.name)
        clock[0] = now

    run_passes(module, passes, verify_each=verify_each, callback=between_passes)
    with times.stage("verify"):
        if own:
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


PassesLike = str | Sequence[ModulePass] | Sequence[PipelineEdit]
"""A pipeline to run instead of the -O one: pipeline text or pass instances (the
whole pipeline), or `rducc.api.before/after` edits (inserted into the -O pipeline)."""


def resolve_passes(
    passes: PassesLike | None, opt_level: int = 2, plugin_files: Sequence[str | Path] | None = None
) -> list[ModulePass] | None:
    """The passes to run instead of the -O pipeline, or None to run the -O one.
    `plugin_files`, when given, are loaded (and checked, with the installed
    plugins) first, even for the -O pipeline; pipeline text may name their passes."""
    registry = None if plugin_files is None else available_passes(plugin_files)
    if passes is None:
        return None
    if isinstance(passes, str):
        return parse_passes(passes, registry)
    items = list(passes)
    if items and all(isinstance(p, PipelineEdit) for p in items):
        return edit_pipeline(default_passes(opt_level), items)  # type: ignore[arg-type]
    if all(isinstance(p, ModulePass) for p in items):
        return items  # type: ignore[return-value]
    raise RduccError(
        "passes= takes pipeline text, a list of ModulePass instances (the whole pipeline), "
        "or a list of rducc.api.before(...)/after(...) edits of the -O pipeline, not a mix"
    )


@dataclass
class CompileOptions:
    """How to compile: the target, the pipeline and the policies of one compile."""

    target: str | Target = DEFAULT_TARGET
    opt_level: int = 2
    emit: str = "placed"
    """The IR level the -O pipeline stops at."""
    passes: Sequence[ModulePass] | None = None
    """Passes to run instead of the -O pipeline (see `resolve_passes`)."""
    split: tuple[int, ...] = (0, 0)
    """(tp, pp) or (tp, pp, dp) of a multi-socket target's rdu-partition; 0: the cost model's."""
    f64: str = "emulate"
    """The f64 policy (`rducc.frontend.f64`): emulate, refuse or demote."""
    verify_each: bool = False
    times: StageTimes = field(default_factory=StageTimes)
    """Where each stage's seconds go (and its progress hook)."""
    host_ops: bool = True
    """Run ops with no chip lowering on the host CPU (`rdu.host_call`); False refuses them."""
    capacity: int | None = None
    """The most rows a data-dependent per-expert count is compiled for (`rducc.frontend.capacity`);
    None: the bound torch.export recorded (every token to one expert)."""


@dataclass
class CompileResult:
    """A compiled module, the Core ATen program it came from and its weights."""

    module: ModuleOp
    target: Target
    exported: torch.export.ExportedProgram
    """The program as given (or loaded), before decomposition."""
    decomposed: torch.export.ExportedProgram
    weights: dict[str, torch.Tensor]
    """The weights by global name, as the module computes with them (demoted under f64=demote)."""


def compile_module(
    source: torch.export.ExportedProgram | str | Path, options: CompileOptions | None = None
) -> CompileResult:
    """Load (a path), decompose, import and lower a program; collect its weights."""
    options = options or CompileOptions()
    target = load_target(options.target)
    times = options.times
    if isinstance(source, str | Path):
        with times.stage("load"):
            source = load_exported_program(source)
    own = options.passes is None
    passes = default_passes(options.opt_level, options.emit, target.sockets, options.split) if own else options.passes
    assert passes is not None
    module, decomposed = decompose_and_import(
        source, times, options.f64, own and outlines_at_import(passes), options.host_ops, options.capacity
    )
    _run_pipeline(module, target, passes, own, times, options.verify_each)
    weights = program_weights(decomposed)
    if options.f64 == "demote":
        weights = demote_weights(weights)
    return CompileResult(module, target, source, decomposed, weights)


def module_text(module: ModuleOp, locations: bool = True) -> str:
    """The module as MLIR text, with `loc(...)` on every op unless told not to."""
    from io import StringIO

    stream = StringIO()
    Printer(stream=stream, print_debuginfo=locations).print_op(module)
    stream.write("\n")
    return stream.getvalue()


__all__ = [
    "CompileOptions",
    "CompileResult",
    "PassesLike",
    "RduccError",
    "StageTimes",
    "compile_module",
    "import_exported",
    "import_file",
    "module_text",
    "resolve_passes",
]
