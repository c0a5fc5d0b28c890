"""How much of a model's runtime runs on one thread where it could run on two:
each step (the Program's) or ATen op call (eager's) classified by whether
torch's pool did part of its work at two threads.

Per step, least over N calls of each: its calling thread's CPU at one thread
(t1), and at two threads its calling thread's CPU (t2) and the process's
(p2, all threads: under `OMP_WAIT_POLICY=PASSIVE` a pool thread sleeps at a
barrier, so p2 - t2 is the work the pool thread did during the step). A step
is a kernel when t1 >= `--kernel-us` (below it, Python around an op: a
view, a reshape's binding, in eager too); a kernel is one-threaded when its
pool share (p2 - t2) / p2 is below `--pool-share` (a kernel split evenly over
two threads has about 0.5). CPU times and counts, not wall times: the
machine may be loaded (run it `nice`d, one model at a time).

Printed per side: the one-thread time t1 of one-threaded kernels as a share
of all t1, the excess (t2 - t1 / 2 summed: what did not halve) by class, and
each class's kernel kinds by excess.

Run: OMP_WAIT_POLICY=PASSIVE python bench/runtime_single_threaded.py --only NAME [--calls N]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts OpenMP (module docstring)

import argparse  # noqa: E402
import logging  # noqa: E402
from collections import defaultdict  # noqa: E402
from functools import partial  # noqa: E402

import common  # noqa: E402,F401 - numpy's BLAS on one thread
import torch  # noqa: E402
from runtime_threads_profile import Steps, eager_steps, program_steps  # noqa: E402
from zoo.models import FULL_SIZE  # noqa: E402

import rducc  # noqa: E402


def classify(one: Steps, two: Steps, kernel_s: float, pool_share: float) -> dict[str, list[float]]:
    """Per class ('one-thread kernel', 'threaded kernel', 'not a kernel'):
    [t1 sum, t2 sum, excess sum, count]; plus 'CLASS: KIND' rows for the kernels."""
    rows: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for key, (name, t1, _) in one.items():
        if key not in two:
            continue
        _, t2, p2 = two[key]
        if t1 < kernel_s:
            kind = "not a kernel"
        elif p2 <= 0 or (p2 - t2) / p2 < pool_share:
            kind = "one-thread kernel"
        else:
            kind = "threaded kernel"
        for label in (kind, f"{kind}: {name}") if kind != "not a kernel" else (kind,):
            row = rows[label]
            row[0] += t1
            row[1] += t2
            row[2] += t2 - t1 / 2
            row[3] += 1
    return rows


def report(title: str, rows: dict[str, list[float]], top: int) -> list[str]:
    """The classes, then the one-threaded kernels' kinds by t2."""
    total1 = sum(rows[k][0] for k in ("one-thread kernel", "threaded kernel", "not a kernel"))
    total2 = sum(rows[k][1] for k in ("one-thread kernel", "threaded kernel", "not a kernel"))
    lines = [f"{title}: t1 {total1 * 1e3:.1f} ms, t2 {total2 * 1e3:.1f} ms (calling thread's CPU)", "",
             "| class | steps | t1 ms | share of t1 | t2 ms | excess ms (t2 - t1/2) |", "| --- " * 6 + "|"]
    for label in ("one-thread kernel", "threaded kernel", "not a kernel"):
        t1, t2, excess, count = rows[label]
        lines.append(f"| {label} | {count} | {t1 * 1e3:.2f} | {t1 / max(total1, 1e-9):.1%} | {t2 * 1e3:.2f} | "
                     f"{excess * 1e3:.2f} |")
    for label in ("one-thread kernel", "threaded kernel"):
        kinds = sorted(((k, v) for k, v in rows.items() if k.startswith(f"{label}: ")), key=lambda kv: -kv[1][2])
        lines += ["", f"| {label} kind, by excess | steps | t1 ms | t2 ms | excess ms |", "| --- " * 5 + "|"]
        lines += [f"| {k.removeprefix(label + ': ')} | {v[3]} | "
                  f"{v[0] * 1e3:.2f} | {v[1] * 1e3:.2f} | {v[2] * 1e3:.2f} |" for k, v in kinds[:top]]
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["convnext_t"])
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--kernel-us", type=float, default=20.0)
    parser.add_argument("--pool-share", type=float, default=0.15)
    parser.add_argument("--side", choices=["both", "eager", "program"], default="both")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(2)
    torch.ones(1 << 20).add_(1)  # the pool made now, as runtime_threads_profile makes it
    for name in args.only:
        model, inputs = FULL_SIZE[name].build(1)
        with torch.no_grad():
            program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
            sides = {"eager": partial(eager_steps, model, inputs), "Program": partial(program_steps, program, inputs)}
            for side, steps in sides.items():
                if args.side not in ("both", side.lower()):
                    continue
                torch.set_num_threads(1)
                one = steps(args.calls)
                torch.set_num_threads(2)
                two = steps(args.calls)
                rows = classify(one, two, args.kernel_us * 1e-6, args.pool_share)
                print("\n".join(report(f"{name} {side}", rows, args.top)), flush=True)
        torch.set_num_threads(1)


if __name__ == "__main__":
    main()
