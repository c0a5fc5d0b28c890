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
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rducc.errors import RduccError
from rducc.targets import Target, load_target

FORMAT = "rducc-deployment"
VERSION = 1
MANIFEST = "manifest.json"
DEFAULT_HBM_RESERVE = 0.25
"""Share of the system's HBM kept free for activations and KV caches by default."""
EVICTION = "lru"
MAX_MANIFEST_BYTES = 64 << 20
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
"""A model name: it names the model's files in the deployment directory."""


@dataclass(frozen=True)
class Modeled:
    """The cost model's times for one model's program on the target."""

    forward_s: float
    tokens_per_call: int
    prefill_s_per_token: float
    decode_step_s: float


@dataclass(frozen=True)
class DeployedModel:
    """One model of a deployment, as the manifest lists it."""

    name: str
    source: str
    program: str
    weights: str | None
    """The safetensors file; None for a model built on the meta device (no data)."""
    weight_bytes: int
    resident: bool
    shares_code_with: str | None
    router: bool
    modeled: Modeled


@dataclass(frozen=True)
class Deployment:
    """A deployment directory's manifest; file names are relative to `directory`."""

    target: str
    sockets: int
    ddr_bytes: int
    hbm_bytes: int
    hbm_reserve_bytes: int
    hbm_weight_budget_bytes: int
    eviction: str
    models: list[DeployedModel]
    directory: Path = field(default=Path("."), compare=False)

    def model(self, name: str) -> DeployedModel:
        """The model called `name`; an unknown name is an error listing the names."""
        for model in self.models:
            if model.name == name:
                return model
        raise RduccError(f"{self.directory}: no model '{name}' in the deployment; it has "
                         f"{', '.join(m.name for m in self.models)}")

    def to_json(self) -> str:
        data: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        data |= {k: v for k, v in asdict(self).items() if k != "directory"}
        return json.dumps(data, indent=2) + "\n"


# --------------------------------------------------------------------------
# reading a manifest
# --------------------------------------------------------------------------

_TOP_FIELDS: dict[str, type | tuple[type, ...]] = {
    "format": str, "version": int, "target": str, "sockets": int, "ddr_bytes": int, "hbm_bytes": int,
    "hbm_reserve_bytes": int, "hbm_weight_budget_bytes": int, "eviction": str, "models": list,
}
_MODEL_FIELDS: dict[str, type | tuple[type, ...]] = {
    "name": str, "source": str, "program": str, "weights": (str, type(None)), "weight_bytes": int,
    "resident": bool, "shares_code_with": (str, type(None)), "router": bool, "modeled": dict,
}
_MODELED_FIELDS: dict[str, type | tuple[type, ...]] = {
    "forward_s": (int, float), "tokens_per_call": int, "prefill_s_per_token": (int, float),
    "decode_step_s": (int, float),
}


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list",
             dict: "an object", type(None): "null"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names[k] for k in kinds if not (k is int and float in kinds)))


def _checked(data: object, fields: dict[str, type | tuple[type, ...]], where: str) -> dict[str, Any]:
    """`data` as an object holding exactly `fields`, each of its type."""
    if not isinstance(data, dict):
        raise RduccError(f"{where}: expected an object, got {type(data).__name__}")
    missing = [name for name in fields if name not in data]
    if missing:
        raise RduccError(f"{where}: missing field '{missing[0]}'")
    unknown = [name for name in data if name not in fields]
    if unknown:
        raise RduccError(f"{where}: unknown field '{unknown[0]}'")
    for name, kind in fields.items():
        value = data[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        is_bool = isinstance(value, bool)
        if not isinstance(value, kinds) or (is_bool and bool not in kinds):
            raise RduccError(f"{where}: field '{name}' must be {_type_name(kind)}, got {json.dumps(value)[:40]}")
        if isinstance(value, int | float) and not is_bool and (not math.isfinite(value) or value < 0):
            raise RduccError(f"{where}: field '{name}' must be a finite number >= 0, got {value}")
    return data


def _model_file(directory: Path, name: str, where: str, field_name: str) -> None:
    """A file the manifest names: a plain name inside the directory, there."""
    if Path(name).name != name or name in ("", ".", ".."):
        raise RduccError(f"{where}: field '{field_name}' must name a file in the deployment directory, got '{name}'")
    if not (directory / name).is_file():
        raise RduccError(f"{where}: {field_name} file {directory / name} is not there")


def _read_model(data: object, index: int, directory: Path, where: str) -> DeployedModel:
    fields = _checked(data, _MODEL_FIELDS, f"{where}: models[{index}]")
    here = f"{where}: model '{fields['name']}'"
    if not NAME_PATTERN.fullmatch(fields["name"]):
        raise RduccError(f"{here}: not a valid model name (letters, digits, '_', '.', '-')")
    _model_file(directory, fields["program"], here, "program")
    if fields["weights"] is not None:
        _model_file(directory, fields["weights"], here, "weights")
    modeled = Modeled(**_checked(fields["modeled"], _MODELED_FIELDS, f"{here}: modeled"))
    if modeled.tokens_per_call < 1:
        raise RduccError(f"{here}: modeled: field 'tokens_per_call' must be >= 1, got {modeled.tokens_per_call}")
    return DeployedModel(**(fields | {"modeled": modeled}))


def manifest_path(path: str | Path) -> Path:
    """DIR/manifest.json for a directory, else the path itself."""
    path = Path(path)
    return path / MANIFEST if path.is_dir() else path


def load_manifest(path: str | Path) -> Deployment:
    """Read and check a deployment's manifest (`path`: the directory or its
    manifest.json): every field there and of its type, the format and version
    known, names unique, every named file present."""
    from rducc.files import read_text

    file = manifest_path(path)
    where = str(file)
    if Path(path).is_dir() and not file.exists():
        raise RduccError(f"{path}: a directory without {MANIFEST}: not a deployment (rducc deploy ... -o DIR)")
    try:
        data = json.loads(read_text(file, "deployment manifest", MAX_MANIFEST_BYTES))
    except (json.JSONDecodeError, RecursionError) as error:
        raise RduccError(f"{where}: not a JSON deployment manifest ({error})") from None
    if isinstance(data, dict) and "format" in data and data["format"] != FORMAT:
        raise RduccError(f"{where}: format {json.dumps(data.get('format'))[:40]} is not '{FORMAT}'")
    if isinstance(data, dict) and "version" in data and data["version"] != VERSION:
        raise RduccError(f"{where}: version {json.dumps(data.get('version'))[:40]} is not supported "
                         f"(this rducc reads version {VERSION})")
    top = _checked(data, _TOP_FIELDS, where)
    models = [_read_model(m, i, file.parent, where) for i, m in enumerate(top["models"])]
    _check_models(models, where)
    top = {k: v for k, v in top.items() if k not in ("format", "version", "models")}
    return Deployment(**top, models=models, directory=file.parent)


def _check_models(models: list[DeployedModel], where: str) -> None:
    if not models:
        raise RduccError(f"{where}: the deployment lists no models")
    names = [m.name for m in models]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise RduccError(f"{where}: model name '{twice}' appears twice")
    for model in models:
        if model.shares_code_with is not None and model.shares_code_with not in names:
            raise RduccError(f"{where}: model '{model.name}' shares code with '{model.shares_code_with}', "
                             "which the deployment does not list")


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
