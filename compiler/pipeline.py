"""The pass pipelines, in one place, and the runner every tool uses.

    -O0   every op its own kernel (the unfused baseline)
    -O1   pattern fusion (matmul + epilogue, norm + matmul, attention chain)
    -O2   fusion up to whole decoder layers, as much as fits (the default)

Each pipeline runs the levels of the architecture in order:

    graph   --rdu-canonicalize, rdu-outline-layers, rdu-split-contraction, cse, rdu-fuse,
              rdu-merge-maps-->  kernels
    kernels --rdu-place-saved, rdu-tile, rdu-place-tiers, rdu-insert-dma-->   memory
    memory  --rdu-sram-alloc, rdu-map-units-->              placed (and mapped onto units)

A pipeline can also be given as text in xDSL's syntax
(`rdu-canonicalize,my-pass{k=2},rdu-fuse`), edited by inserting passes
`before`/`after` a named one, and may name the passes of plugin files
(`rducc.plugins`) and of installed packages' `xdsl.universe` entry points.
`run_passes` runs one, naming the pass at fault when a pass fails or leaves
IR that does not verify.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipelineCallbackType
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

from rducc.dialects.contracts import Level, set_target
from rducc.dialects.unchanged import unchanged
from rducc.errors import RduccError
from rducc.passes import ALL_PASSES
from rducc.targets import Target

PassFactory = Callable[[], type[ModulePass]]

LEVELS = tuple(level.value for level in Level)
"""IR levels by name, in pipeline order (`Level`); `--emit` stops at one of them."""

STAGES: dict[str, list[str]] = {
    "kernels": ["rdu-canonicalize", "rdu-outline-layers", "rdu-split-contraction", "cse", "rdu-fuse{level=%(opt)d}",
                "rdu-merge-maps"],
    "memory": ["rdu-place-saved", "rdu-tile", "rdu-place-tiers", "rdu-insert-dma{keep_on_chip=%(keep)s}"],
    "placed": ["rdu-sram-alloc", "rdu-map-units"],
}
"""The passes that take the IR to each level from the one before it."""


def pipeline_text(opt_level: int = 2, emit: str = "placed", sockets: int = 1, split: tuple[int, ...] = (0, 0)) -> str:
    """The pipeline as xDSL pipeline text, e.g. for `rducc-opt -p`; for a target
    of several `sockets`, with `rdu-partition` and the (tp, pp), (tp, pp, dp) or
    (tp, pp, dp, ep) `split` in it."""
    if opt_level not in (0, 1, 2):
        raise ValueError(f"opt level must be 0, 1 or 2, got {opt_level}")
    if emit not in LEVELS:
        raise ValueError(f"emit level must be one of {', '.join(LEVELS)}, got {emit}")
    passes: list[str] = []
    for level in LEVELS[1 : LEVELS.index(emit) + 1]:
        keep = "false" if opt_level == 0 else "true"  # -O0 is the unfused baseline
        passes.extend(p % {"opt": opt_level, "keep": keep} for p in STAGES[level])
    if sockets > 1:
        passes = with_partition(passes, *split)
    return ",".join(passes)


def with_partition(passes: Sequence[str], tp: int = 0, pp: int = 0, dp: int = 0, ep: int = 0,
                   zero: int = 0, sequence_parallel: int = 0) -> list[str]:
    """A pipeline for a multi-socket target: `rdu-partition{tp pp dp ep}` right after
    `rdu-canonicalize` (first when there is none; 0: the split the cost model picks;
    `zero`: the ZeRO stage over the dp replicas; `sequence_parallel`: the
    activations between tp's regions split along their tokens),
    with `rdu-outline-layers` moved between them when the pipeline has it: the
    identical decoder layers are outlined first (by the importer, see
    `rducc.driver.outlines_at_import`) and so partitioned once, not once a layer."""
    options = " ".join(f"{name}={n}" for name, n in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep)) if n)
    options += f" zero={zero}" if zero else ""  # the ZeRO stage over the dp replicas
    options += " sequence_parallel=true" if sequence_parallel else ""  # tp's activations split by tokens
    partition = f"rdu-partition{{{options}}}" if options else "rdu-partition"
    outline = [p for p in passes if p == "rdu-outline-layers"]
    rest = [p for p in passes if p != "rdu-outline-layers"]
    at = rest.index("rdu-canonicalize") + 1 if "rdu-canonicalize" in rest else 0
    return [*rest[:at], *outline, partition, *rest[at:]]


# -- which passes a pipeline can name ----------------------------------------


def installed_passes() -> dict[str, PassFactory]:
    """Passes of every installed `xdsl.universe` entry point (xDSL's own included)."""
    from xdsl.universe import Universe

    try:
        return dict(Universe.get_multiverse().all_passes)
    except Exception as error:  # a broken plugin package is the user's to fix
        raise RduccError(f"cannot load the installed xdsl.universe plugins: {error}") from error


def available_passes(plugin_files: Iterable[str | Path] = ()) -> dict[str, PassFactory]:
    """Every pass a pipeline may name: xDSL's, installed plugins', rducc's and
    those defined in `plugin_files` (a plugin may not reuse a taken name)."""
    from xdsl.transforms import get_all_passes

    from rducc.plugins import load_pass_plugin

    passes = {**get_all_passes(), **installed_passes(), **ALL_PASSES}
    unique = {Path(path).resolve(): path for path in plugin_files}  # a file named twice loads once
    for path in unique.values():
        for name, cls in load_pass_plugin(path).items():
            if name in passes and not same_pass(passes[name], cls):
                raise RduccError(
                    f"{path}: error: the plugin's pass '{name}' has the name of a pass "
                    f"that exists already ({_origin(passes[name])}); rename it"
                )
            passes[name] = factory_of(cls)
    return passes


def same_pass(factory: PassFactory, cls: type[ModulePass]) -> bool:
    """Whether a registered pass is `cls` reached another way: the class an installed
    entry point names and the one a plugin file defines (the package's source file,
    loaded by path) are the same pass when they have the same name, qualified name
    and source text."""
    try:
        other = factory()
    except Exception:  # noqa: BLE001 - a factory that fails to import is not this class
        return False
    if other is cls:
        return True
    if other.__qualname__ != cls.__qualname__ or getattr(other, "name", None) != getattr(cls, "name", None):
        return False
    return _source_of(other) is not None and _source_of(other) == _source_of(cls)


def _source_of(cls: type) -> bytes | None:
    """The bytes of the file that defines `cls`, if it has one."""
    import inspect

    try:
        source = inspect.getsourcefile(cls)
        return Path(source).read_bytes() if source else None
    except (TypeError, OSError):
        return None


def factory_of(cls: type[ModulePass]) -> PassFactory:
    """A lazy factory, as xDSL registers passes, for a pass class at hand."""
    return lambda: cls


def _origin(factory: PassFactory) -> str:
    """Where a pass comes from, for messages: its defining module."""
    try:
        return factory().__module__
    except Exception:  # noqa: BLE001 - only used to word a message
        return "unknown module"


def parse_passes(text: str, passes: dict[str, PassFactory] | None = None) -> list[ModulePass]:
    """Pass instances from pipeline text; unknown names and bad options are `RduccError`s."""
    passes = available_passes() if passes is None else passes
    try:
        specs = list(parse_pipeline(text))
    except (Exception, ArgSpecParseError) as error:  # ArgSpecParseError is a BaseException
        raise RduccError(f"bad pass pipeline: {str(error).strip()}") from error
    result = []
    for spec in specs:
        if spec.name not in passes:
            known = ", ".join(sorted(n for n in passes if n.startswith("rdu-")))
            raise RduccError(
                f"unknown pass '{spec.name}' in pipeline '{text}' (rducc's passes: {known}; "
                "'rducc --list-passes' lists them all)"
            )
        try:
            result.append(passes[spec.name]().from_pass_spec(spec))
        except Exception as error:
            raise RduccError(f"bad options for pass '{spec.name}': {error}") from error
    return result


def default_passes(
    opt_level: int = 2, emit: str = "placed", sockets: int = 1, split: tuple[int, ...] = (0, 0)
) -> list[ModulePass]:
    """The -O pipeline up to `emit` (see `pipeline_text`), as pass instances."""
    return parse_passes(pipeline_text(opt_level, emit, sockets, split), {**ALL_PASSES, **_upstream_used()})


def _upstream_used() -> dict[str, PassFactory]:
    from xdsl.transforms import get_all_passes

    return {"cse": get_all_passes()["cse"]}


# -- inserting passes into a pipeline ------------------------------------------


@dataclass(frozen=True)
class PipelineEdit:
    """Insert `passes` just before or just after every pass named `anchor`."""

    anchor: str
    where: Literal["before", "after"]
    passes: tuple[ModulePass, ...]


def before(anchor: str, *passes: ModulePass) -> PipelineEdit:
    """Run `passes` just before the pipeline's pass named `anchor`."""
    return PipelineEdit(anchor, "before", passes)


def after(anchor: str, *passes: ModulePass) -> PipelineEdit:
    """Run `passes` just after the pipeline's pass named `anchor`."""
    return PipelineEdit(anchor, "after", passes)


def edit_pipeline(passes: Sequence[ModulePass], edits: Iterable[PipelineEdit]) -> list[ModulePass]:
    """`passes` with each edit's passes inserted at its anchor."""
    result = list(passes)
    for edit in edits:
        names = [p.name for p in result]
        if edit.anchor not in names:
            raise RduccError(
                f"cannot insert {edit.where} '{edit.anchor}': the pipeline has no such pass "
                f"(it runs {', '.join(names) or 'no passes'})"
            )
        edited: list[ModulePass] = []
        for one in result:
            if one.name == edit.anchor and edit.where == "before":
                edited.extend(edit.passes)
            edited.append(one)
            if one.name == edit.anchor and edit.where == "after":
                edited.extend(edit.passes)
        result = edited
    return result


# -- running a pipeline --------------------------------------------------------


class PassFailedError(RduccError):
    """A pass of the user's raised, or a pass left IR that does not verify."""


class IRBrokenError(PassFailedError, DiagnosticException):
    """The IR does not verify after a pass (a diagnostic, as xdsl-opt expects)."""


def is_rducc_or_upstream(one: ModulePass) -> bool:
    """Whether a pass is rducc's or xDSL's own (its failures are bugs, not the user's)."""
    return type(one).__module__.split(".")[0] in ("rducc", "xdsl")


def broken_ir_error(one: ModulePass | None, module: ModuleOp, error: Exception) -> IRBrokenError:
    """The error for IR that does not verify after `one`, naming it and the failing op."""
    from rducc.diagnostics import describe_verify_failure

    where = f"after pass '{one.name}'" if one is not None else "after the pipeline"
    return IRBrokenError(f"the IR does not verify {where}:\n{describe_verify_failure(module, error)}")


def verify_after(one: ModulePass | None, module: ModuleOp) -> None:
    """Verify `module`; a failure names the pass that left it so and the failing op."""
    try:
        with unchanged():  # verifiers read the IR: what they share (a block's SRAM sweep) is worked out once
            module.verify()
    except DiagnosticException as error:
        raise broken_ir_error(one, module, error) from error


def _apply(one: ModulePass, ctx: Context, module: ModuleOp) -> None:
    """Apply a pass; an exception from a user's pass names the pass and its line."""
    from rducc.diagnostics import user_frame

    try:
        one.apply(ctx, module)
    except (RduccError, DiagnosticException):
        raise
    except (Exception, SystemExit) as error:  # a user's pass calling exit() fails too, named
        if is_rducc_or_upstream(one):
            raise  # a bug in rducc or xDSL: an internal error with a report request
        frame = user_frame(error, type(one))
        where = f" at {frame}" if frame else ""
        exited = " (a pass must not end the process)" if isinstance(error, SystemExit) else ""
        raise PassFailedError(
            f"pass '{one.name}' failed{where}: {type(error).__name__}: {error}{exited}"
        ) from error


def run_passes(
    module: ModuleOp,
    passes: Sequence[ModulePass],
    *,
    verify_each: bool = False,
    callback: PassPipelineCallbackType | None = None,
    ctx: Context | None = None,
) -> None:
    """Apply `passes` in order, as `PassPipeline.apply` does, calling `callback`
    (xDSL's `(previous, module, next)`) between them.

    A user's pass (one neither rducc's nor xDSL's) is checked closely: an
    exception from it becomes a `PassFailedError` naming it, and the IR is
    verified after it, so that IR it breaks is an `IRBrokenError` naming it
    and the failing op, before rducc's passes see that IR. With
    `verify_each` (or a callback that verifies, as xdsl-opt's does) the IR
    is verified after every pass."""
    ctx = ctx or Context()
    if callback is not None:
        callback(None, module, passes[0] if passes else None)
    for index, one in enumerate(passes):
        following = passes[index + 1] if index + 1 < len(passes) else None
        _apply(one, ctx, module)
        if verify_each or not is_rducc_or_upstream(one):
            verify_after(one, module)
        if callback is not None:
            try:
                callback(one, module, following)
            except IRBrokenError:
                raise
            except DiagnosticException as error:  # the callback's own verify
                raise broken_ir_error(one, module, error) from error


def run_pipeline(
    module: ModuleOp, target: Target, opt_level: int = 2, emit: str = "placed"
) -> None:
    """Lower an imported module in place to the `emit` level for `target`."""
    set_target(module, target)
    run_passes(module, default_passes(opt_level, emit))


__all__ = [
    "LEVELS",
    "IRBrokenError",
    "PassFailedError",
    "PipelineEdit",
    "after",
    "available_passes",
    "before",
    "default_passes",
    "edit_pipeline",
    "parse_passes",
    "pipeline_text",
    "run_passes",
    "run_pipeline",
    "verify_after",
    "with_partition",
]
