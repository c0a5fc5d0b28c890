"""Headlines as ranges over a target's assumptions, and the tornado table.

A target file gives each assumed or derived figure a range (low..high,
`rducc.targets.Figure`). `Report.ranges(module, target)` (compiler/model/cost_model.py)
calls `headline_ranges` with the one cost model (`estimate` of that module),
which re-runs it with each such figure at its low and at its high, one at a
time, the others at their value, and reports each headline (the modeled time;
any other the caller names, such as tokens/s or % of roofline) as low..high,
with the figures sorted by the swing they cause, |headline at high - headline
at low|, the most sensitive first (a tornado table). Nothing is timed twice:
the only timing is the cost model's `kernel_time`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rducc.dialects.unchanged import unchanged
from rducc.errors import RduccError
from rducc.targets import Figure, Target

Headline = Callable[[Any], float]
"""A figure of a cost report (`rducc.model.cost_model.Report`): `lambda r: r.modeled_time_s`."""
Estimate = Callable[[Target], Any]
"""The cost model of one program: a target -> its `Report`."""

MODELED_TIME = "modeled time (us)"
RUNS_A_SECOND = "runs/s"
"""1 / modeled time: tokens/s when the program is a one-token decode step."""
DEFAULT_HEADLINES: dict[str, Headline] = {
    MODELED_TIME: lambda report: report.modeled_time_s * 1e6,
    RUNS_A_SECOND: lambda report: 1 / report.modeled_time_s if report.modeled_time_s > 0 else 0.0,
}


@dataclass(frozen=True)
class Swing:
    """One figure's effect on one headline: the headline at its low and at its high."""

    figure: str
    low: float
    high: float
    at_low: float
    at_high: float
    source: str
    assumed: bool

    @property
    def swing(self) -> float:
        return abs(self.at_high - self.at_low)


@dataclass
class HeadlineRange:
    """A headline at the target's values and over its assumptions, with its tornado."""

    name: str
    value: float
    low: float
    high: float
    tornado: list[Swing] = field(default_factory=list)
    """Every ranged figure, the largest swing first (ties in the order of Target's fields)."""

    @property
    def most_sensitive(self) -> str:
        return self.tornado[0].figure if self.tornado and self.tornado[0].swing > 0 else ""


@dataclass
class Ranges:
    """The headlines of one program on one target, each as a range."""

    target: str
    headlines: list[HeadlineRange]

    def to_dict(self) -> dict:
        return {
            "target": self.target,
            "headlines": [
                {"name": h.name, "value": h.value, "low": h.low, "high": h.high, "most_sensitive": h.most_sensitive,
                 "tornado": [{"figure": s.figure, "low": s.low, "high": s.high, "at_low": s.at_low,
                              "at_high": s.at_high, "swing": s.swing, "assumed": s.assumed, "source": s.source}
                             for s in h.tornado]}
                for h in self.headlines
            ],
        }

    def table(self) -> str:
        """Each headline as low..high, then its tornado table."""
        if not any(h.tornado for h in self.headlines):
            return f"ranges: target {self.target} gives no figure a range (a plain number is a published one)"
        out = [f"ranges over target {self.target}'s assumptions (each figure at its low and its high, one at a time)"]
        for h in self.headlines:
            out.append(f"{h.name:<20} {_num(h.value)} ({_num(h.low)}..{_num(h.high)}), "
                       f"most sensitive to {h.most_sensitive or 'none'}")
        for h in self.headlines:
            out += ["", f"tornado: {h.name}", _tornado(h)]
        return "\n".join(out)


def _num(value: float) -> str:
    return f"{value:.6g}"


def _tornado(headline: HeadlineRange) -> str:
    header = ("figure", "low", "high", "at low", "at high", "swing", "kind")
    rows = [(s.figure, _num(s.low), _num(s.high), _num(s.at_low), _num(s.at_high), _num(s.swing),
             "assumed" if s.assumed else "derived") for s in headline.tornado]
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) if i in (0, 6) else c.rjust(w) for i, (c, w) in
                               enumerate(zip(cells, widths))).rstrip() for cells in (header, *rows))


def swing_runs(estimate: Estimate, target: Target) -> dict[str, tuple[Figure, Any, Any]]:
    """Each ranged figure: the cost report with it at its low and at its high (an
    end the program cannot be costed at is an error naming it)."""
    return {name: (figure, _at(estimate, target, name, figure.low, "low"),
                   _at(estimate, target, name, figure.high, "high"))
            for name, figure in target.ranged()}


def _at(estimate: Estimate, target: Target, name: str, value: float, end: str) -> Any:
    """The cost report with one figure at one end of its range."""
    try:
        return estimate(target.with_value(name, value))
    except RduccError as error:
        raise RduccError(f"{error} (with {name} at its {end}, {value:g}, of target {target.name}'s "
                         "ranges)") from None


def headline_ranges(estimate: Estimate, target: Target, headlines: Mapping[str, Headline] | None = None,
                    base: Any = None) -> Ranges:
    """Each headline at the target's values and with each ranged figure at its low
    and high (the others at their value); `base`: the report at the values, if made."""
    headlines = DEFAULT_HEADLINES if headlines is None else headlines
    with unchanged():  # every run reads the one program: what depends on its IR alone is worked out once
        base = base if base is not None else estimate(target)
        runs = swing_runs(estimate, target)
    result = []
    for name, headline in headlines.items():
        value = headline(base)
        swings = [Swing(figure_name, figure.low, figure.high, headline(at_low), headline(at_high), figure.source,
                        figure.assumed) for figure_name, (figure, at_low, at_high) in runs.items()]
        order = sorted(range(len(swings)), key=lambda i: (-swings[i].swing, i))
        seen = [value, *(s.at_low for s in swings), *(s.at_high for s in swings)]
        result.append(HeadlineRange(name, value, min(seen), max(seen), [swings[i] for i in order]))
    return Ranges(target.name, result)


__all__ = ["DEFAULT_HEADLINES", "MODELED_TIME", "RUNS_A_SECOND", "HeadlineRange", "Ranges", "Swing",
           "headline_ranges", "swing_runs"]
