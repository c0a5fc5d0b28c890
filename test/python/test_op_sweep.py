"""A fixed slice of the OpInfo sweep (bench/op_sweep.py): torch's own samples of
ops that rducc once refused or got wrong, each exported, compiled at -O0, run
and compared with eager. The whole sweep: python bench/op_sweep.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import op_sweep  # noqa: E402

OPS = (
    "erfc", "put", "index_reduce.amax", "diagonal_scatter", "cummax", "median", "nanmedian",
    "linalg.solve", "linalg.inv", "linalg.cholesky", "cholesky_solve", "triangular_solve", "lu_solve",
    "addmv", "index_select", "bucketize", "view_copy", "dist", "logaddexp", "unbind_copy",
    "lgamma", "polygamma.polygamma_n_2", "special.bessel_j0", "special.zeta", "nextafter", "frexp",
)


@pytest.fixture(scope="module")
def swept() -> op_sweep.Sweep:
    return op_sweep.sweep(set(OPS), samples=1, limit=None, o2_every=0, verbose=False)


def test_every_op_of_the_slice_has_a_sample(swept: op_sweep.Sweep) -> None:
    assert {o.op for o in swept.outcomes} == set(OPS)


def test_the_slice_compiles_and_matches_eager(swept: op_sweep.Sweep) -> None:
    failures = [f"{o.op}: {o.status} {o.cause}" for o in swept.outcomes if o.status != "pass"]
    assert not failures, "\n".join(failures)


def test_causes_blur_what_varies() -> None:
    line = "UnsupportedOpsError: cannot import: aten.i0.default: 2 uses, first at /a/b.py:3:4: y = f(x)"
    assert op_sweep._cause(line) == "UnsupportedOpsError: cannot import: aten.i0.default: N uses"
    shape = "RduccError: /a/b.py:88:9: return self.function(*args, **kwargs): shape [3, 4] on 'x'"
    assert op_sweep._cause(shape) == "RduccError: shape [..] on '..'"


def test_the_doc_table_shows_the_counts() -> None:
    """The outcome table holds each status's count (only causes are blurred)."""
    mismatches = [op_sweep.Outcome(f"m{i}", "mismatch", "values differ") for i in range(12)]
    outcomes = [op_sweep.Outcome("a", "pass"), *mismatches,
                op_sweep.Outcome("r", "refused", "RduccError: 3 uses"), op_sweep.Outcome("c", "crash", "KeyError: 7")]
    text = op_sweep.Sweep(outcomes).markdown("cmd")
    for row in ("| pass | 1 |", "| mismatch | 12 |", "| refused | 1 |", "| crash | 1 |"):
        assert row in text.splitlines(), text
    assert "| refused | RduccError: N uses | r |" in text
