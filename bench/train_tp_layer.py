"""Tensor parallelism of an outlined training layer: Llama 3.1 8B, modeled per phase at tp = 1, 2, 4, 8.

The 8B training step (AdamW, bf16, batch 1, sequence 4,096 by default, on the
meta device, transformers' `labels=` loss) with 2 decoder layers is imported,
its layers outlined (`@layer_forward`, `@layer_backward`, `@layer_optimizer`)
and partitioned `tp` ways for sn40l-8 (`rdu-partition{tp=N}`). Each outlined
layer is costed once at level 1 as the split chooser costs it
(`rducc.model.training_speed.op_seconds`: each op's FLOPs at peak or the weight
bytes it reads at HBM bandwidth, plus a DMA start-up; each collective through
the target's link model). Printed per phase: one layer's modeled time, of
which collectives, its speed-up over tp=1 measured in the same run (ideal: tp),
and the collectives the layer runs; `all_gather` in a backward or optimizer
layer means a split was lost (a weight or saved value gathered whole).

With `--sequence-parallel` each tp > 1 is partitioned a second time with
`rdu-partition{tp=N sequence_parallel=true}` (Megatron's sequence parallelism:
the norms and residual adds split along the tokens, each activation all-reduce
a reduce-scatter and the next region's input an all-gather) and its rows are
printed beside the plain tp's, with the speed-up over tp=1 of the same run.

Every figure is modeled, not measured. Run: python bench/train_tp_layer.py
[--seq 4096] [--tp 1 2 4 8] [--sequence-parallel]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import common  # first: puts examples/ on the path for models
import models  # noqa: E402
import torch  # noqa: E402
from xdsl.dialects import func  # noqa: E402

from rducc.dialects.contracts import is_outlined  # noqa: E402
from rducc.dialects.op_facts import tensor_bytes  # noqa: E402
from rducc.dialects.program import functions  # noqa: E402
from rducc.driver import CompileOptions, resolve_passes  # noqa: E402
from rducc.model.training_speed import op_seconds  # noqa: E402
from rducc.targets import load_target  # noqa: E402
from rducc.training.compile import compile_step, single_group  # noqa: E402
from rducc.training.optimizers import named_optimizer  # noqa: E402
from rducc.training.program import export_for_training  # noqa: E402

TARGET = "sn40l-8"
LAYERS = 2


class LossOf(torch.nn.Module):
    """Llama's next-token loss as transformers computes it given `labels=`."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, labels=labels, use_cache=False).loss


def partitioned_step(seq: int, tp: int, sequence_parallel: bool = False):
    """The 8B step (2 layers, AdamW) outlined and partitioned tp ways (level 1),
    with sequence parallelism when asked."""
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        model = LossOf(LlamaForCausalLM(models.LLAMA31_CONFIGS["8b"](LAYERS))).to(torch.bfloat16).train()
    ids = torch.zeros((1, seq), dtype=torch.int64, device="meta")
    ep, _, _ = export_for_training(model, (ids, ids), None, None, 1.0, None, 1)
    groups = single_group(named_optimizer("adamw", {"lr": 1e-4}), ep)
    sequence = " sequence_parallel=true" if sequence_parallel else ""
    text = ("rdu-canonicalize,rdu-outline-layers{training=always}"
            + (f",rdu-partition{{tp={tp}{sequence}}}" if tp > 1 else ""))
    return compile_step(ep, groups, CompileOptions(target=TARGET, passes=resolve_passes(text))).module


def layer_times(module, target) -> dict[str, tuple[float, float, Counter, int]]:
    """Per outlined layer: (modeled seconds, of which collectives, collective op counts,
    bytes a rank of what it returns: the forward layer's saved activations and output)."""
    times = {}
    for function in functions(module):
        if not is_outlined(function):
            continue
        weights = {arg for arg in function.args if "rdu.weight" in (function.arg_attrs.data[arg.index].data
                                                                    if function.arg_attrs else {})}
        total = links = 0.0
        kinds: Counter = Counter()
        for op in function.body.block.ops:
            if isinstance(op, func.ReturnOp):
                continue
            seconds, collective = op_seconds(op, target, weights)
            total += seconds
            if collective:
                links += seconds
                kinds[op.name.removeprefix("rdu.")] += 1
        returned = sum(tensor_bytes(value) for value in function.body.block.last_op.operands)
        times[function.sym_name.data] = (total, links, kinds, returned)
    return times


def run(quick: bool, seq: int = 4096, tps: tuple[int, ...] = (1, 2, 4, 8),
        sequence_parallel: bool = False) -> common.Section:
    seq = 512 if quick else seq
    command = f"python bench/train_tp_layer.py --seq {seq} --tp {' '.join(map(str, tps))}"
    command += " --sequence-parallel" if sequence_parallel else ""
    section = common.Section(f"Tensor-parallel training layer: Llama 3.1 8B + AdamW, seq {seq:,}, {TARGET} (modeled)",
                      command)
    target = load_target(TARGET)
    rows = ["| tp | phase | one layer (modeled) | of which collectives | speed-up over tp=1 (ideal: tp) "
            "| collectives in the layer | returned a rank (forward: saved + output) |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    base: dict[str, float] = {}
    runs = [(tp, False) for tp in tps] + [(tp, True) for tp in tps if tp > 1 and sequence_parallel]
    for tp, sequence in runs:
        start = time.perf_counter()
        times = layer_times(partitioned_step(seq, tp, sequence), target)
        label = f"{tp} sp" if sequence else f"{tp}"
        for name in ("layer_forward", "layer_backward", "layer_optimizer"):
            if name not in times:
                continue
            seconds, links, kinds, returned = times[name]
            base.setdefault(name, seconds)
            ratio = base[name] / seconds if seconds else 0.0
            counts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "-"
            rows.append(f"| {label} | {name.removeprefix('layer_')} | {seconds * 1e3:,.3f} ms | {links * 1e3:,.3f} ms "
                        f"| {ratio:.2f}x | {counts} | {returned / 2**20:,.1f} MiB |")
            if tp == max(tps):
                section.add(f"{name.removeprefix('layer_')} layer at tp={label}: speed-up over tp=1 (modeled)",
                            f"{ratio:.2f}x")
        print(*rows[-3:], f"(tp={label}: {time.perf_counter() - start:,.0f} s to compile)", sep="\n", flush=True)
    section.details += rows
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--tp", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--quick", action="store_true", help="sequence 512")
    parser.add_argument("--sequence-parallel", action="store_true",
                        help="also each tp > 1 with sequence parallelism, beside the plain tp")
    args = parser.parse_args()
    start = time.perf_counter()
    section = run(args.quick, args.seq, tuple(args.tp), args.sequence_parallel)
    section.seconds = time.perf_counter() - start
    print(section.text())


if __name__ == "__main__":
    main()
