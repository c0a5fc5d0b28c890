"""Modeled training steps (cost model): Llama 3.1 8B and 70B full fine-tuning at sequence 4,096.

Each step is the joint graph (rducc's `joint_graph`, torch's
`_export_forward_backward` made to work on the meta device: forward, loss,
backward; without an optimizer the gradients are the step's results) of the
exact Llama 3.1 config on the
meta device (bf16, batch 1, sequence 4,096, examples/models.py), compiled by
rducc for the target (-O2: rdu-place-saved decides what lives in SRAM, HBM,
DDR or is recomputed; rdu-split-contraction splits the output layer's
backward matmul over the vocabulary) and costed from shapes alone. Figures:
the modeled step time by phase, tokens/s and MFU (6 x N x tokens / time /
(peak x sockets)), the bytes of weights, activations and gradients per tier
and the DDR traffic a step, with the compile time on this machine; beside
them, published MFU figures of GPU training of the same models (each with
its number and its source). Every rducc figure is modeled, not measured.

Compile time: what each layer costs by stage, with the scaling mechanisms on
and off in the same run, is bench/train_compile_scaling.py's. Measured on
this repository's 2-core machine shared by 9 sessions (load average about
20), the 32-layer 8B step (no optimizer) at -O2 for sn40l compiled in 381 s
of rducc stages after export (300 s), verify 173 s of them before the
dealloc verifier walked each live range once (BENCHMARKS.md).

The loss is transformers' own (`LlamaForCausalLM(input_ids, labels=labels)`:
the logits in float32, shifted, cross_entropy with ignore_index -100): the
gather of each row's target from the 4,096 x 128,256 logits is an indexed
DMA of the off-chip logits (`tier.gather` with two index buffers). The
`adamw` rows are `rducc.compile_training`'s step (AdamW's update and state
in the program); the table gives the MFU range over the target's assumed
figures, the slowest compile stages and the process's peak memory.

--quick compiles 2 decoder layers of each model (tokens/s and MFU are then
those of the 2-layer model).

--tp N forces tensor parallelism over N sockets (the split chooser's choice
otherwise); each row then also gives the program's collectives by kind (those
the ops of every function hold, a layer's once however often it is called).

Run: python bench/train_llama.py [--quick] [--tp N] [--only MODEL:TARGET[:OPTIMIZER] ...]
(e.g. --only 70b:sn40l-16:adamw: Llama 3.1 70B, 80 layers, AdamW, on sn40l-16)
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections import Counter
from collections.abc import Sequence

from common import Section

import models  # noqa: E402
import torch  # noqa: E402


from xdsl.dialects.builtin import ModuleOp  # noqa: E402

from rducc.dialects.contracts import data_parallel_of, partition_of  # noqa: E402
from rducc.dialects.rdu.collectives import COLLECTIVE_OPS  # noqa: E402
from rducc.driver import CompileOptions, StageTimes, compile_module  # noqa: E402
from rducc.model.cost_model import estimate  # noqa: E402
from rducc.model.training_speed import MFU, TrainingSpeed, training_ranges, training_speed  # noqa: E402
from rducc.targets import load_target  # noqa: E402
from rducc.training.compile import compile_step as compile_training_step  # noqa: E402
from rducc.training.compile import joint_graph  # noqa: E402
from rducc.training.compile import single_group  # noqa: E402
from rducc.training.optimizers import named_optimizer  # noqa: E402
from rducc.training.program import export_for_training  # noqa: E402

SEQ = 4096
LAYERS = {"8b": 32, "70b": 80}
RUNS = [("8b", "sn40l", None), ("8b", "sn40l", "adamw"), ("8b", "sn40l-8", None), ("8b", "dgx-h100", None),
        ("70b", "sn40l-16", None), ("70b", "sn40l-16", "adamw")]
"""(model, target, optimizer) compiled and costed; with an optimizer, the step is
`rducc.compile_training`'s (AdamW's update and state in the program)."""

PUBLISHED = [
    ("Llama 3 8B pretraining, 8 H100, seq 8192, FP8", "711 model TFLOP/s a GPU: 36% of 1,979 dense FP8 TFLOP/s",
     "NVIDIA NeMo Framework 24.12 performance summary (docs.nvidia.com/nemo-framework/user-guide/24.12/"
     "nemotoolkit/performance/performance_summary.html)"),
    ("Llama 3 70B pretraining, 64 H100, seq 8192, FP8", "734 model TFLOP/s a GPU: 37% of 1,979 dense FP8 TFLOP/s",
     "same"),
    ("Llama 3 405B pretraining, 16K H100, BF16", "38-43% MFU", "The Llama 3 Herd of Models, arXiv 2407.21783"),
]


class LossOf(torch.nn.Module):
    """Llama's next-token loss as transformers computes it given `labels=`: the
    logits in float32, shifted, `cross_entropy` (ignore_index -100)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, labels=labels, use_cache=False).loss


def llama_loss(size: str, layers: int) -> tuple[torch.nn.Module, torch.Tensor]:
    """Llama 3.1 `size` with `layers` layers and its loss (meta, bf16), and token ids."""
    from transformers import LlamaForCausalLM

    config = models.LLAMA31_CONFIGS[size](layers)
    with torch.device("meta"):
        model = LossOf(LlamaForCausalLM(config)).to(torch.bfloat16).train()
    return model, torch.zeros((1, SEQ), dtype=torch.int64, device="meta")


def joint_step(size: str, layers: int) -> torch.export.ExportedProgram:
    """The joint graph of one training step (no optimizer: the gradients are its results),
    as rducc builds it (`joint_graph`: torch's `_export_forward_backward` on the meta
    device drops a gradient, a composite op's meta kernel keeping autograd from it)."""
    model, ids = llama_loss(size, layers)
    return joint_graph(torch.export.export(model, (ids, ids)))


def compile_step(size: str, layers: int, target: str, optimizer: str | None = None, tp: int = 0
                 ) -> tuple[TrainingSpeed, float, int, str, str, StageTimes, str]:
    """The modeled step, the compile time (export and joint graph included, the
    cost model's walk not), the opt level, the split (`tp` forced when > 0), the
    MFU range over the target's assumed figures, the stage times (`cost model`
    among them) and the program's collectives by kind (`_collectives`)."""
    start = time.perf_counter()
    level = 2  # rdu-sram-alloc places a group in another order where largest-first fragments past the SRAM
    times = StageTimes()
    split = (tp, 1) if tp else (0, 0)
    if optimizer is None:
        module = compile_module(joint_step(size, layers),
                                CompileOptions(target=target, opt_level=level, times=times, split=split)).module
    else:
        model, ids = llama_loss(size, layers)
        with times.stage("export"):
            ep, _, _ = export_for_training(model, (ids, ids), None, None, 1.0, None, 1)
        groups = single_group(named_optimizer(optimizer, {"lr": 1e-4}), ep)
        module = compile_training_step(ep, groups, CompileOptions(target=target, opt_level=level, times=times,
                                                                  split=split)).module
    seconds = time.perf_counter() - start
    chosen = load_target(target)
    tp, pp = partition_of(module)
    with times.stage("cost model"):  # the step and its ranges: one walk of the program a ranged figure's end
        speed = training_speed(module, chosen, estimate(module, chosen))
        mfu = next(h for h in training_ranges(module, chosen, speed).headlines if h.name == MFU)
    return speed, seconds, level, f"dp={data_parallel_of(module)} tp={tp} pp={pp}", \
        f"{mfu.low:.1f}-{mfu.high:.1f}%", times, _collectives(module)


def _collectives(module: ModuleOp) -> str:
    """The program's collectives by op name (`rdu.all_gather` 4, ...), each op once (a
    layer's ops once however many calls it has)."""
    counts = Counter(op.name for op in module.walk() if isinstance(op, COLLECTIVE_OPS))
    return ", ".join(f"{name.removeprefix('rdu.')} {n}" for name, n in sorted(counts.items())) or "none"


def _gb(n: int) -> str:
    return f"{n / 1e9:,.1f} GB"


def _tiers(memory: dict[str, dict[str, int]], tier: str) -> str:
    """Bytes of weights, activations, gradients and optimizer state in one tier."""
    return " / ".join(_gb(memory[c][tier]) for c in ("weights", "activations", "gradients", "optimizer state"))


def _peak_rss_gb() -> float:
    """This process's peak resident memory so far (Linux: ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def _slowest(times: StageTimes, count: int = 4) -> str:
    """The slowest stages of a compile, as `stage 12 s, ...`."""
    ranked = sorted(times.seconds.items(), key=lambda kv: -kv[1])[:count]
    return ", ".join(f"{stage} {seconds:,.0f} s" for stage, seconds in ranked)


def run(quick: bool, only: Sequence[str] = (), tp: int = 0) -> Section:
    """Compile and cost each of `RUNS` (those named `MODEL:TARGET[:OPTIMIZER]` in `only`, when given;
    tensor parallelism forced to `tp` when > 0)."""
    command = ("python bench/train_llama.py" + (" --quick" if quick else "") + (f" --tp {tp}" if tp else "")
               + "".join(f" --only {o}" for o in only))
    section = Section("Modeled training step: Llama 3.1 8B and 70B full fine-tuning, seq 4,096", command)
    rows = ["| model | optimizer | target | layers | -O, split | step time "
            "| forward / backward / optimizer / collectives / DDR stall | tokens/s | MFU (range) "
            "| HBM: weights / activations / gradients / optimizer state | DDR: the same | DDR traffic a step "
            "| compile (slowest stages) | peak memory |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for size, target, optimizer in RUNS:
        if only and not {f"{size}:{target}", f"{size}:{target}:{optimizer}"} & set(only):
            continue
        layers = 2 if quick else LAYERS[size]
        try:
            speed, seconds, level, split, mfu_range, times, collectives = compile_step(size, layers, target,
                                                                                      optimizer, tp)
        except Exception as error:  # noqa: BLE001 - a failure is a row of the table
            message = (str(error).splitlines() or [type(error).__name__])[0]  # an assert has no message
            rows.append(f"| {size} | {optimizer or '-'} | {target} | {layers} | - "
                        f"| failed: {message[max(message.find('error:'), 0):][:200]} | | | | | | | | |")
            print(rows[-1], file=sys.stderr, flush=True)
            continue
        m, phase = speed.memory, speed.phase_s
        rows.append(
            f"| {size} | {optimizer or '-'} | {target} | {layers} | {level}, {split} | {speed.step_s * 1e3:,.1f} ms "
            f"| {phase.get('forward', 0) * 1e3:,.1f} / {phase.get('backward', 0) * 1e3:,.1f} / "
            f"{phase.get('optimizer', 0) * 1e3:,.1f} / {phase.get('collectives', 0) * 1e3:,.1f} / "
            f"{phase.get('DDR traffic', 0) * 1e3:,.1f} ms "
            f"| {speed.tokens_per_s:,.0f} | {speed.mfu:.1%} ({mfu_range}) | {_tiers(m, 'hbm')} | {_tiers(m, 'ddr')} "
            f"| {_gb(speed.ddr_bytes)} | {seconds:,.0f} s ({_slowest(times)}) | {_peak_rss_gb():.1f} GB |")
        print(rows[-1], file=sys.stderr, flush=True)  # each row as it comes: a full run takes long
        print(f"collectives ({size} on {target}): {collectives}", file=sys.stderr, flush=True)
        section.add(f"{size}{' + ' + optimizer if optimizer else ''} on {target} ({layers} layers): modeled MFU",
                    f"{speed.mfu:.1%} ({speed.tokens_per_s:,.0f} tokens/s, step {speed.step_s * 1e3:,.1f} ms)")
    section.details += rows
    section.details += ["", "Published GPU training figures (not inputs of the model):", "",
                        "| run | figure | source |", "| --- | --- | --- |"]
    section.details += [f"| {run_} | {figure} | {source} |" for run_, figure, source in PUBLISHED]
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 decoder layers of each model")
    parser.add_argument("--tp", type=int, default=0, help="force tensor parallelism over N sockets")
    parser.add_argument("--only", action="append", default=[], metavar="MODEL:TARGET[:OPTIMIZER]",
                        help="run only these rows (e.g. 70b:sn40l-16:adamw); repeatable")
    args = parser.parse_args()
    start = time.perf_counter()
    section = run(args.quick, args.only, args.tp)
    section.seconds = time.perf_counter() - start
    print(section.text())


if __name__ == "__main__":
    main()
