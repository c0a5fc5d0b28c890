"""The serving simulation's scheduler on a long backlog (issue 31 item 9).

Every request of a trace is queued at once (arrival 0): half of them routed
(a router call, then the expert's), five on-demand experts, HBM room for the
router and one expert. The time of `simulate` for 10^4 and 10^5 requests and
their ratio: about 10 when each event costs O(log n), 100 when it scans the
backlog (the scheduler before issue 31 took 423 s for 4 x 10^4). Copies are
checked against model uses (never more).

Run: python bench/serving_scale.py [--quick]   (quick: 10^3 and 10^4)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from rducc.deploy.serving import Memory, Request, ServedModel, simulate
from rducc.targets import load_target

GB = 10**9


def backlog(count: int, experts: int) -> list[Request]:
    """`count` requests at time 0, every other one routed, the experts in turn."""
    return [Request(str(i), f"e{i % experts}", 8, 2, 0.0, "router" if i % 2 else None) for i in range(count)]


def seconds(count: int) -> tuple[float, int, int]:
    """The time `simulate` takes on a backlog of `count`; its copies and model uses."""
    memory = Memory.of_target(load_target("sn40l-8"))
    memory = replace(memory, hbm_weight_budget_bytes=GB + 24 * GB)  # the router and one expert
    models = [ServedModel("router", GB, True, 1e-4, 2e-3, True)]
    models += [ServedModel(f"e{i}", 16 * GB, False, 1e-4, 2e-3) for i in range(5)]
    requests = backlog(count, 5)
    start = time.perf_counter()
    report = simulate(models, requests, memory)
    elapsed = time.perf_counter() - start
    copies = report.totals()["copies"]
    assert copies <= report.uses and len(report.results) == count
    return elapsed, copies, report.uses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^3 and 10^4 requests")
    args = parser.parse_args()
    small, large = (1_000, 10_000) if args.quick else (10_000, 100_000)
    times = {}
    for count in (small, large):
        elapsed, copies, uses = seconds(count)
        times[count] = elapsed
        print(f"{count:>7} requests queued at once: {elapsed:6.2f} s, {copies} copies for {uses} model uses")
    print(f"ratio {times[large] / times[small]:.1f}x for 10x the backlog (linear: 10x; quadratic: 100x)")


if __name__ == "__main__":
    main()
