"""ZeRO stages on an outlined training step: what each stage saves and costs.

A 2-layer tiny Llama (transformers; AdamW) is compiled for sn40l-8 with its
layers outlined (`@layer_forward`, `@layer_backward`, `@layer_optimizer`) at
dp=1 and at dp=2 with ZeRO stage 0 (plain data parallelism), 1 (optimizer
state sharded), 2 (and gradients) and 3 (and parameters). Printed per run:
one socket's bytes of weights, gradients and optimizer state (the report's
memory table; each relative to dp=2 stage 0 in the same run), the collectives
the program runs by kind and phase, the modeled step and its collectives'
exposed time, and, after 2 AdamW steps (with `max_grad_norm` when given), the
largest difference of the losses and of the parameters from eager's.

Memory and times are modeled, not measured. Run: python bench/train_zero.py
[--clip 1.0] [--layers 2] [-O 0]
"""

from __future__ import annotations

import argparse
import copy
import time
from collections import Counter

import common  # noqa: F401  (first: puts examples/ on the path)
import torch  # noqa: E402

import rducc  # noqa: E402
from rducc.dialects.contracts import phase_of  # noqa: E402
from rducc.dialects.rdu.collectives import COLLECTIVE_OPS, LocalPartOp  # noqa: E402
from rducc.model.training_speed import memory_table, training_speed  # noqa: E402
from rducc.pipeline import pipeline_text  # noqa: E402
from rducc.targets import load_target  # noqa: E402

TARGET = "sn40l-8"
CLASSES = ("weights", "gradients", "optimizer state")


def tiny_llama(layers: int) -> torch.nn.Module:
    from models import LogitsOnly
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    return LogitsOnly(LlamaForCausalLM(config)).train()


def loss_of(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def compile_at(model: torch.nn.Module, batch: tuple, dp: int, stage: int, opt_level: int, clip: float | None):
    split = (0, 1, dp, 0, stage) if dp > 1 else (0, 1)
    passes = pipeline_text(opt_level, sockets=8, split=split).replace(
        "rdu-outline-layers", "rdu-outline-layers{training=always}")
    clipping = {"max_grad_norm": clip} if clip else {}
    return rducc.compile_training(copy.deepcopy(model), batch, optimizer="adamw", lr=1e-2, weight_decay=0.1,
                                  loss_fn=loss_of, opt_level=opt_level, target=TARGET, passes=passes, **clipping)


def collectives(module) -> str:
    counts = Counter(f"{op.name.removeprefix('rdu.')}@{phase_of(op).value if phase_of(op) else '-'}"
                     for op in module.walk() if isinstance(op, COLLECTIVE_OPS) and not isinstance(op, LocalPartOp))
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))


def against_eager(program, model: torch.nn.Module, batch: tuple, steps: int, clip: float | None) -> tuple[float, float]:
    eager = copy.deepcopy(model)
    optimizer = torch.optim.AdamW(eager.parameters(), lr=1e-2, weight_decay=0.1)
    worst_loss = 0.0
    for _ in range(steps):
        optimizer.zero_grad()
        expected = loss_of(eager(batch[0]), batch[1])
        expected.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(eager.parameters(), clip)
        optimizer.step()
        worst_loss = max(worst_loss, abs(float(program.step(*batch)) - expected.item()))
    ours = program.parameters()
    worst = max(float((torch.as_tensor(ours[k]) - p.detach()).abs().max()) for k, p in eager.named_parameters())
    return worst_loss, worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--clip", type=float, default=None)
    parser.add_argument("-O", dest="opt_level", type=int, default=0)
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    target = load_target(TARGET)
    model = tiny_llama(args.layers)
    torch.manual_seed(1)
    batch = (torch.randint(0, 64, (2, 6)), torch.randint(0, 64, (2, 6)))
    base: dict[str, int] = {}
    print(f"{args.layers}-layer tiny Llama + AdamW, outlined, -O{args.opt_level}, {TARGET}"
          + (f", max_grad_norm {args.clip}" if args.clip else ""))
    for dp, stage in ((1, 0), (2, 0), (2, 1), (2, 2), (2, 3)):
        start = time.perf_counter()
        program = compile_at(model, batch, dp, stage, args.opt_level, args.clip)
        seconds = time.perf_counter() - start
        table = {cls: sum(memory_table(program.module)[cls].values()) for cls in CLASSES}
        if dp == 2 and stage == 0:
            base = table
        speed = training_speed(program.module, target)
        loss_error, parameter_error = against_eager(program, model, batch, args.steps, args.clip)
        shares = "  ".join(f"{cls} {n:,} B" + (f" ({n / base[cls]:.2f}x)" if base.get(cls) else "")
                           for cls, n in table.items())
        print(f"dp={dp} zero={stage}: {shares}")
        linked = speed.phase_s.get("collectives", 0.0)
        print(f"    step {speed.step_s * 1e6:.1f} us modeled, collectives {linked * 1e6:.1f} us;"
              f" {collectives(program.module) or 'no collectives'}")
        print(f"    vs eager after {args.steps} steps: loss {loss_error:.2e}, parameters {parameter_error:.2e};"
              f" compiled in {seconds:.1f} s")


if __name__ == "__main__":
    main()
