"""The training split chooser on Llama 3.1 8B full fine-tuning (AdamW, seq 4,096) for sn40l-8.

Builds the step as `rducc.compile_training` does (meta device, bf16, batch
1, AdamW's update and state in the program; bench/train_llama.py's loss) up
to the level `rdu-partition` runs at (imported, canonicalized, its layers
outlined), then, in the same run:

- **after**: `rdu-partition` with no split given: every candidate (dp, tp,
  pp, dp x tp, with and without ZeRO) estimated from one profile of the
  step (`rducc.model.split_choice`), the step partitioned once, for the
  winner; its seconds and the candidates' table (modeled step times, and
  why the winner won);
- **before**: what the chooser did until now, a copy of the step partitioned
  for each candidate that uses every socket and timed by
  `training_estimate`. That estimate does not read outlined layers (a
  `func.call` has no op facts), so this runs on the step with its layers
  inlined (`inline_calls`), as it was compiled before training steps were
  outlined.

- **check** (`--check`): for every candidate the chooser models and
  `rdu-partition` compiles (dp, tp, pp, dp x tp, ZeRO), the chooser's
  estimate beside `training_estimate` of the step partitioned that way (the
  compiled program's collectives, over their replica groups, each costed on
  the target's topology; its optimizer on one rank's shard under ZeRO), and
  the relative error. `--batch B` gives dp something to split (batch 1
  leaves only tp and pp).

Every step time is modeled, not measured; the compile seconds are measured
on this machine. --quick: 2 decoder layers; --layers N: N layers.

Run: python bench/train_split_choice.py [--quick | --layers N] [--no-before] [--check] [--batch B]
"""

from __future__ import annotations

import argparse
import time

import torch
from common import Section
from train_llama import llama_loss  # noqa: E402
from xdsl.context import Context  # noqa: E402

from rducc.dialects.contracts import data_parallel_of, partition_of, split_choice_of  # noqa: E402
from rducc.driver import CompileOptions, resolve_passes  # noqa: E402
from rducc.errors import RduccError  # noqa: E402
from rducc.model.pipeline_schedule import default_microbatches  # noqa: E402
from rducc.model.split_choice import candidates, estimate_candidate  # noqa: E402
from rducc.model.training_speed import training_estimate  # noqa: E402
from rducc.passes.rdu_outline_layers import inline_calls  # noqa: E402
from rducc.passes.rdu_partition import CHOSEN_ZERO, RduPartition, partition_module  # noqa: E402
from rducc.passes.rdu_partition.training import training_profile  # noqa: E402
from rducc.targets import load_target  # noqa: E402
from rducc.training.compile import compile_step  # noqa: E402
from rducc.training.program import _groups, export_for_training  # noqa: E402

TARGET = "sn40l-8"
BEFORE_SPLITS = [(8, 1, 1), (1, 8, 1), (4, 1, 2), (1, 4, 2), (2, 1, 4), (1, 2, 4), (1, 1, 8)]
"""The splits the chooser copied and partitioned the step for until now (every socket; dp or tp with pp)."""


def level_one_step(layers: int, batch: int = 1):
    """The 8B AdamW step, imported, canonicalized and outlined (what rdu-partition sees), and the seconds."""
    start = time.perf_counter()
    model, ids = llama_loss("8b", layers)
    ids = torch.zeros((batch, ids.shape[1]), dtype=ids.dtype, device="meta")
    ep, module, _ = export_for_training(model, (ids, ids), None)
    groups = _groups("adamw", {"lr": 1e-4}, ep, module)
    passes = resolve_passes("rdu-canonicalize,rdu-outline-layers")
    step = compile_step(ep, groups, CompileOptions(load_target(TARGET), 2, passes=passes))
    return step.module, time.perf_counter() - start


def before(module) -> tuple[float, list[str]]:
    """The old chooser's work on the inlined step: seconds and one line a split."""
    target = load_target(TARGET)
    flat = inline_calls(module)
    lines = []
    start = time.perf_counter()
    for dp, tp, pp in BEFORE_SPLITS:
        if dp > 1:
            lines.append(f"dp={dp} tp={tp} pp={pp}: skipped (dp does not divide the batch of 1)")
            continue
        trial = flat.clone()
        try:
            partition_module(trial, tp, pp, strict=True, dp=dp)
        except RduccError as error:
            lines.append(f"dp={dp} tp={tp} pp={pp}: {str(error).splitlines()[0]}")
            continue
        seconds = training_estimate(trial, target, default_microbatches(1, pp)).step_s
        lines.append(f"dp={dp} tp={tp} pp={pp}: {seconds * 1e3:,.2f} ms (training_estimate)")
    return time.perf_counter() - start, lines


def check(module) -> list[str]:
    """Per candidate the chooser models and rdu-partition compiles: the chooser's
    estimate, `training_estimate` of the step partitioned so, and the error."""
    from rducc.passes.rdu_partition import _split_step

    target = load_target(TARGET)
    profile = training_profile(module, target, _split_step)
    lines = [f"{'candidate':<22} {'chooser':>12} {'partitioned':>12} {'error':>8}"]
    errors = []
    for candidate in candidates(target.sockets, profile.batch):
        if candidate.zero and not profile.state_bytes:
            continue
        modeled = estimate_candidate(profile, candidate, target)
        if modeled.schedule is None:
            lines.append(f"{candidate.name():<22} -- {modeled.refused}")
            continue
        trial = module.clone()
        try:
            partition_module(trial, candidate.tp, candidate.pp, strict=True, dp=candidate.dp,
                             microbatches=modeled.microbatches, zero=CHOSEN_ZERO if candidate.zero else 0)
        except RduccError as error:
            lines.append(f"{candidate.name():<22} -- not compiled: {str(error).splitlines()[0]}")
            continue
        compiled = training_estimate(trial, target, modeled.microbatches).step_s
        error = modeled.step_s / compiled - 1
        errors.append(abs(error))
        lines.append(f"{candidate.name():<22} {modeled.step_s * 1e3:>9,.2f} ms {compiled * 1e3:>9,.2f} ms "
                     f"{error:>+8.1%}")
    if errors:
        lines.append(f"largest |error| {max(errors):.1%}, mean {sum(errors) / len(errors):.1%} over "
                     f"{len(errors)} compiled candidates")
    return lines


def run(layers: int, with_before: bool = True, with_check: bool = False, batch: int = 1) -> Section:
    section = Section(f"Training split chooser: Llama 3.1 8B + AdamW, seq 4,096, batch {batch}, {layers} layers, "
                      f"{TARGET}", f"python bench/train_split_choice.py --layers {layers} --batch {batch}"
                      + (" --check" if with_check else ""))
    module, build_s = level_one_step(layers, batch)
    checked = check(module) if with_check else []
    section.add("building the step to rdu-partition's level (export, import, outline)", f"{build_s:,.1f} s")
    old_s, old_lines = before(module) if with_before else (0.0, [])
    start = time.perf_counter()
    RduPartition(target=TARGET).apply(Context(), module)
    new_s = time.perf_counter() - start
    (tp, pp), dp = partition_of(module), data_parallel_of(module)
    section.add("chosen split", f"dp={dp} tp={tp} pp={pp}")
    section.add("rdu-partition with the chooser (profile, every candidate, one partition)", f"{new_s:,.1f} s")
    if with_before:
        section.add("before: a copy partitioned and estimated per split (inlined step)", f"{old_s:,.1f} s")
        section.add("before / after", f"{old_s / new_s:,.1f}x")
    section.details += ["```", *split_choice_of(module), "```"]
    if old_lines:
        section.details += ["", "Before (the same step, layers inlined, a copy per split):", "```", *old_lines, "```"]
    if checked:
        section.details += ["", "The chooser's estimate against the step partitioned per candidate "
                            "(training_estimate of the compiled split):", "```", *checked, "```"]
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 decoder layers")
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--no-before", action="store_true", help="skip the old chooser's run")
    parser.add_argument("--check", action="store_true",
                        help="partition the step per compiled candidate and compare the chooser's estimate")
    parser.add_argument("--batch", type=int, default=1, help="sequences a step (dp splits them)")
    args = parser.parse_args()
    start = time.perf_counter()
    section = run(2 if args.quick else args.layers, not args.no_before, args.check, args.batch)
    section.seconds = time.perf_counter() - start
    print(section.text())


if __name__ == "__main__":
    main()
