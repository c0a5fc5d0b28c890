"""The model zoo's quick subset (bench/zoo): real architectures compiled at
-O0 and -O2 (and tp=2 on sn40l-8 for the decoder) against eager, and a
failing model is a row with its one-line error, not a crash of the zoo."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from zoo.models import QUICK, ZOO, ZooModel  # noqa: E402
from zoo.run import markdown, run_model, run_zoo  # noqa: E402


@pytest.fixture(scope="module")
def quick_rows():
    return run_zoo(QUICK, batches=(1,))


def test_quick_subset_matches_eager(quick_rows) -> None:
    assert [row.model.name for row in quick_rows] == list(QUICK)
    for row in quick_rows:
        expected = {"O0", "O2", "tp2"} if row.model.decoder else {"O0", "O2"}
        assert set(row.outcomes) == expected, row.model.name
        for key, outcome in row.outcomes.items():
            assert outcome.status == "ok", (row.model.name, key, outcome.message, outcome.error)
        assert row.ops_exported and row.ops_core and row.ops_core >= row.ops_exported // 2
        o2 = row.outcomes["O2"]
        assert o2.compile_s and o2.ratio and o2.modeled_s and o2.modeled_s > 0


class _ReadsBack(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # a read-back number as elu's input scale: aten.elu has no Tensor overload and torch's
        # decomposition computes with the number in Python, so it is refused
        return torch.ops.aten.elu.default(x, 2.0, x.max().item())


def _broken() -> torch.nn.Module:
    raise ValueError("no such config field\nsecond line")


def test_failures_are_rows_with_one_line_errors(quick_rows) -> None:
    refused = run_model(ZooModel("reads_back", "test", _ReadsBack, lambda b: (torch.rand(b, 4) + 1,)), 1)
    broken = run_model(ZooModel("broken", "test", _broken, lambda b: (torch.rand(b, 4),)), 1)
    assert {o.status for o in refused.outcomes.values()} == {"error"}
    assert "aten._local_scalar_dense.default" in refused.outcomes["O2"].message
    assert broken.outcomes["O0"].status == "error"
    assert broken.outcomes["O0"].message == "export: ValueError: no such config field (at _broken)"
    text = markdown([*quick_rows, refused, broken], "test", "now", "here", 1.0)
    table = [line for line in text.splitlines() if line.startswith("| ") and "| 1 |" in line]
    assert len(table) == len(QUICK) + 2
    assert all("\n" not in line for line in table)
    assert "| models passing every check |" in text and f"{len(QUICK)}/{len(QUICK) + 2}" in text
    assert "## Failures" in text


def test_zoo_has_thirty_architectures_of_every_kind() -> None:
    assert len(ZOO) >= 30
    decoders = [m for m in ZOO.values() if m.decoder]
    assert len(decoders) >= 10 and len(ZOO) - len(decoders) >= 10  # causal LMs, and encoders/vision/audio
