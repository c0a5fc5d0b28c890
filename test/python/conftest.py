"""Shared fixtures: the example models, exported once per session."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples"))

import models  # noqa: E402


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def exported_small() -> dict[str, tuple[torch.nn.Module, tuple, torch.export.ExportedProgram]]:
    """Each small model with its example inputs and its torch.export program."""
    result = {}
    for name, build in models.SMALL_MODELS.items():
        model, inputs = build()
        result[name] = (model, inputs, models.export(model, inputs))
    return result


@pytest.fixture(scope="session")
def llama8b_meta() -> torch.export.ExportedProgram:
    """The exact Llama 3.1 8B config on the meta device, exported (seq 128)."""
    model, inputs = models.llama31_8b_meta(seq=128)
    return models.export(model, inputs)
