"""rdu-place-saved's price of its placement against the cost model's, same run (modeled).

rdu-place-saved picks spills and recomputes by the modeled seconds each adds to the
step (`plan_price`). The cost model charges the placed program. This compiles each
case twice: on a target whose HBM the step does not fit (the planner places values
in DDR or recomputes them) and on the same target with HBM enough for everything
(nothing placed). It prints the planner's price of its plans (each round's), the
cost model's step time both ways, their difference (what the placement costs the
cost model) and the DDR stall of the placed step. The planner's price should be
that difference.

Cases: an outlined tiny Llama (2 layers, SGD) on test targets with small HBM
(test/passes/Inputs), compiled in seconds; `--llama8b`: Llama 3.1 8B at 2 layers,
AdamW, sequence 4,096, on sn40l with 12 GB of HBM (minutes).

Run: python bench/train_planner_price.py [--llama8b] [--only NAME]
"""

from __future__ import annotations

import argparse
import copy
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch  # noqa: E402
from common import Section
from torch import nn  # noqa: E402

import rducc  # noqa: E402
from rducc.model.training_speed import training_speed  # noqa: E402
from rducc.passes import rdu_place_saved  # noqa: E402
from rducc.pipeline import pipeline_text  # noqa: E402
from rducc.targets import load_target  # noqa: E402

INPUTS = Path(__file__).resolve().parents[1] / "test" / "passes" / "Inputs"
ROOMY_HBM = 10**15
"""The HBM of the roomy twin of a target: every value fits, nothing is placed."""


@dataclass(frozen=True)
class Case:
    name: str
    compile: Callable[[str], object]
    """Compile the step for a target file, returning what has `.module`."""
    target: str


def _tiny_llama(layers: int, level: int) -> Callable[[str], object]:
    def build(target: str) -> object:
        from models import LogitsOnly
        from transformers import LlamaConfig, LlamaForCausalLM

        torch.manual_seed(7)
        config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
        model = LogitsOnly(LlamaForCausalLM(config)).train()
        ids = torch.randint(0, 64, (2, 6))
        passes = pipeline_text(level).replace("rdu-outline-layers", "rdu-outline-layers{training=always}")

        def loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())

        return rducc.compile_training(copy.deepcopy(model), (ids, ids), optimizer="sgd", lr=1e-2, loss_fn=loss,
                                      opt_level=level, target=target, passes=passes)
    return build


def _llama8b(target: str) -> object:
    import train_llama

    from rducc.driver import CompileOptions
    from rducc.training.compile import compile_step, single_group
    from rducc.training.optimizers import named_optimizer
    from rducc.training.program import export_for_training

    model, ids = train_llama.llama_loss("8b", 2)
    ep, _, _ = export_for_training(model, (ids, ids), None, None, 1.0, None, 1)
    groups = single_group(named_optimizer("adamw", {"lr": 1e-4}), ep)
    return compile_step(ep, groups, CompileOptions(target=target, opt_level=2))


def _twin(target: str, hbm: int, folder: Path) -> str:
    """A target file inheriting `target` with `hbm` bytes of HBM."""
    path = folder / f"{Path(target).stem}-{hbm}.toml"
    path.write_text(f'inherits = "{target}"\nname = "{path.stem}"\nhbm_bytes = {hbm}\n')
    return str(path)


@contextmanager
def prices() -> Iterator[list[float]]:
    """The price of each plan rdu-place-saved keeps (`cheaper_plan`), in order, while open."""
    found: list[float] = []
    original = rdu_place_saved.cheaper_plan

    def recorded(*args, **kwargs):  # type: ignore[no-untyped-def]
        plan = original(*args, **kwargs)
        found.append(plan.cost_s)
        return plan

    rdu_place_saved.cheaper_plan = recorded  # type: ignore[assignment]
    try:
        yield found
    finally:
        rdu_place_saved.cheaper_plan = original  # type: ignore[assignment]


def measure(case: Case, folder: Path) -> str:
    """One table row: the planner's prices, the cost model's step placed and roomy, the stall."""
    tight = case.target
    with prices() as priced:
        placed = case.compile(tight).module  # type: ignore[attr-defined]
    roomy = _twin(tight, ROOMY_HBM, folder)
    with prices() as unplaced:
        free = case.compile(roomy).module  # type: ignore[attr-defined]
    speed = training_speed(placed, load_target(tight))
    base = training_speed(free, load_target(roomy))
    added = speed.step_s - base.step_s
    price = sum(priced) - sum(unplaced)
    rounds = " + ".join(f"{p * 1e3:,.4f}" for p in priced)
    ratio = price / added if added else float("nan")
    return (f"| {case.name} | {rounds} ms | {speed.step_s * 1e3:,.4f} ms | {base.step_s * 1e3:,.4f} ms "
            f"| {added * 1e3:,.4f} ms | {speed.phase_s.get('DDR traffic', 0.0) * 1e3:,.4f} ms | {ratio:.3f} |")


def cases(llama8b: bool, folder: Path) -> list[Case]:
    found = [Case(f"tiny Llama 2 layers, {name} -O{level}", _tiny_llama(2, level), str(INPUTS / f"{name}.toml"))
             for name in ("train-slow-ddr", "train-blocked", "train-hbm") for level in (0, 2)]
    if llama8b:
        sn40l = str(Path(rducc.__file__).parent / "targets" / "sn40l.toml")
        found.append(Case("Llama 3.1 8B 2 layers AdamW, sn40l at 12 GB HBM", _llama8b,
                          _twin(sn40l, 12 * 10**9, folder)))
    return found


def run(quick: bool, only: list[str] | None = None, llama8b: bool = False) -> Section:
    command = "python bench/train_planner_price.py" + (" --llama8b" if llama8b else "")
    section = Section("rdu-place-saved's price against the cost model (modeled)", command)
    rows = ["| case | planner's price (rounds) | step placed | step, HBM for all | placed - roomy "
            "| DDR stall | price / (placed - roomy) |", "| --- | --- | --- | --- | --- | --- | --- |"]
    with tempfile.TemporaryDirectory() as name:
        for case in cases(llama8b, Path(name)):
            if only and not any(o in case.name for o in only):
                continue
            rows.append(measure(case, Path(name)))
            print(rows[-1], file=sys.stderr, flush=True)
    section.details += rows
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama8b", action="store_true", help="also Llama 3.1 8B at 2 layers (minutes)")
    parser.add_argument("--only", action="append", default=[], help="cases whose name contains this")
    args = parser.parse_args()
    print(run(False, args.only, args.llama8b).text())


if __name__ == "__main__":
    main()
