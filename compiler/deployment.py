"""A deployment: several models compiled for one system, their weights in DDR,
an HBM residency plan, and the manifest that describes it (docs/deployment.md).

`deploy` compiles each model with the one driver (`compile_module`), writes
DIR/NAME.mlir and DIR/NAME.safetensors with the usual writers, then
DIR/manifest.json last; the whole directory is built beside DIR and renamed
into place, so a failed deploy leaves an existing DIR as it was.
`load_manifest` reads a manifest back, every field checked.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rducc.errors import RduccError
from rducc.manifest import (
    DEFAULT_HBM_RESERVE,
    EVICTION,
    MANIFEST,
    NAME_PATTERN,
    DeployedModel,
    Deployment,
    Modeled,
    load_manifest,
)
from rducc.targets import Target, load_target

# --------------------------------------------------------------------------
# the residency plan and code sharing
# --------------------------------------------------------------------------


def residency_plan(sizes: Sequence[tuple[str, int]], budget: int, routers: Sequence[str] = ()) -> set[str]:
    """The models resident in HBM from the start: routers first, then the others
    in the order given, each one that still fits the remaining `budget` (first
    fit); the rest stay in DDR and are copied in on demand."""
    order = [s for s in sizes if s[0] in routers] + [s for s in sizes if s[0] not in routers]
    resident, left = set(), budget
    for name, size in order:
        if size <= left:
            resident.add(name)
            left -= size
    return resident


def code_key(module) -> str:
    """A hash of a compiled program's code: its outlined layer functions printed
    without locations, or the whole entry function when it has none. Two models
    with the same key run the same kernels on weights of the same shapes (and
    names); only their weights differ, and those stay separate."""
    from io import StringIO

    from xdsl.printer import Printer

    from rducc.dialects.program import ENTRY, functions

    funcs = list(functions(module))
    stream = StringIO()
    for function in [f for f in funcs if f.sym_name.data != ENTRY] or funcs:
        Printer(stream=stream, print_debuginfo=False).print_op(function)
    return hashlib.sha256(stream.getvalue().encode()).hexdigest()


def code_sharing(keys: Sequence[tuple[str, str]]) -> dict[str, str | None]:
    """For each model, the first earlier model with the same code key (or None)."""
    first: dict[str, str] = {}
    shares: dict[str, str | None] = {}
    for name, key in keys:
        shares[name] = first.get(key)
        first.setdefault(key, name)
    return shares


# --------------------------------------------------------------------------
# deploying
# --------------------------------------------------------------------------


@dataclass
class DeployOptions:
    """How to deploy: the target, the -O level, the HBM reserve, the routers."""

    target: str = "sn40l-8"
    opt_level: int = 2
    hbm_reserve: str = str(DEFAULT_HBM_RESERVE)
    """A fraction of the system's HBM (`0.25`) or bytes (`16000000000`, `16GB`, `16GiB`)."""
    routers: Sequence[str] = ()
    force: bool = False
    """Replace a DIR that is not empty (else refused)."""


def model_sources(specs: Sequence[str]) -> list[tuple[str, str]]:
    """(name, path) of each `path` or `NAME=path`; the name defaults to the file's
    stem; names must be unique and fit a file name."""
    sources: list[tuple[str, str]] = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or "/" in name:
            name, path = Path(spec).stem, spec
        if not NAME_PATTERN.fullmatch(name):
            raise RduccError(f"model name '{name}' ({spec}): use letters, digits, '_', '.' and '-' "
                             "(name it with NAME=path)")
        if any(name == other for other, _ in sources):
            raise RduccError(f"two models are named '{name}': name them with NAME=path")
        sources.append((name, path))
    if not sources:
        raise RduccError("no models given (usage: rducc deploy a.pt2 b.pt2 ... -o DIR)")
    return sources


_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}


def hbm_reserve_bytes(spec: str, hbm_bytes: int) -> int:
    """--hbm-reserve: a fraction below 1 of `hbm_bytes`, or bytes (with a unit)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*", spec)
    if match is None or match.group(2).upper() not in _UNITS:
        raise RduccError(f"--hbm-reserve {spec}: give a fraction of HBM (0.25) or bytes (16000000000, 16GB, 16GiB)")
    number, unit = float(match.group(1)), match.group(2).upper()
    reserve = int(number * hbm_bytes) if number < 1 and not unit else int(number * _UNITS[unit])
    if reserve > hbm_bytes:
        raise RduccError(f"--hbm-reserve {spec}: {reserve} bytes is more than the system's HBM ({hbm_bytes} bytes)")
    return reserve


def _weight_bytes(program) -> int:
    """Bytes of every weight, buffer and lifted constant (from shapes: the meta device too)."""
    import torch

    total = 0
    for spec in program.graph_signature.input_specs:
        if spec.target is None:
            continue
        value = program.state_dict.get(spec.target, program.constants.get(spec.target))
        if isinstance(value, torch.Tensor):
            total += value.numel() * value.element_size()
    return total


def _tokens_per_call(program) -> int:
    """Elements of the first integer user input (token ids: batch x sequence), else 1."""
    import torch

    users = set(program.graph_signature.user_inputs)
    for node in program.graph.nodes:
        value = node.meta.get("val") if node.op == "placeholder" and node.name in users else None
        if isinstance(value, torch.Tensor) and not value.is_floating_point() and value.dtype != torch.bool:
            if not value.is_complex() and value.dim() >= 1:
                return max(1, value.numel())
    return 1


def modeled_times(module, target: Target, tokens: int) -> Modeled:
    """The cost model's time of one call (`rducc-run --simulate`'s `estimate`).
    A decode step is one call of the program as compiled: exact for a 1-token
    program, an upper bound for a prefill one (one pass over the weights)."""
    from rducc.runtime.cost_model import estimate

    forward = estimate(module, target).modeled_time_s
    return Modeled(forward, tokens, forward / tokens, forward)


def _check_ddr(sizes: Sequence[tuple[str, int]], target: Target) -> int:
    total, capacity = sum(size for _, size in sizes), target.sockets * target.ddr_bytes
    if total > capacity:
        count = f"{len(sizes)} model{'s' if len(sizes) > 1 else ''}"
        raise RduccError(f"the weights of the {count} total {total} bytes; target {target.name}'s DDR holds "
                         f"{capacity} bytes ({target.sockets} x {target.ddr_bytes} a socket)")
    return total


def _check_out_dir(out: Path, force: bool, inputs: Sequence[str]) -> None:
    """-o names a directory that can be made, is empty or replaced (--force),
    and holds none of the inputs (replacing it would delete them)."""
    if out.exists() and not out.is_dir():
        raise RduccError(f"-o {out}: it is a file; -o takes the deployment directory")
    if not out.resolve().parent.is_dir():
        raise RduccError(f"-o {out}: directory {out.parent} does not exist")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise RduccError(f"-o {out}: the directory is not empty; --force replaces it")
    inside = [p for p in inputs if p and Path(p).exists() and out.resolve() in Path(p).resolve().parents]
    if inside:
        raise RduccError(f"-o {out} holds the input {inside[0]}; replacing the directory would delete it")


def deploy(specs: Sequence[str], out_dir: str | Path, options: DeployOptions | None = None) -> Deployment:
    """Compile every model of `specs` (`path` or `NAME=path`) for the target, plan
    HBM residency and write the deployment directory `out_dir` as one. Every
    check that needs no compile (names, routers, flags, archives, the DDR
    total) runs before the first compile."""
    options = options or DeployOptions()
    out = Path(out_dir)
    target = load_target(options.target)
    sources = model_sources(specs)
    _check_routers(options.routers, [name for name, _ in sources])
    hbm = target.sockets * target.hbm_bytes
    reserve = hbm_reserve_bytes(options.hbm_reserve, hbm)
    _check_out_dir(out, options.force, [path for _, path in sources] + [target.source])
    programs = _load_programs(sources)
    sizes = [(name, _weight_bytes(programs[name])) for name, _ in sources]
    _check_ddr(sizes, target)
    resident = residency_plan(sizes, hbm - reserve, options.routers)
    staging = Path(tempfile.mkdtemp(dir=out.resolve().parent, prefix=f".{out.name}.", suffix=".tmp"))
    try:
        compiled = {name: _compile_one(name, programs.pop(name), target, options.opt_level, staging)
                    for name, _ in sources}
        shares = code_sharing([(name, c.code_key) for name, c in compiled.items()])
        models = [
            DeployedModel(name, path, f"{name}.mlir", compiled[name].weights, size, name in resident, shares[name],
                          name in options.routers, compiled[name].modeled)
            for (name, path), (_, size) in zip(sources, sizes)
        ]
        deployment = Deployment(options.target, target.sockets, target.sockets * target.ddr_bytes, hbm, reserve,
                                hbm - reserve, EVICTION, models, out)
        _write_manifest(staging, deployment)
        _replace_dir(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return deployment


def _check_routers(routers: Sequence[str], names: list[str]) -> None:
    unknown = [r for r in routers if r not in names]
    if unknown:
        raise RduccError(f"--router {unknown[0]}: no model of that name; the models are {', '.join(names)}")


def _load_programs(sources: Sequence[tuple[str, str]]) -> dict:
    """Every archive checked (all before any is loaded), then loaded, by name."""
    from rducc.frontend.loader import check_archive, load_exported_program

    for _, path in sources:
        check_archive(path)
    return {name: load_exported_program(path) for name, path in sources}


def _write_manifest(directory: Path, deployment: Deployment) -> None:
    from rducc.files import write_atomically

    write_atomically(str(directory / MANIFEST), deployment.to_json())


@dataclass(frozen=True)
class _Compiled:
    """What the manifest needs of one compiled model."""

    code_key: str
    weights: str | None
    modeled: Modeled


def _compile_one(name: str, program, target: Target, opt_level: int, staging: Path) -> _Compiled:
    """Compile one model with the driver and write NAME.mlir and NAME.safetensors
    (none for a model on the meta device) into `staging`."""
    from rducc.dialects.contracts import set_weights_file
    from rducc.driver import CompileOptions, compile_module, module_text
    from rducc.files import text_writer, write_together
    from rducc.weights import weights_writer

    try:
        result = compile_module(program, CompileOptions(target, opt_level))
    except RduccError as error:
        raise RduccError(f"model '{name}': {error}") from None
    weights = f"{name}.safetensors" if result.weights else None
    if weights is not None:
        set_weights_file(result.module, weights)  # relative: found beside the program
    outputs = [(str(staging / f"{name}.mlir"), text_writer(module_text(result.module)))]
    if weights is not None:
        outputs.insert(0, (str(staging / weights), weights_writer(result.weights)))
    write_together(outputs)
    modeled = modeled_times(result.module, target, _tokens_per_call(result.exported))
    return _Compiled(code_key(result.module), weights, modeled)


def _replace_dir(staging: Path, out: Path) -> None:
    """Rename the finished `staging` directory to `out`, replacing what was there."""
    os.chmod(staging, 0o777 & ~_umask())
    if not out.exists():
        os.rename(staging, out)
        return
    old = Path(tempfile.mkdtemp(dir=out.resolve().parent, prefix=f".{out.name}.", suffix=".old"))
    os.rmdir(old)
    os.rename(out, old)
    try:
        os.rename(staging, out)
    except BaseException:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def deployed_program(directory: str | Path, model: str | None) -> Path:
    """The program file of `model` in the deployment at `directory` (the only
    model's when `model` is None and there is one)."""
    deployment = load_manifest(directory)
    if model is None:
        if len(deployment.models) > 1:
            raise RduccError(f"{directory}: a deployment of {len(deployment.models)} models; choose one with "
                             f"--model NAME ({', '.join(m.name for m in deployment.models)})")
        model = deployment.models[0].name
    return deployment.directory / deployment.model(model).program


__all__ = ["Deployment", "DeployedModel", "DeployOptions", "Modeled", "deploy", "deployed_program", "load_manifest"]
