"""Where a generation's model comes from: a local transformers checkpoint
directory, a config file or a model-type name (random weights from a seed),
a config object or a model; and its tokenizer, when the directory has one.

Nothing is downloaded: every transformers call is `local_files_only`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from rducc.errors import RduccError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
"""Any of these in a checkpoint directory means it carries a tokenizer."""


def _transformers() -> Any:
    try:
        import transformers
    except ImportError:
        raise RduccError("text generation needs transformers: pip install transformers") from None
    transformers.utils.logging.disable_progress_bar()  # rducc generate shows its own progress
    transformers.utils.logging.set_verbosity_error()
    return transformers


def _config_from_file(path: Path) -> Any:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RduccError(f"{path}: not a readable JSON config ({error})") from None
    if not isinstance(data, dict) or "model_type" not in data:
        raise RduccError(f"{path}: a transformers config needs a 'model_type' (llama, qwen2, gpt2, ...)")
    return _config_for(data.pop("model_type"), data, str(path))


def _config_for(model_type: str, fields: Mapping[str, Any], where: str) -> Any:
    transformers = _transformers()
    if model_type not in transformers.CONFIG_MAPPING:
        raise RduccError(f"{where}: transformers has no model type '{model_type}'")
    return transformers.AutoConfig.for_model(model_type, **fields)


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`key=value` strings as config fields; a value is read as JSON when it parses (64, 0.5, true)."""
    fields: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise RduccError(f"--set '{item}': expected KEY=VALUE (hidden_size=64)")
        try:
            fields[key] = json.loads(text)
        except json.JSONDecodeError:
            fields[key] = text
    return fields


def _apply(config: Any, overrides: Mapping[str, Any]) -> Any:
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def _check_decoder(config: Any, where: str) -> None:
    transformers = _transformers()
    mapping = transformers.MODEL_FOR_CAUSAL_LM_MAPPING
    if getattr(config, "is_encoder_decoder", False) or type(config) not in mapping:
        raise RduccError(f"{where}: model type '{config.model_type}' is not a decoder-only language model "
                         "(transformers has no causal LM for it); rducc generate needs one")


def _random_model(config: Any, seed: int, where: str) -> Any:
    _check_decoder(config, where)
    transformers = _transformers()
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(config)


def _checkpoint(directory: Path, overrides: Mapping[str, Any]) -> Any:
    if not (directory / "config.json").is_file():
        raise RduccError(f"{directory}: not a transformers checkpoint (no config.json)")
    config = _apply(_config_from_file(directory / "config.json"), overrides)
    _check_decoder(config, str(directory))
    if not any(directory.glob("*.safetensors")):
        raise RduccError(f"{directory}: no weights (*.safetensors); for random weights give "
                         f"--config {directory / 'config.json'}")
    transformers = _transformers()
    try:
        return transformers.AutoModelForCausalLM.from_pretrained(directory, config=config, local_files_only=True)
    except (OSError, ValueError) as error:
        raise RduccError(f"{directory}: cannot load the checkpoint: {error}") from None


def load_causal_lm(source: Any, overrides: Mapping[str, Any] | None = None, seed: int = 0) -> Any:
    """The model, in eval() mode: `source` is a transformers model, a config, a
    checkpoint directory (config.json + safetensors), a config file (.json) or a
    model-type name (`llama`); the last three take `overrides` (config fields).
    A config alone gets random weights from `seed`."""
    transformers = _transformers()
    overrides = dict(overrides or {})
    if isinstance(source, transformers.PreTrainedModel):
        _check_decoder(source.config, type(source).__name__)
        model = source
    elif isinstance(source, transformers.PretrainedConfig):
        model = _random_model(_apply(source, overrides), seed, type(source).__name__)
    elif isinstance(source, str | Path):
        model = _model_at(str(source), overrides, seed)
    else:
        raise RduccError(f"rducc.generate takes a checkpoint directory, a config file or name, a transformers "
                         f"config or model, not {type(source).__name__}")
    return model.eval()


def _model_at(spec: str, overrides: dict[str, Any], seed: int) -> Any:
    path = Path(spec)
    if path.is_dir():
        return _checkpoint(path, overrides)
    if path.is_file():
        return _random_model(_apply(_config_from_file(path), overrides), seed, spec)
    transformers = _transformers()
    if "/" not in spec and not spec.endswith(".json") and spec in transformers.CONFIG_MAPPING:
        return _random_model(_config_for(spec, overrides, spec), seed, spec)
    raise RduccError(f"{spec}: no such checkpoint directory or config file (nor a transformers model type)")


def load_tokenizer(source: Any) -> Any | None:
    """The tokenizer saved in a checkpoint directory, or None when it has none."""
    if not isinstance(source, str | Path) or not Path(source).is_dir():
        return None
    directory = Path(source)
    if not any((directory / name).is_file() for name in TOKENIZER_FILES):
        return None
    transformers = _transformers()
    try:
        return transformers.AutoTokenizer.from_pretrained(directory, local_files_only=True)
    except (OSError, ValueError) as error:
        raise RduccError(f"{directory}: cannot load its tokenizer: {error}") from None
