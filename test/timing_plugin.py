"""CPU time per test and per test file, for watching the suite's cost (CI's budget).

Wall time lies on a loaded machine; CPU time does not (much). This plugin measures,
around each test's setup, call and teardown, the CPU seconds (user + system) of the
pytest process AND of its children (subprocesses such as `rducc-run` or lit, and
their own waited-for children: `resource.getrusage` deltas, plus /proc for children
still running, such as a fork server), and prints
the most expensive files and tests at the end:

    .venv/bin/python -m pytest -p timing_plugin test/python/test_cli.py
    .venv/bin/python -m pytest -p timing_plugin --cpu-top=40 --cpu-json=/tmp/cpu.json test

(`-p timing_plugin` finds it because test/ is on the path pytest puts first, its
rootdir's `test` directory: run from the repository root, or give
`-p test.timing_plugin` / PYTHONPATH=test.) Under pytest-xdist each worker measures
its own tests and the numbers travel on the test reports, so the summary covers all
workers. A module-scoped fixture's cost lands on the setup of the first test that
uses it; the per-file totals include it. Importing the test modules (collection) is
measured per file too, in the process that collects (the workers' under xdist, and
then not printed).
"""

from __future__ import annotations

import json
import os
import resource
from collections import defaultdict
from collections.abc import Generator
from typing import Any

import pytest

_PHASES = ("setup", "call", "teardown")


def cpu_seconds() -> float:
    """User + system CPU seconds of this process, of its waited-for children, and
    of its descendants still running (with their own waited-for children)."""
    total = live_children_cpu_seconds()
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def live_children_cpu_seconds(pid: str = "self") -> float:
    """CPU seconds of the descendants not yet waited for (Linux /proc; 0 elsewhere): a
    long-lived helper such as a fork server (test/python/forked_tools.py) is waited
    for only when the session ends, so getrusage's CHILDREN would miss its work, and
    so would a server's own servers (lit_fork/server.py's torch server) but for the
    walk down the tree. A child waited for moves from here to its parent's waited-for
    time (RUSAGE_CHILDREN, or a /proc cutime below): never counted twice."""
    return sum(_own_and_waited_seconds(child) + live_children_cpu_seconds(child) for child in _children(pid))


def _children(pid: str) -> list[str]:
    """The process ids of `pid`'s running children (every thread's)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    children: list[str] = []
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children") as listing:
                children += listing.read().split()
        except OSError:
            continue
    return children


def _own_and_waited_seconds(pid: str) -> float:
    """A running process's CPU seconds and its waited-for children's (0 once ended:
    its parent's waited-for time has it then)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return sum(int(value) for value in fields[11:15]) / _TICKS  # utime stime cutime cstime


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cpu timing (test/timing_plugin.py)")
    group.addoption("--cpu-top", type=int, default=25,
                    help="how many of the costliest files and tests to print (default 25)")
    group.addoption("--cpu-json", default=None,
                    help="also write every test's and file's CPU seconds to this JSON file")


def _measure(item: pytest.Item, phase: str) -> Generator[None, Any, Any]:
    """Around one phase of one test: store its CPU seconds on the item."""
    start = cpu_seconds()
    try:
        return (yield)
    finally:
        item.stash.setdefault(_CPU_KEY, {})[phase] = cpu_seconds() - start


_CPU_KEY = pytest.StashKey[dict[str, float]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _measure(item, "setup"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _measure(item, "call"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, Any, Any]:
    return (yield from _measure(item, "teardown"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """Put the phase's CPU seconds on its report (an attribute xdist carries to the controller)."""
    report = yield
    report.cpu_s = item.stash.get(_CPU_KEY, {}).get(call.when, 0.0)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    """Collecting a module imports it (torch, models built at import time): measured per file."""
    if not isinstance(collector, pytest.Module):
        return (yield)
    start = cpu_seconds()
    report = yield
    _TOTALS.collect[collector.nodeid] = cpu_seconds() - start
    return report


class _Totals:
    """CPU seconds gathered from the reports: per test (its phases) and per collected file."""

    def __init__(self) -> None:
        self.tests: dict[str, dict[str, float]] = defaultdict(dict)
        self.collect: dict[str, float] = {}

    def per_test(self) -> dict[str, float]:
        return {nodeid: sum(phases.values()) for nodeid, phases in self.tests.items()}

    def per_file(self) -> dict[str, float]:
        files: dict[str, float] = defaultdict(float)
        for nodeid, seconds in self.per_test().items():
            files[nodeid.split("::")[0]] += seconds
        return dict(files)


_TOTALS = _Totals()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    seconds = getattr(report, "cpu_s", None)
    if seconds is not None and report.when in _PHASES:
        _TOTALS.tests[report.nodeid][report.when] = seconds


def _top(rows: dict[str, float], count: int) -> list[tuple[str, float]]:
    return sorted(rows.items(), key=lambda row: -row[1])[:count]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if not _TOTALS.tests:
        return
    count = config.getoption("--cpu-top")
    per_test, per_file = _TOTALS.per_test(), _TOTALS.per_file()
    write = terminalreporter.write_line
    terminalreporter.section("CPU seconds (user+sys, this process and its children; test/timing_plugin.py)")
    write(f"all tests: {sum(per_test.values()):.1f} s CPU in {len(per_test)} tests, {len(per_file)} files"
          + (f"; collection (imports) {sum(_TOTALS.collect.values()):.1f} s" if _TOTALS.collect else ""))
    write(f"-- top {count} files (setup+call+teardown of their tests) --")
    for nodeid, seconds in _top(per_file, count):
        collect = _TOTALS.collect.get(nodeid)
        write(f"{seconds:8.2f}  {nodeid}" + (f"  (+{collect:.2f} collecting)" if collect else ""))
    write(f"-- top {count} tests (setup / call / teardown) --")
    for nodeid, seconds in _top(per_test, count):
        phases = _TOTALS.tests[nodeid]
        split = " / ".join(f"{phases.get(phase, 0.0):.2f}" for phase in _PHASES)
        write(f"{seconds:8.2f}  {nodeid}  ({split})")
    path = config.getoption("--cpu-json")
    if path:
        with open(path, "w") as out:
            json.dump({"tests": _TOTALS.tests, "files": per_file, "collect": _TOTALS.collect}, out, indent=1)
        write(f"written: {path}")
