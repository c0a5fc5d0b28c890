"""The deployment manifest (DIR/manifest.json, docs/deployment.md): what it
holds, and `load_manifest`, which reads one back with every field checked.

`rducc deploy` (rducc.deploy.deployment) writes it; `rducc-run DIR --model NAME` and
the serving simulation (rducc.deploy.serving) read it, through this one reader.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rducc.errors import RduccError

FORMAT = "rducc-deployment"
VERSION = 1
MANIFEST = "manifest.json"
DEFAULT_HBM_RESERVE = 0.25
"""Share of the system's HBM kept free for activations and KV caches by default."""
EVICTION = "lru"
MAX_MANIFEST_BYTES = 64 << 20
MODELED_S = (1e-12, 3600.0)
"""A modeled time (a call, a token's prefill, a decode step) lies between a
picosecond and an hour: a time of 0 or past an hour would make a serving
simulation's figures infinite."""
MAX_NUMBER = 1 << 53
"""A manifest's numbers (bytes, counts) are at most 2^53: exact as floats."""
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
class DeployedBucket:
    """One compiled size of a model deployed with shape buckets (`rducc deploy --shapes`)."""

    bucket: dict[str, int]
    modeled: Modeled


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
    """The times of its one program (of its largest bucket when it has several)."""
    buckets: list[DeployedBucket] = field(default_factory=list)
    """Each shape bucket with its times; empty for a model of static shapes (the key is then left out)."""


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
        for model in data["models"]:
            if not model["buckets"]:
                del model["buckets"]  # a static model's entry as before
        from rducc.files import json_text

        return json_text(data, "the deployment manifest")


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
_OPTIONAL_MODEL_FIELDS: dict[str, type | tuple[type, ...]] = {"buckets": list}
_BUCKET_FIELDS: dict[str, type | tuple[type, ...]] = {"bucket": dict, "modeled": dict}
_MODELED_FIELDS: dict[str, type | tuple[type, ...]] = {
    "forward_s": (int, float), "tokens_per_call": int, "prefill_s_per_token": (int, float),
    "decode_step_s": (int, float),
}


def _type_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list",
             dict: "an object", type(None): "null"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names[k] for k in kinds if not (k is int and float in kinds)))


def _shown(value: int | float) -> str:
    """A number for a message: a huge integer by its digits, not all of them."""
    text = str(value) if not isinstance(value, int) or value.bit_length() < 200 else ""
    return text if text and len(text) <= 40 else f"a number of {len(str(value)) if text else 'over 60'} digits"


def _checked(data: object, fields: dict[str, type | tuple[type, ...]], where: str,
             optional: dict[str, type | tuple[type, ...]] | None = None) -> dict[str, Any]:
    """`data` as an object holding exactly `fields` (and any of `optional`), each of its type."""
    if not isinstance(data, dict):
        raise RduccError(f"{where}: expected an object, got {type(data).__name__}")
    missing = [name for name in fields if name not in data]
    if missing:
        raise RduccError(f"{where}: missing field '{missing[0]}'")
    known = fields | (optional or {})
    unknown = [name for name in data if name not in known]
    if unknown:
        raise RduccError(f"{where}: unknown field '{unknown[0]}'")
    for name, kind in known.items():
        if name not in data:
            continue
        value = data[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        is_bool = isinstance(value, bool)
        if not isinstance(value, kinds) or (is_bool and bool not in kinds):
            raise RduccError(f"{where}: field '{name}' must be {_type_name(kind)}, got {json.dumps(value)[:40]}")
        if isinstance(value, int | float) and not is_bool and not 0 <= value:  # NaN too
            raise RduccError(f"{where}: field '{name}' must be a finite number >= 0, got {_shown(value)}")
        if isinstance(value, int | float) and not is_bool and value > MAX_NUMBER:
            raise RduccError(f"{where}: field '{name}' must be at most 2^53 ({MAX_NUMBER}), got {_shown(value)}")
    return data


def _model_file(directory: Path, name: str, where: str, field_name: str) -> None:
    """A file the manifest names: a plain name inside the directory, there."""
    if Path(name).name != name or name in ("", ".", ".."):
        raise RduccError(f"{where}: field '{field_name}' must name a file in the deployment directory, got '{name}'")
    if not (directory / name).is_file():
        raise RduccError(f"{where}: {field_name} file {directory / name} is not there")


def _read_model(data: object, index: int, directory: Path | None, where: str) -> DeployedModel:
    """models[index]; its files are checked to be in `directory` unless it is None."""
    fields = _checked(data, _MODEL_FIELDS, f"{where}: models[{index}]", _OPTIONAL_MODEL_FIELDS)
    here = f"{where}: model '{fields['name']}'"
    if not NAME_PATTERN.fullmatch(fields["name"]):
        raise RduccError(f"{here}: not a valid model name (letters, digits, '_', '.', '-')")
    if directory is not None:
        _model_file(directory, fields["program"], here, "program")
        if fields["weights"] is not None:
            _model_file(directory, fields["weights"], here, "weights")
    modeled = _read_modeled(fields["modeled"], f"{here}: modeled")
    buckets = [_read_bucket(b, f"{here}: buckets[{i}]") for i, b in enumerate(fields.get("buckets", []))]
    return DeployedModel(**(fields | {"modeled": modeled, "buckets": buckets}))


def _read_modeled(data: object, where: str) -> Modeled:
    modeled = Modeled(**_checked(data, _MODELED_FIELDS, where))
    for name in ("forward_s", "prefill_s_per_token", "decode_step_s"):
        if not MODELED_S[0] <= getattr(modeled, name) <= MODELED_S[1]:
            raise RduccError(f"{where}: field '{name}' must be a time from {MODELED_S[0]:g} s to "
                             f"{MODELED_S[1]:g} s, got {getattr(modeled, name)}")
    if modeled.tokens_per_call < 1:
        raise RduccError(f"{where}: field 'tokens_per_call' must be >= 1, got {modeled.tokens_per_call}")
    return modeled


def _read_bucket(data: object, where: str) -> DeployedBucket:
    """One of a model's shape buckets: its dims' sizes (whole numbers >= 1) and times."""
    fields = _checked(data, _BUCKET_FIELDS, where)
    sizes = fields["bucket"]
    bad = [k for k, v in sizes.items() if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= MAX_NUMBER]
    if bad or not sizes:
        raise RduccError(f"{where}: field 'bucket' must map each dim to a whole size >= 1"
                         + (f", got {bad[0]} = {json.dumps(sizes[bad[0]])[:40]}" if bad else ", got {}"))
    return DeployedBucket(dict(sizes), _read_modeled(fields["modeled"], f"{where}: modeled"))


def manifest_path(path: str | Path) -> Path:
    """DIR/manifest.json for a directory, else the path itself."""
    path = Path(path)
    return path / MANIFEST if path.is_dir() else path


def load_manifest(path: str | Path, check_files: bool = True) -> Deployment:
    """Read and check a deployment's manifest (`path`: the directory or its
    manifest.json): every field there and of its type, the format and version
    known, names unique, and (with `check_files`) every named file present.
    The serving simulation reads only the `modeled` figures: it passes False."""
    from rducc.files import read_text

    file = manifest_path(path)
    where = str(file)
    if Path(path).is_dir() and not file.exists():
        raise RduccError(f"{path}: a directory without {MANIFEST}: not a deployment (rducc deploy ... -o DIR)")
    try:
        data = json.loads(read_text(file, "deployment manifest", MAX_MANIFEST_BYTES))
    except (json.JSONDecodeError, RecursionError) as error:
        raise RduccError(f"{where}: not a JSON deployment manifest ({error})") from None
    except ValueError:  # an integer literal of more digits than Python converts
        raise RduccError(f"{where}: not a JSON deployment manifest (a number too long to read)") from None
    if isinstance(data, dict) and "format" in data and data["format"] != FORMAT:
        raise RduccError(f"{where}: format {json.dumps(data.get('format'))[:40]} is not '{FORMAT}'")
    if isinstance(data, dict) and "version" in data and data["version"] != VERSION:
        raise RduccError(f"{where}: version {json.dumps(data.get('version'))[:40]} is not supported "
                         f"(this rducc reads version {VERSION})")
    top = _checked(data, _TOP_FIELDS, where)
    models = [_read_model(m, i, file.parent if check_files else None, where) for i, m in enumerate(top["models"])]
    _check_models(models, where)
    _note_model_files(models, file.parent)
    top = {k: v for k, v in top.items() if k not in ("format", "version", "models")}
    return Deployment(**top, models=models, directory=file.parent)


def _note_model_files(models: list[DeployedModel], directory: Path) -> None:
    """Every file of the deployment is an input of the run that reads it: no
    output may replace one (rducc.files.note_input), whether or not it is read."""
    from rducc.files import note_input

    for model in models:
        for role, name in (("program", model.program), ("weights file", model.weights)):
            if name and "\0" not in name and Path(name).name == name and (directory / name).exists():
                note_input(directory / name, f"the deployment's {role}")


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
