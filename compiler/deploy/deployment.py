"""A deployment: several models compiled for one system, their weights in DDR,
an HBM residency plan, and the manifest that describes it (docs/deployment.md).

`deploy` reads each archive's program graph (no load) for its weight bytes
and its structural signature, checks the DDR total, then streams the models
one at a time: a model whose signature an earlier model has is not compiled
again (its compiled program is written with its own weights file name);
another is loaded and compiled with the one driver (`compile_module`). Each
writes DIR/NAME.mlir and DIR/NAME.safetensors with the usual writers, then
DIR/manifest.json last; the whole directory is built beside DIR and renamed
into place, so a failed deploy leaves an existing DIR as it was.
`load_manifest` reads a manifest back, every field checked.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from rducc.deploy.manifest import (
    DEFAULT_HBM_RESERVE,
    EVICTION,
    MANIFEST,
    NAME_PATTERN,
    DeployedBucket,
    DeployedModel,
    Deployment,
    Modeled,
    load_manifest,
)
from rducc.errors import RduccError
from rducc.files import file_session, replace_directory, staging_directory
from rducc.targets import Target, check_compilable, load_target

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

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
    shapes: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    """By model name: the sizes of its dynamic dims to compile (`--shapes NAME:batch=1,4`), one bucket each."""
    pad_dims: dict[str, list[str]] = field(default_factory=dict)
    """By model name: dynamic dims the user vouches may be padded (`--pad-dims NAME:seq`)."""


def per_model_flags(flag: str, items: Sequence[str], names: Sequence[str]) -> dict[str, list[str]]:
    """`--shapes MODEL:batch=1,4` / `--pad-dims MODEL:seq`: each item by its model
    (the only model's when a deployment has one and the item names none)."""
    found: dict[str, list[str]] = {}
    for item in items:
        model, colon, rest = item.partition(":")
        if not colon or "=" in model:
            if len(names) != 1:
                raise RduccError(f"{flag} {item}: name the model it is for (MODEL:{item}); the models are "
                                 f"{', '.join(names)}")
            model, rest = names[0], item
        found.setdefault(model, []).append(rest)
    return found


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
    """--hbm-reserve: a fraction below 1 of `hbm_bytes`, or bytes (with a unit),
    read as an exact decimal (0.99999999999999999 is a fraction, 1e400 bytes more
    than any HBM), rounded down to whole bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*", spec)
    if match is None or match.group(2).upper() not in _UNITS:
        raise RduccError(f"--hbm-reserve {spec}: give a fraction of HBM (0.25) or bytes (16000000000, 16GB, 16GiB)")
    number, unit = Decimal(match.group(1)), match.group(2).upper()
    if number < 1 and not unit:
        return int(number * hbm_bytes)  # below hbm_bytes: exact in 28 digits
    if number > Decimal(hbm_bytes) / _UNITS[unit]:
        shown = f"{int(number * _UNITS[unit])} bytes" if number.adjusted() < 30 else "that"
        raise RduccError(f"--hbm-reserve {spec}: {shown} is more than the system's HBM ({hbm_bytes} bytes)")
    return int(number * _UNITS[unit])


@dataclass(frozen=True)
class ArchiveFacts:
    """What `deploy` needs of an archive before loading it."""

    signature: str
    """sha256 of the program's graph, weights excluded (`archive_facts`)."""
    weight_bytes: int
    """Bytes of every weight, buffer and lifted tensor constant (from their shapes)."""
    on_meta: bool
    """Every weight is on the meta device (no data: nothing to load)."""


_WEIGHT_SPECS = ("parameter", "buffer", "tensor_constant")


def _program_bytes(path: str | Path) -> tuple[bytes, bytes]:
    """The archive's serialized program (`models/model.json`) and the bytes of
    its lifted constants (`data/constants/`, small: they are inlined into code)."""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        programs = [n for n in names if re.fullmatch(r"(?:[^/]+/)?models/model\.json", n)]
        if len(programs) != 1:
            raise RduccError(f"{path}: the archive has no models/model.json program to read")
        constants = b"".join(archive.read(n) for n in sorted(names) if "/data/constants/" in f"/{n}")
        return archive.read(programs[0]), constants


def _tensor_bytes(meta: dict, where: str) -> int:
    import torch
    from torch._export.serde.serialize import _SERIALIZE_TO_TORCH_DTYPE

    sizes = [size.get("as_int") for size in meta["sizes"]]
    if any(not isinstance(size, int) for size in sizes):
        raise RduccError(f"{where}: a weight of symbolic shape")
    if any(size < 0 for size in sizes):
        raise ValueError(f"a weight of negative size {sizes}")
    return math.prod(sizes) * torch.empty((), dtype=_SERIALIZE_TO_TORCH_DTYPE[meta["dtype"]]).element_size()


def archive_facts(path: str | Path, known: dict[str, ArchiveFacts] | None = None) -> ArchiveFacts:
    """The signature, weight bytes and device of an archive's program, read from
    its serialized graph without loading it (a few ms where a load of Llama
    3.1 8B takes seconds).

    The signature is a sha256 of that graph (every node's op, inputs,
    outputs and attributes, every value's dtype and shape, the input and
    output signature, names included) with each node's debug metadata (stack
    trace, module stack) and each value's device left out, plus the bytes of
    the lifted tensor constants (small ones are inlined into the code).
    Parameters and buffers are left out: programs with the same signature
    compile to the same code and differ only in their weights.

    `known` caches the facts by the raw bytes' hash: copies of one archive are
    read without parsing their graph again."""
    text, constants = _program_bytes(path)
    raw = hashlib.sha256(text + b"\0" + constants).hexdigest()
    if known is not None and raw in known:
        return known[raw]
    try:
        facts = _facts_of(text, constants, path)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, StopIteration, RecursionError) as error:
        reason = f"{type(error).__name__}: {error}" if isinstance(error, KeyError | StopIteration) else str(error)
        raise RduccError(f"{path}: models/model.json is not a program torch.export wrote "
                         f"({reason.splitlines()[0] if reason else type(error).__name__})") from None
    if known is not None:
        known[raw] = facts
    return facts


def _facts_of(text: bytes, constants: bytes, path: str | Path) -> ArchiveFacts:
    """`archive_facts` of the serialized program `text` (any malformed field raises)."""
    import json

    program = json.loads(text)
    module = program["graph_module"]
    values = module["graph"]["tensor_values"]
    weight_bytes, on_meta = 0, True
    for spec in module["signature"]["input_specs"]:
        kind = next(iter(spec))
        if kind in _WEIGHT_SPECS:
            meta = values[spec[kind]["arg"]["name"]]
            weight_bytes += _tensor_bytes(meta, str(path))
            on_meta = on_meta and meta.get("device", {}).get("type") == "meta"
    nodes = [{k: v for k, v in node.items() if k != "metadata"} for node in module["graph"]["nodes"]]
    shapes = {name: {k: v for k, v in meta.items() if k != "device"} for name, meta in values.items()}
    structure = {**program, "graph_module": {**module, "graph": {**module["graph"], "nodes": nodes,
                                                                  "tensor_values": shapes}}}
    digest = hashlib.sha256(json.dumps(structure, sort_keys=True).encode())
    digest.update(constants)
    return ArchiveFacts(digest.hexdigest(), weight_bytes, on_meta)


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
    from rducc.model.cost_model import estimate

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
    and holds none of the inputs (replacing it would delete them). A symbolic
    link is followed: the directory it points to is what is made or replaced."""
    from rducc.files import directory_destination, link_loop

    if link_loop(out):
        raise RduccError(f"-o {out}: a loop of symbolic links")
    final = directory_destination(out)
    if final.exists() and not final.is_dir():
        raise RduccError(f"-o {out}: it is a file; -o takes the deployment directory")
    if not Path(os.path.realpath(final)).parent.is_dir():
        raise RduccError(f"-o {out}: directory {final.parent} does not exist")
    if final.is_dir() and any(final.iterdir()) and not force:
        raise RduccError(f"-o {out}: the directory is not empty; --force replaces it")
    real = Path(os.path.realpath(final))
    inside = [p for p in inputs if p and Path(p).exists() and real in Path(os.path.realpath(p)).parents]
    if inside:
        raise RduccError(f"-o {out} holds the input {inside[0]}; replacing the directory would delete it")


def deploy(specs: Sequence[str], out_dir: str | Path, options: DeployOptions | None = None) -> Deployment:
    """Compile every model of `specs` (`path` or `NAME=path`) for the target, plan
    HBM residency and write the deployment directory `out_dir` as one. Every
    check that needs no compile (names, routers, flags, archives, the DDR
    total) runs before the first compile. Models are then taken one at a time
    (load, compile or reuse, write, drop): a model whose archive has an
    earlier model's signature (`archive_facts`) reuses its compiled program."""
    options = options or DeployOptions()
    with file_session():  # no output may be an input
        return _deploy(specs, Path(out_dir), options)


def _deploy(specs: Sequence[str], out: Path, options: DeployOptions) -> Deployment:
    target = load_target(options.target)
    check_compilable(target)
    sources = model_sources(specs)
    _check_routers(options.routers, [name for name, _ in sources])
    _check_shape_models(options, [name for name, _ in sources])
    hbm = target.sockets * target.hbm_bytes
    reserve = hbm_reserve_bytes(options.hbm_reserve, hbm)
    _check_out_dir(out, options.force, [path for _, path in sources] + [target.source])
    facts = _read_archives(sources)
    sizes = [(name, facts[name].weight_bytes) for name, _ in sources]
    _check_ddr(sizes, target)
    resident = residency_plan(sizes, hbm - reserve, options.routers)
    staging = staging_directory(out)
    try:
        compiler = _Compiler(target, options.opt_level, staging, options)
        compiled = {name: compiler.model(name, path, facts[name]) for name, path in sources}
        shares = code_sharing([(name, c.code_key) for name, c in compiled.items()])
        models = [
            DeployedModel(name, path, f"{name}.mlir", compiled[name].weights, size, name in resident, shares[name],
                          name in options.routers, compiled[name].modeled, compiled[name].buckets)
            for (name, path), (_, size) in zip(sources, sizes)
        ]
        deployment = Deployment(options.target, target.sockets, target.sockets * target.ddr_bytes, hbm, reserve,
                                hbm - reserve, EVICTION, models, out)
        _write_manifest(staging, deployment)
        replace_directory(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return deployment


def _check_routers(routers: Sequence[str], names: list[str]) -> None:
    unknown = [r for r in routers if r not in names]
    if unknown:
        raise RduccError(f"--router {unknown[0]}: no model of that name; the models are {', '.join(names)}")


def _check_shape_models(options: DeployOptions, names: list[str]) -> None:
    for flag, table in (("--shapes", options.shapes), ("--pad-dims", options.pad_dims)):
        unknown = [n for n in table if n not in names]
        if unknown:
            raise RduccError(f"{flag} {unknown[0]}:...: no model of that name; the models are {', '.join(names)}")
    lonely = [n for n in options.pad_dims if n not in options.shapes]
    if lonely:
        raise RduccError(f"--pad-dims {lonely[0]}:...: model '{lonely[0]}' has no --shapes (padding goes up to "
                         "a larger shape bucket)")


def _read_archives(sources: Sequence[tuple[str, str]]) -> dict[str, ArchiveFacts]:
    """Every archive checked (all before any is read further), then its facts, by name."""
    from rducc.frontend.loader import check_archive

    for _, path in sources:
        check_archive(path)
    known: dict[str, ArchiveFacts] = {}
    return {name: archive_facts(path, known) for name, path in sources}


def _write_manifest(directory: Path, deployment: Deployment) -> None:
    from rducc.files import write_atomically

    write_atomically(str(directory / MANIFEST), deployment.to_json())


@dataclass(frozen=True)
class _Compiled:
    """What the manifest needs of one compiled model."""

    code_key: str
    weights: str | None
    modeled: Modeled
    buckets: list[DeployedBucket] = field(default_factory=list)


@dataclass
class _Program:
    """A compiled program kept for the models that share its signature."""

    module: ModuleOp
    weight_specs: dict[str, tuple[tuple[int, ...], object]]
    """Each weight's shape and dtype, as the first model's compile collected them."""
    code_key: str
    modeled: Modeled
    text: str = ""
    """The program's text when it names no weights file (printed once)."""
    buckets: list[DeployedBucket] = field(default_factory=list)
    """Each shape bucket's times (a model deployed with --shapes)."""


def _weight_specs(weights: dict) -> dict[str, tuple[tuple[int, ...], object]]:
    return {name: (tuple(tensor.shape), tensor.dtype) for name, tensor in weights.items()}


class _Compiler:
    """Compiles each signature once and writes every model's files into `staging`."""

    def __init__(self, target: Target, opt_level: int, staging: Path, options: DeployOptions | None = None):
        self.target, self.opt_level, self.staging = target, opt_level, staging
        self.options = options or DeployOptions()
        self.programs: dict[tuple[str, bool], _Program] = {}
        """By signature and whether on the meta device."""
        self.compiles = 0

    def model(self, name: str, path: str, facts: ArchiveFacts) -> _Compiled:
        """Write NAME.mlir and NAME.safetensors (none for a model on the meta
        device): the signature's program when compiled before, else a compile.
        Only one model's program is loaded at a time. Any error names the model."""
        try:
            return self._model(name, path, facts)
        except RduccError as error:
            message = str(error)
            raise RduccError(message if message.startswith(f"model '{name}'") else f"model '{name}': {message}") \
                from None
        except (KeyboardInterrupt, OSError, RecursionError):
            raise
        except Exception as error:  # a bug in rducc: the CLI's internal error names the model it compiled
            error.add_note(f"while deploying model '{name}' ({path})")
            raise

    def _model(self, name: str, path: str, facts: ArchiveFacts) -> _Compiled:
        from rducc.frontend.loader import load_exported_program
        from rducc.weights import program_weights

        key = (facts.signature, facts.on_meta)
        known = self.programs.get(key)
        if known is not None and facts.on_meta:
            return self._write(name, known, {})
        program = load_exported_program(path)
        shapes = self.options.shapes.get(name)
        if shapes is None:
            _refuse_dynamic(program, path, name)
        else:
            return self._compile_buckets(name, program, shapes)
        if known is not None:
            weights = program_weights(program)
            if _weight_specs(weights) == known.weight_specs:
                return self._write(name, known, weights)
        return self._compile(name, program, key)

    def _compile(self, name: str, program, key: tuple[str, bool]) -> _Compiled:
        from rducc.driver import CompileOptions, compile_module

        result = compile_module(program, CompileOptions(self.target, self.opt_level))
        self.compiles += 1
        modeled = modeled_times(result.module, self.target, _tokens_per_call(result.exported))
        compiled = _Program(result.module, _weight_specs(result.weights), code_key(result.module), modeled)
        self.programs.setdefault(key, compiled)
        return self._write(name, compiled, result.weights)

    def _compile_buckets(self, name: str, program, shapes: dict[str, list[int]]) -> _Compiled:
        """A model deployed with --shapes: every bucket in one program file, one weights file."""
        from rducc.driver import CompileOptions
        from rducc.shapes import compile_buckets

        result = compile_buckets(program, shapes, CompileOptions(self.target, self.opt_level),
                                 self.options.pad_dims.get(name, ()))
        self.compiles += len(result.buckets)
        buckets = [DeployedBucket(dict(b.values), modeled_times(b.result.module, self.target,
                                                                 _tokens_per_call(b.result.exported)))
                   for b in result.buckets]
        largest = max(buckets, key=lambda b: b.modeled.tokens_per_call).modeled
        compiled = _Program(result.module, _weight_specs(result.weights), code_key(result.module), largest,
                            buckets=buckets)
        return self._write(name, compiled, result.weights)

    def _write(self, name: str, compiled: _Program, weights: dict) -> _Compiled:
        from rducc.dialects.contracts import set_weights_file
        from rducc.driver import module_text
        from rducc.files import text_writer, write_together
        from rducc.weights import weights_writer

        weights_file = f"{name}.safetensors" if weights else None
        if weights_file is None:  # the meta device: one text for every model
            compiled.text = compiled.text or module_text(compiled.module)
            text = compiled.text
        else:
            set_weights_file(compiled.module, weights_file)  # relative: found beside the program
            text = module_text(compiled.module)
        outputs = [(str(self.staging / f"{name}.mlir"), text_writer(text))]
        if weights_file is not None:
            outputs.insert(0, (str(self.staging / weights_file), weights_writer(weights)))
        write_together(outputs)
        return _Compiled(compiled.code_key, weights_file, compiled.modeled, compiled.buckets)


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


__all__ = ["Deployment", "DeployedBucket", "DeployedModel", "DeployOptions", "Modeled", "deploy", "deployed_program",
           "load_manifest", "per_model_flags"]


def _refuse_dynamic(program, path: str, name: str) -> None:
    """A dynamic export deployed without --shapes: one error naming its dims and the flag."""
    from rducc.frontend.dynamic_dims import dynamic_dims, is_dynamic

    if is_dynamic(program):
        dims = dynamic_dims(program)
        listed = ", ".join(dim.describe() for dim in dims)
        example = " ".join(f"{name}:{dim.name}=N,..." for dim in dims)
        raise RduccError(f"{path}: the program was exported with dynamic dims ({listed}); rducc deploy "
                         f"compiles one program per size: give its sizes with --shapes {example}")
