"""Calibrate sn40l's assumed constants on published SN40L figures, with leave-one-out checks.

No source gives the kernel launch, the DMA start-up, a collective hop's
latency, or how much of its peak HBM, DDR or a PCU sustains; sn40l.toml
gives each a range. This script fits them, within their ranges, to the
published figures of `PUBLISHED` (docs/calibration.md has the table with
sources), then, for each figure in turn, fits again without it and predicts
it: the leave-one-out error is what the model predicts about a figure it
was not fitted to.

The fit: each published figure is a point (a served speed, a switch time:
residual ln(modeled / published)) or a bound ("over 90%": 0 inside, ln of
the distance outside). The loss is the sum of squared residuals: no pull
towards any chosen value, and no figure dropped (a figure the model cannot
meet stays in the loss and is named with its residual). Coordinate descent
over a grid of each constant's range, from the target file's values. Where
the loss is flat in a constant (the figures do not pin it), the script says
so and gives the interval of values that fit as well, instead of a number.

The programs: each Llama 3.1 decode step (4K KV cache, bf16, -O2) is
compiled with 1 and 2 decoder layers and its time extended to the model's
layers by the per-layer difference, t(L) = t(1) + (L - 1) (t(2) - t(1))
(the layers are identical; with kernel looping every layer after the first
is a looped iteration: exact for the cost model, which adds kernels); the
bytes a token reads likewise. Fusion: the 128-token prefill of 2 layers at
-O0 and -O2 on sn40l-8. Switching: `rducc.model.switching.switch_time` on
the 8B decode program on sn40l-8, extended to 32 layers the same way.

Whether to apply a fit is the leave-one-out's call: the script prints each
figure at the target file's values beside its held-out prediction, and a
verdict (`verdict`: the fit is worth writing only when its held-out mean
|ln error| is below the file's). An assumed constant no figure pins is not
fitted (`UNFITTED`: the script prints what each figure does over its range);
`TIED` ones take another's fitted value when it is written.

Run: python bench/calibrate.py [--quick] [--write]
  --quick: fewer grid points and no leave-one-out (a smoke run);
  --write: the fitted values into compiler/targets/sn40l.toml as each
  figure's value (its range kept): the fitted constants become the targets'
  values only by this one step, which docs/calibration.md records.
"""

from __future__ import annotations

import argparse
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import common  # noqa: F401  (sys.path, warnings)
import models  # noqa: E402
from multi_socket import bytes_per_token  # noqa: E402

from rducc.driver import import_exported, lower  # noqa: E402
from rducc.model.cost_model import estimate  # noqa: E402
from rducc.model.ranges import headline_ranges  # noqa: E402
from rducc.model.switching import switch_time  # noqa: E402
from rducc.targets import BUILTIN_DIR, Target, load_target  # noqa: E402

FITTED = ("kernel_launch_s", "dma_latency_s", "link_latency_s", "hbm_efficiency", "compute_efficiency",
          "ddr_efficiency")
"""The assumed constants fitted (every other figure keeps its value)."""
UNFITTED = ("reconfigure_s",)
"""Assumed constants not fitted (no published figure moves with them, which the run shows)."""
TIED = {"reconfigure_s": "kernel_launch_s"}
"""Constants whose assumption is another's value (sn40l.toml: a configuration load costs a
launch): `--write` writes the fitted value of the second into the first too."""
LINEAR = {"hbm_efficiency", "compute_efficiency", "ddr_efficiency"}
"""Constants gridded linearly (the latencies in log space: they span decades)."""
GRID = 11
FLAT = 1e-4
"""Loss within this of the best: a value that fits as well (the figures do not tell them apart)."""
CACHED = 4096
LAYERS = {"8b": 32, "70b": 80, "405b": 126}


@dataclass(frozen=True)
class Published:
    """One published figure: a point (low == high) or an interval, and where it comes from."""

    name: str
    low: float
    high: float
    source: str
    shown: str
    note: str = ""
    """Why the model cannot meet it, when it cannot (printed with its residual)."""
    unit: str = "x"
    """How it is shown: tok/s, share, s, B/s or x (a ratio)."""

    def residual(self, modeled: float) -> float:
        """0 inside [low, high] (a point: exactly there); else ln(modeled / the nearer end)."""
        if modeled < self.low:
            return math.log(modeled / self.low)
        if modeled > self.high:
            return math.log(modeled / self.high)
        return 0.0


AA = "SambaNova via Artificial Analysis, Sep 2024 (shared/TARGETS.md)"
PUBLISHED = [
    Published("tokens/s, Llama 3.1 8B decode, 16 sockets", 1042.0, 1042.0, AA, "1,042 (served)",
              note="a served speed holds the service's own overheads (batching with other users, "
                   "sampling, the network), which no chip constant models", unit="tok/s"),
    Published("tokens/s, Llama 3.1 70B decode, 16 sockets", 457.0, 457.0, AA, "457 (served)",
              note="above what reading every weight once a token allows on 16 sockets' HBM (the roofline "
                   "printed below): the service must decode several tokens a weight pass (speculative "
                   "decoding) or read fewer bytes; rducc's program reads every weight once a token",
              unit="tok/s"),
    Published("tokens/s, Llama 3.1 405B decode, 16 sockets", 129.0, 129.0, AA, "129 (served)",
              note="above the HBM roofline as the 70B is (printed below), by more", unit="tok/s"),
    Published("share of peak HBM bandwidth, 8B decode, 8 sockets", 0.90, 1.0, "arXiv 2410.23668, abstract",
              "over 90%", unit="share"),
    Published("share of peak HBM bandwidth, 8B decode, 16 sockets", 0.90, 1.0, "arXiv 2410.23668, abstract",
              "over 90%",
              note="rducc's tp=16 program reads each of the 8 KV heads' weights and cache on two sockets "
                   "(1.08 GB a token over the roofline's bytes), and its all-reduces wait between layers: "
                   "the share is below 93.5% at a perfect HBM", unit="share"),
    Published("share of peak, 8B decode, 8 sockets (DAC 2025)", 0.75, 1.0,
              "SambaNova, DAC 2025 talk (shared/TARGETS.md)", "over 75%", unit="share"),
    Published("share of peak, 8B decode, 16 sockets (DAC 2025)", 0.75, 1.0,
              "SambaNova, DAC 2025 talk (shared/TARGETS.md)", "over 75%", unit="share"),
    Published("fusion speedup -O0/-O2, 8B prefill 128, 8 sockets", 2.0, 13.0, "arXiv 2405.07518, abstract",
              "2x to 13x"),
    Published("switch Llama 3.1 8B into HBM, 8 sockets (s)", 0.01, 0.01, "Hot Chips 2024 (shared/TARGETS.md)",
              "about 0.01 s",
              note="16.06 GB in 10 ms is 250 GB/s a socket at tp=8; the derived DDR figure is 100 GB/s a "
                   "socket (1.6 TB/s for 16 sockets / 16) and rducc's plan keeps more than the weights' "
                   "share a socket (the embedding and the KV heads are replicated), so it switches 3x slower",
              unit="s"),
    Published("DDR -> HBM bytes/s, one node of 8 sockets", 1e12, math.inf, "arXiv 2405.07518, Sections I, VI-C",
              "over 1 TB/s", note="8 x the derived 100 GB/s is 0.8 TB/s at a perfect DDR: the rack's 1.6 TB/s "
              "for 16 sockets and the paper's node figure disagree", unit="B/s"),
]
NOT_MODELED = [
    ("tokens/s, DeepSeek-R1 671B decode, 16 sockets", "198", "SambaNova, DAC 2025 talk",
     "not in this fit: bench/massive.py compiles the DeepSeek-V3/R1 program at the fitted constants and "
     "models 36..65 tokens/s (the routing as a range; 21.6 GB a socket in DDR: the embedding and 24% of "
     "each expert table's rows), "
     "BENCHMARKS.md's massive-models section"),
    ("switching speedup over DGX H100 / DGX A100", "15x / 31x", "arXiv 2405.07518, Table V",
     "a check, not fitted: bench/coe.py prints rducc.model.switching's prediction beside it"),
]


@dataclass
class Programs:
    """The programs compiled once, by name: (1-layer, 2-layer) modules and bytes a token."""

    decode: dict[tuple[str, int], tuple[object, object]]
    needed: dict[tuple[str, int], tuple[int, int]]
    prefill: dict[int, object]


def compile_programs(log: Callable[[str], None], sizes: tuple[str, ...] = ("8b", "70b", "405b")) -> Programs:
    decode, needed, prefill = {}, {}, {}
    runs = [("8b", 8), *((size, 16) for size in sizes)]
    for size, sockets in runs:
        target = load_target(f"sn40l-{sockets}")
        pair, sizes_read = [], []
        for layers in (1, 2):
            start = time.perf_counter()
            model, inputs = models.llama31_decode_meta(size, CACHED, layers)
            module = import_exported(models.export(model, inputs))
            lower(module, target, 2)
            pair.append(module)
            sizes_read.append(bytes_per_token(model, inputs))
            log(f"compiled {size} decode, {layers} layer(s), sn40l-{sockets}: {time.perf_counter() - start:.0f} s")
        decode[size, sockets] = (pair[0], pair[1])
        needed[size, sockets] = (sizes_read[0], sizes_read[1])
    for level in (0, 2):
        module = import_exported(models.export(*models.llama31_8b_meta(seq=128, layers=2)))
        lower(module, load_target("sn40l-8"), level)
        prefill[level] = module
    log("compiled the prefill at -O0 and -O2")
    return Programs(decode, needed, prefill)


def extended(pair: tuple[float, float], layers: int) -> float:
    """A per-layer figure at `layers` layers from its 1- and 2-layer values."""
    return pair[0] + (layers - 1) * (pair[1] - pair[0])


class Model:
    """The modeled counterpart of each PUBLISHED figure at a set of constants (cached)."""

    def __init__(self, programs: Programs) -> None:
        self.programs = programs
        self.cache: dict[tuple[float, ...], list[float]] = {}

    def figures(self, values: dict[str, float]) -> list[float]:
        key = tuple(sorted(values.items()))
        if key not in self.cache:
            self.cache[key] = self._figures(values)
        return self.cache[key]

    def decode_s(self, size: str, sockets: int, target: Target) -> float:
        one, two = self.programs.decode[size, sockets]
        return extended((estimate(one, target).modeled_time_s, estimate(two, target).modeled_time_s), LAYERS[size])

    def share_of_peak(self, size: str, sockets: int, target: Target) -> float:
        read = extended(self.programs.needed[size, sockets], LAYERS[size])
        return read / (sockets * target.hbm_bandwidth) / self.decode_s(size, sockets, target)

    def switch_s(self, target: Target) -> tuple[float, float]:
        """(seconds to switch the 32-layer 8B in on sn40l-8, node bytes/s of the copy)."""
        one, two = (switch_time(m, target) for m in self.programs.decode["8b", 8])
        copy = extended((one.copy_s, two.copy_s), 32)
        fixed = two.switch_s - two.copy_s
        per_socket = extended((one.hbm_bytes_per_socket, two.hbm_bytes_per_socket), 32)
        return copy + fixed, target.sockets * per_socket / copy

    def _figures(self, values: dict[str, float]) -> list[float]:
        t8, t16 = (with_values(load_target(f"sn40l-{s}"), values) for s in (8, 16))
        speeds = [1 / self.decode_s(size, 16, t16) if (size, 16) in self.programs.decode else math.nan
                  for size in ("8b", "70b", "405b")]
        shares = [self.share_of_peak("8b", 8, t8), self.share_of_peak("8b", 16, t16)]
        o0, o2 = (estimate(self.programs.prefill[level], t8).modeled_time_s for level in (0, 2))
        switch_s, copy_rate = self.switch_s(t8)
        return [*speeds, *shares, *shares, o0 / o2, switch_s, copy_rate]


def with_values(target: Target, values: dict[str, float]) -> Target:
    for name, value in values.items():
        target = target.with_value(name, value)
    return target


def grid(name: str, target: Target, points: int = GRID) -> list[float]:
    figure = target.figure(name)
    steps = [i / (points - 1) for i in range(points)]
    if name in LINEAR:
        return [figure.low + t * (figure.high - figure.low) for t in steps]
    return [figure.low * (figure.high / figure.low) ** t for t in steps]


def loss(model: Model, values: dict[str, float], used: list[int]) -> float:
    figures = model.figures(values)
    return sum(PUBLISHED[i].residual(figures[i]) ** 2 for i in used if not math.isnan(figures[i]))


def fit(model: Model, used: list[int], points: int = GRID, log: Callable[[str], None] = lambda _: None
        ) -> tuple[dict[str, float], float]:
    """Coordinate descent over each constant's grid from the target file's values
    (moving only on a strictly lower loss), on the figures `used`."""
    target = load_target("sn40l")
    values = {n: float(getattr(target, n)) for n in FITTED}
    best = loss(model, values, used)
    for sweep in range(4):
        changed = False
        for name in FITTED:
            for candidate in grid(name, target, points):
                trial = values | {name: candidate}
                value = loss(model, trial, used)
                if value < best - 1e-12:
                    values, best, changed = trial, value, True
        log(f"sweep {sweep + 1}: loss {best:.5g} at " + ", ".join(f"{n} {v:.4g}" for n, v in values.items()))
        if not changed:
            break
    return values, best


def flat_interval(model: Model, values: dict[str, float], best: float, name: str, used: list[int],
                  points: int = GRID) -> tuple[float, float]:
    """The values of one constant (the others at the fit) whose loss is within FLAT of the best."""
    good = [v for v in grid(name, load_target("sn40l"), points)
            if loss(model, values | {name: v}, used) <= best + FLAT]
    return (min(good), max(good)) if good else (values[name], values[name])


def write_values(values: dict[str, float], path: Path = BUILTIN_DIR / "sn40l.toml") -> None:
    """Each fitted value into the target file's `value = ...` of that figure (its range
    kept; rounded to 3 digits, then kept within the range), and into the figures TIED to
    it, checked before it is written."""
    text = path.read_text()
    target = load_target(str(path))
    values = values | {name: values[source] for name, source in TIED.items() if source in values}
    for name, value in values.items():
        figure = target.figure(name)
        pattern = re.compile(rf"^({name} = \{{ value = )([^,]+)(,)", re.MULTILINE)
        shown = repr(min(max(float(f"{value:.3g}"), figure.low), figure.high))
        text, count = pattern.subn(lambda m, shown=shown: f"{m.group(1)}{shown}{m.group(3)}", text)
        assert count == 1, name
    staged = path.with_suffix(".calibrated.toml")
    staged.write_text(text)
    try:
        load_target(str(staged))  # still valid: every value within its range
    finally:
        staged.unlink()
    path.write_text(text)


def shown(published: Published, value: float) -> str:
    if math.isnan(value):
        return "not compiled"
    return {"share": f"{value:.1%}", "s": f"{value * 1e3:.1f} ms", "B/s": f"{value / 1e12:.2f} TB/s",
            "tok/s": f"{value:,.0f}" if value >= 100 else f"{value:.1f}"}.get(published.unit, f"{value:.2f}x")


def rooflines(model: Model) -> list[str]:
    """Each 16-socket decode's tokens/s if it read its bytes at the sockets' peak HBM."""
    lines = []
    for size in LAYERS:
        if (size, 16) in model.programs.needed:
            read = extended(model.programs.needed[size, 16], LAYERS[size])
            peak = 16 * load_target("sn40l-16").hbm_bandwidth
            lines.append(f"- Llama 3.1 {size.upper()} on 16 sockets reads {read / 1e9:.1f} GB a token: at the HBM "
                         f"roofline ({peak / 1e12:.1f} TB/s) {peak / read:,.0f} tokens/s at most")
    return lines


def table(fitted: list[float], held_out: list[float | None], in_file: list[float]) -> str:
    rows = ["| published figure | source | published | at the file's values | modeled at the fit | fit residual | "
            "left out: predicted | left-out residual |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for i, published in enumerate(PUBLISHED):
        out = held_out[i]
        loo = ("", "") if out is None else (shown(published, out), f"{published.residual(out):+.3f}")
        rows.append(f"| {published.name} | {published.source} | {published.shown} | "
                    f"{shown(published, in_file[i])} ({published.residual(in_file[i]):+.3f}) | "
                    f"{shown(published, fitted[i])} | {published.residual(fitted[i]):+.3f} | {loo[0]} | {loo[1]} |")
    for name, value, source, _why in NOT_MODELED:
        rows.append(f"| {name} | {source} | {value} | not modeled | | | | |")
    return "\n".join(rows)


def mean_abs(residuals: list[float]) -> float:
    return sum(abs(r) for r in residuals) / len(residuals) if residuals else math.nan


def verdict(held_out: list[float | None], in_file: list[float]) -> str:
    """Whether the fit predicts the figures it was not fitted to better than the
    target file's values do (the refit is applied only then): both mean |ln error|
    over the same figures."""
    kept = [i for i, v in enumerate(held_out) if v is not None]
    loo = mean_abs([PUBLISHED[i].residual(held_out[i]) for i in kept])  # type: ignore[arg-type]
    now = mean_abs([PUBLISHED[i].residual(in_file[i]) for i in kept])
    better = "the fit predicts held-out figures better: apply it (--write)" if loo < now - 1e-3 else \
        "the fit does not predict held-out figures better than the file's values: keep them"
    return f"mean |ln error| over {len(kept)} figures: left out {loo:.3f}, at the file's values {now:.3f}: {better}"


def unpinned(model: Model, values: dict[str, float], name: str) -> str:
    """Each figure at an unfitted constant's low and high (the others at the fit): what
    the published figures say about it."""
    figure = load_target("sn40l").figure(name)
    low, high = (model.figures(values | {name: v}) for v in (figure.low, figure.high))
    moved = [f"{p.name}: {shown(p, a)} .. {shown(p, b)}" for p, a, b in zip(PUBLISHED, low, high)
             if not math.isnan(a) and abs(a - b) > 1e-9 * max(abs(a), abs(b))]
    return (f"{name} (not fitted) over {figure.low:.3g}..{figure.high:.3g}: "
            + ("; ".join(moved) if moved else "no published figure moves"))


def speed_ranges(model: Model) -> list[str]:
    """Each 16-socket decode's tokens/s at the target file's values and over its ranged
    figures (each at its low and its high, one at a time: compiler/model/ranges.py)."""
    rows = ["| model, 16 sockets | tokens/s | low..high | most sensitive to |", "| --- | --- | --- | --- |"]
    target = load_target("sn40l-16")
    for size in LAYERS:
        if (size, 16) not in model.programs.decode:
            continue
        found = headline_ranges(lambda t, size=size: model.decode_s(size, 16, t), target,
                                {"tokens/s": lambda seconds: 1 / seconds})
        (speed,) = found.headlines
        rows.append(f"| Llama 3.1 {size.upper()} | {speed.value:,.0f} | {speed.low:,.0f}..{speed.high:,.0f} | "
                    f"`{speed.most_sensitive}` |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a coarse grid, no leave-one-out, 8B only")
    parser.add_argument("--write", action="store_true", help="write the fitted values into sn40l.toml")
    args = parser.parse_args()
    start = time.perf_counter()
    programs = compile_programs(print, ("8b",) if args.quick else ("8b", "70b", "405b"))
    print(f"compiled in {time.perf_counter() - start:.0f} s")
    model = Model(programs)
    points = 5 if args.quick else GRID
    used = [i for i, f in enumerate(model.figures({n: float(getattr(load_target('sn40l'), n)) for n in FITTED}))
            if not math.isnan(f)]
    start = time.perf_counter()
    values, best = fit(model, used, points, print)
    print(f"fitted in {time.perf_counter() - start:.0f} s, loss {best:.4g}")
    target = load_target("sn40l")
    print("\n| constant | range | before | fitted | fits as well |\n| --- | --- | --- | --- | --- |")
    for name in FITTED:
        figure = target.figure(name)
        low, high = flat_interval(model, values, best, name, used, points)
        print(f"| {name} | {figure.low:.3g}..{figure.high:.3g} | {getattr(target, name):.3g} | "
              f"{values[name]:.3g} | {low:.3g}..{high:.3g} |")
    held_out: list[float | None] = [None] * len(PUBLISHED)
    if not args.quick:
        for i in used:
            rest = [j for j in used if j != i]
            left, _ = fit(model, rest, points)
            held_out[i] = model.figures(left)[i]
            print(f"left out {PUBLISHED[i].name}: predicted {shown(PUBLISHED[i], held_out[i])}")
    fitted = model.figures(values)
    in_file = model.figures({n: float(getattr(target, n)) for n in FITTED})
    print("\n" + table(fitted, held_out, in_file))
    if not args.quick:
        print("\n" + verdict(held_out, in_file))
    for name in UNFITTED:
        print(unpinned(model, values, name))
    missed = [(p, v) for p, v in zip(PUBLISHED, fitted) if not math.isnan(v) and p.residual(v) != 0]
    print("\nfigures the model cannot meet at its best fit:" if missed else "\nevery fitted figure is met")
    for p, v in missed:
        print(f"- {p.name}: {shown(p, v)} against {p.shown} ({p.residual(v):+.3f}). {p.note}")
    for name, value, _source, why in NOT_MODELED:
        print(f"- {name} ({value}): {why}")
    print("\n" + "\n".join(rooflines(model)))
    if not args.quick:
        print("\nat the target file's values, over its ranges:\n" + "\n".join(speed_ranges(model)))
    if args.write:
        write_values(values)
        print(f"\nwrote {', '.join([*FITTED, *TIED])} into {BUILTIN_DIR / 'sn40l.toml'}")


if __name__ == "__main__":
    main()
