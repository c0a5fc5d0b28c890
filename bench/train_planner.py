"""rdu-place-saved's choices against two simple policies, modeled (cost model).

Each case is a small training step (SGD in the program, layers outlined) on a
test target whose HBM it does not fit, compiled three ways: the planner as it
is; "never recompute" (the planner with recomputes off: spills, cheapest first,
until the step fits); "always spill" (every activation, gradient and value
between kernels that may go to DDR goes there, no recompute). The step times
are `training_speed`'s modeled ones; the ratios are against the planner's, from
the same run. Run: `python bench/train_planner.py` (about a minute).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import rducc  # noqa: E402
from rducc.model.training_speed import training_speed  # noqa: E402
from rducc.passes import rdu_place_saved  # noqa: E402
from rducc.pipeline import pipeline_text  # noqa: E402
from rducc.targets import load_target  # noqa: E402

INPUTS = ROOT / "test" / "passes" / "Inputs"
POLICIES = ("planner", "never recompute", "always spill")


class GatedBlock(nn.Module):
    """A residual block whose normed input feeds a gate and an up projection."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.gate = nn.Linear(width, width)
        self.up = nn.Linear(width, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        return x + torch.sigmoid(self.gate(h)) * self.up(h)


class GatedStack(nn.Module):
    """Two gated blocks (test_place_saved.py's)."""

    def __init__(self, width: int = 64, depth: int = 2) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([GatedBlock(width) for _ in range(depth)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x.pow(2).mean()


class Widening(nn.Module):
    """MLP blocks whose widths change per layer (no two layers alike)."""

    def __init__(self, widths: tuple[int, ...] = (48, 96, 64, 128, 32)) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Sequential(nn.LayerNorm(a), nn.Linear(a, b), nn.GELU())
                                    for a, b in zip(widths, widths[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x.pow(2).mean()


def _llama(layers: int) -> nn.Module:
    from models import LogitsOnly
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    return LogitsOnly(LlamaForCausalLM(config)).train()


def _lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...], Callable[..., torch.Tensor] | None]]
    target: str
    opt_level: int


def _gated() -> tuple[nn.Module, tuple[torch.Tensor, ...], None]:
    torch.manual_seed(3)
    return GatedStack(), (torch.randn(2, 8, 64),), None


def _widening() -> tuple[nn.Module, tuple[torch.Tensor, ...], None]:
    torch.manual_seed(4)
    return Widening(), (torch.randn(4, 8, 48),), None


def _llama3() -> tuple[nn.Module, tuple[torch.Tensor, ...], Callable[..., torch.Tensor]]:
    torch.manual_seed(7)
    return _llama(3), (torch.randint(0, 64, (2, 6)), torch.randint(0, 64, (2, 6))), _lm_loss


CASES = [Case(f"{name} {Path(target).stem} -O{level}", make, str(INPUTS / target), level)
         for name, make in (("GatedStack", _gated), ("Widening", _widening), ("Llama 3 layers", _llama3))
         for target in ("train-slow-ddr.toml", "train-blocked.toml") for level in (0, 2)]


@contextmanager
def policy(name: str) -> Iterator[None]:
    """rdu-place-saved planning by `name` (one of POLICIES) inside the block: the
    planner's choice among its plans (`cheaper_plan`) replaced by one plan."""
    original = rdu_place_saved.cheaper_plan
    plan, candidates = rdu_place_saved.plan_placements, rdu_place_saved._candidates

    def never(step, module, target, second=False):  # type: ignore[no-untyped-def]
        return plan(step, module, target, False, second)

    def spill_all(step, module, target, second=False):  # type: ignore[no-untyped-def]
        return plan(step, module, target if second else dataclasses.replace(target, hbm_bytes=0), False, second)

    def activations_only(*args, **kwargs):  # type: ignore[no-untyped-def]
        return [c for c in candidates(*args, **kwargs) if c.saved is not None]

    if name == "never recompute":
        rdu_place_saved.cheaper_plan = never  # type: ignore[assignment]
    elif name == "always spill":
        rdu_place_saved.cheaper_plan = spill_all  # type: ignore[assignment]
        rdu_place_saved._candidates = activations_only  # type: ignore[assignment]
    try:
        yield
    finally:
        rdu_place_saved.cheaper_plan = original  # type: ignore[assignment]
        rdu_place_saved._candidates = candidates  # type: ignore[assignment]


def step_seconds(case: Case, name: str) -> float:
    """The case's modeled step time under policy `name`."""
    model, inputs, loss_fn = case.make()
    passes = pipeline_text(case.opt_level).replace("rdu-outline-layers", "rdu-outline-layers{training=always}")
    with policy(name):
        step = rducc.compile_training(copy.deepcopy(model), inputs, optimizer="sgd", lr=1e-2, loss_fn=loss_fn,
                                      opt_level=case.opt_level, target=case.target, passes=passes)
    return training_speed(step.module, load_target(case.target)).step_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="cases whose name contains this")
    args = parser.parse_args()
    print("| case | " + " | ".join(POLICIES) + " | planner / best other |")
    print("| --- |" + " --- |" * (len(POLICIES) + 1))
    for case in CASES:
        if args.only and not any(o in case.name for o in args.only):
            continue
        times = {name: step_seconds(case, name) for name in POLICIES}
        best = min(times[n] for n in POLICIES[1:])
        cells = " | ".join(f"{times[n] * 1e6:,.1f} us" for n in POLICIES)
        print(f"| {case.name} | {cells} | {times['planner'] / best:.3f} |", flush=True)


if __name__ == "__main__":
    main()
