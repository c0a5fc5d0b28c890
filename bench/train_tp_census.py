"""Where a bf16 training step at tp departs from eager autocast (issue 27): a census.

`census`: the same model's bf16 step compiled for one socket (equal to eager autocast
in the matrix's one-socket cells) and at tp=N on sn40l-8, every value of every step
recorded as the runtime computes it, and compared op by op (each op tagged after
`rdu-canonicalize`, before `rdu-partition`, so the two programs name the same op
alike). A value replicated on every rank is compared with one socket's as it is; a
value split along one dim is joined from the ranks in rank order first (a split in
periodic blocks, heads interleaved, joins wrong and shows every element off: read
those with care); a partial sum (the ranks
hold different whole-shaped arrays: a product over split columns before its
all-reduce) is by design not the whole value and is left out. What it prints per
step: each op whose value differs (its op, type, elements off, largest difference),
in program order: the first one whose operands are equal is the origin.

`twins`: how often eager autocast itself passes the matrix's bf16 bar
(`mixed_precision_verdict`) when started from its rounding twins (every parameter
one float32 ulp up or down, `rounding_twin`, seeds 0..N-1): the pass rate of a
training that is autocast's to the last bits of its start.

`probe`: whether any order of adding two halves reproduces torch's own kernels,
which rducc runs on one socket: a bf16 product over K (torch's 16-bit GEMM, oneDNN's
on this CPU) against bf16 of the two f32 half products added, and against other f32
orders; log_softmax over a row against the row's two half sums of exp added.

    .venv/bin/python bench/train_tp_census.py census MODEL LEVEL STEPS [--optimizer sgd] [--tp 2]
    .venv/bin/python bench/train_tp_census.py twins MODEL [--optimizer sgd] [--count 8]
    .venv/bin/python bench/train_tp_census.py probe

A diagnostic (it wraps the placed-program interpreter's private step builder to
record values), not a speed benchmark: no timing claim.
"""

from __future__ import annotations

import argparse
import copy
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))

from train_matrix import Cell, _eager, _example  # noqa: E402
from training_cases import (  # noqa: E402
    CASES,
    OPTIMIZERS,
    _no_dropout,
    batches,
    mixed_precision_verdict,
    rounding_twin,
)

import rducc  # noqa: E402
from rducc.api import after  # noqa: E402
from rducc.passes.rdu_partition import RduPartition  # noqa: E402
from rducc.runtime import interpreter  # noqa: E402

TAG = "census.id"


@dataclass(frozen=True)
class Tag(ModulePass):
    """Numbers every op (`census.id`) so the one-socket and the tp program name each alike."""

    name = "census-tag"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for index, inner in enumerate(op.walk()):
            inner.attributes[TAG] = IntegerAttr(index, i64)


@dataclass
class Record:
    values: dict[tuple[int, int], list[np.ndarray]]
    """(op id, rank) -> the op's value at each run."""
    names: dict[int, str]


_RECORD = Record({}, {})
_LOCK = threading.Lock()
_PREPARING: list[Any] = []
_PREPARE = interpreter.PlacedProgram._prepare_compute
_COMPUTE_STEP = interpreter._compute_step


def _op_id(op: Any) -> int | None:
    attr = op.attributes.get(TAG)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def _recorded(step: Callable[..., None], body_op: Any, slot: int, op_id: int) -> Callable[..., None]:
    def run(env: list[Any], context: Any) -> None:
        step(env, context)
        with _LOCK:
            _RECORD.values.setdefault((op_id, context.rank), []).append(np.array(env[slot], copy=True))

    return run


def _wrapped(steps: list[tuple[Callable[..., None], Any]]) -> list[tuple[Callable[..., None], Any]]:
    program = _PREPARING[-1]
    wrapped = []
    for step, body_op in steps:
        op_id = _op_id(body_op)
        if op_id is not None:
            _RECORD.names[op_id] = f"{body_op.name} {body_op.results[0].type}"
            step = _recorded(step, body_op, program._table.use(body_op.results[0]), op_id)
        wrapped.append((step, body_op))
    return wrapped


def _prepare_compute(self: Any, op: Any) -> Any:
    _PREPARING.append(self)
    try:
        return _PREPARE(self, op)
    finally:
        _PREPARING.pop()


def _compute_step(first: Any, later: Any, rotating: Any, copies: Any) -> Any:
    return _COMPUTE_STEP(_wrapped(first), _wrapped(later), rotating, copies)


def _install() -> None:
    interpreter._TOP_LEVEL[interpreter.ComputeOp] = _prepare_compute
    interpreter._compute_step = _compute_step


def record(model_name: str, tp: int, level: int, steps: int, optimizer: str | None) -> Record:
    """Every value of `steps` bf16 steps of `model_name` (one socket when tp is 1)."""
    _RECORD.values.clear()
    case = CASES[model_name]
    model, example = case.build()
    model = _no_dropout(model.train())
    data = batches(case, example[0], steps, seed=100)
    passes = [after("rdu-canonicalize", Tag())]
    options: dict[str, Any] = {"opt_level": level, "mixed_precision": "bf16"}
    if tp > 1:
        options["target"] = "sn40l-8"
        passes.append(after("census-tag", RduPartition(tp=tp)))
    program = rducc.compile_training(model, data[0], optimizer=OPTIMIZERS[optimizer](model.parameters())
                                     if optimizer else None, loss_fn=case.loss, passes=passes, **options)
    for batch in data:
        program.step(*batch)
    return Record(dict(_RECORD.values), dict(_RECORD.names))


def whole(parts: list[np.ndarray], shape: tuple[int, ...]) -> np.ndarray | None:
    """The whole value from each rank's: replicated (every rank's equal), or split along
    one dim in rank order; None for a partial sum or a split this cannot join."""
    if parts[0].shape == shape:
        return parts[0] if all(np.array_equal(p, parts[0], equal_nan=True) for p in parts) else None
    dims = [d for d, (n, m) in enumerate(zip(parts[0].shape, shape)) if n != m]
    if len(dims) == 1 and sum(p.shape[dims[0]] for p in parts) == shape[dims[0]]:
        return np.concatenate(parts, dims[0])
    return None


def differences(one: Record, split: Record, tp: int) -> list[tuple[int, int, int, int, float]]:
    """(step, op id, elements off, elements, largest difference) of each value the tp
    program holds whole (or joins) that differs from one socket's, in order."""
    found = []
    for (op_id, rank), runs in one.values.items():
        ranks = [split.values.get((op_id, r)) for r in range(tp)]
        if rank or any(r is None for r in ranks):
            continue
        for step, base in enumerate(runs):
            got = whole([r[step] for r in ranks if r is not None], base.shape)
            if got is None:
                continue
            wide, theirs = base.astype(np.float64), got.astype(np.float64)
            off = (wide != theirs) & ~(np.isnan(wide) & np.isnan(theirs))
            if off.any():
                found.append((step, op_id, int(off.sum()), base.size, float(np.nanmax(np.abs(wide - theirs)))))
    return sorted(found)


def census(model: str, level: int, steps: int, optimizer: str | None, tp: int) -> None:
    one = record(model, 1, level, steps, optimizer)
    split = record(model, tp, level, steps, optimizer)
    found = differences(one, split, tp)
    print(f"{model} -O{level} tp={tp}, {steps} step(s), optimizer {optimizer}: {len(one.names)} ops recorded, "
          f"{len(found)} values differ from one socket's")
    for step, op_id, off, size, largest in found:
        print(f"step {step} op {op_id} {split.names.get(op_id)}: {off} of {size} off, up to {largest:.3g}")


def twins(model_name: str, optimizer: str, count: int, steps: int = 20) -> None:
    """Eager autocast from `count` rounding twins, each judged by the bar against autocast and float32."""
    cell = Cell(model_name, optimizer, "bf16", 2, "1")
    model, x = _example(cell)
    data = batches(CASES[model_name], x, steps, seed=100)
    autocast = _eager(copy.deepcopy(model), cell, data, True)
    float32 = _eager(copy.deepcopy(model), cell, data, False)
    passed = 0
    for seed in range(count):
        verdict = mixed_precision_verdict(_eager(rounding_twin(model, seed), cell, data, True), autocast, float32)
        passed += verdict.ok
        print(f"twin {seed}: {verdict.text()}")
    print(f"{model_name} {optimizer}: {passed} of {count} rounding twins of eager autocast pass the bar")


def probe(trials: int = 200) -> None:
    """torch's kernels against two halves added (and other f32 orders)."""
    torch.manual_seed(0)
    m, k, n = 34, 32, 32
    off: dict[str, int] = {}
    for _ in range(trials):
        a, b = torch.randn(m, k).bfloat16(), torch.randn(k, n).bfloat16()
        kernel = torch.matmul(a, b)
        wide_a, wide_b = a.float(), b.float()
        sequential = torch.zeros(m, n)
        for index in range(k):
            sequential = sequential + wide_a[:, index:index + 1] * wide_b[index:index + 1]
        orders = {
            "two f32 halves added": wide_a[:, :k // 2] @ wide_b[:k // 2] + wide_a[:, k // 2:] @ wide_b[k // 2:],
            "one f32 GEMM": wide_a @ wide_b,
            "sequential f32": sequential,
            "exact (float64)": a.double() @ b.double(),
        }
        for name, value in orders.items():
            off[name] = off.get(name, 0) + int((value.bfloat16() != kernel).sum())
    print(f"bf16 [{m}, {k}] x [{k}, {n}] products, {trials * m * n:,} elements: elements off torch's bf16 kernel")
    for name, count in off.items():
        print(f"  bf16 of {name}: {count}")
    rows, vocab = 4096, 256
    x = torch.randn(rows, vocab) * 3
    kernel = torch.log_softmax(x, 1)
    shifted = x - x.max(1, keepdim=True).values
    exp = torch.exp(shifted)
    sums = {"two halves added": exp[:, :vocab // 2].sum(1, keepdim=True) + exp[:, vocab // 2:].sum(1, keepdim=True),
            "one sum": exp.sum(1, keepdim=True), "exact (float64)": exp.double().sum(1, keepdim=True).float()}
    print(f"log_softmax over {vocab}, {rows} rows: rows off torch's kernel")
    for name, total in sums.items():
        print(f"  (x - max) - log(sum), sum by {name}: {int(((shifted - torch.log(total)) != kernel).any(1).sum())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("census")
    one.add_argument("model", choices=sorted(CASES))
    one.add_argument("level", type=int)
    one.add_argument("steps", type=int)
    one.add_argument("--optimizer", choices=sorted(OPTIMIZERS))
    one.add_argument("--tp", type=int, default=2)
    twin = sub.add_parser("twins")
    twin.add_argument("model", choices=sorted(CASES))
    twin.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="sgd")
    twin.add_argument("--count", type=int, default=8)
    sub.add_parser("probe")
    args = parser.parse_args()
    if args.command == "probe":
        probe()
        return
    if args.command == "twins":
        twins(args.model, args.optimizer, args.count)
        return
    _install()
    census(args.model, args.level, args.steps, args.optimizer, args.tp)


if __name__ == "__main__":
    main()
