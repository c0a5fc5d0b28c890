"""Shared fixtures: the example models, exported once per session."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples"))

import models  # noqa: E402


def _share_cores_between_workers() -> None:
    """Under pytest-xdist (README's `-n auto`), each worker's torch takes its
    share of the cores, not all of them: N workers of N threads each would
    oversubscribe the machine."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


_share_cores_between_workers()


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
