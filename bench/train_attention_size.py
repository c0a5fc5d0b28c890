"""Size and numerics of the 16-bit attention stand-in (issue 27): the joint
graph of one Llama 3.1 70B layer (meta device, bf16, sequence 4,096) with
attention's plain math, with the kernel's key/value gradient sums spelled out
one by one (`ROUNDED_ADDITIONS` unbounded, as before the size rule) and with
the size rule (`rducc.training.attention.ROUNDED_ADDITIONS`: above it,
float32 math rounded once); then, on the CPU, what the rule costs in accuracy
where it applies: the key/value gradients of eager's CPU flash kernel, of the
spelled-out sums and of the rule, each against float64 math.

Run: python bench/train_attention_size.py [--seq 1024] [--heads 8] [--kv-heads 1]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Iterator

import common  # noqa: F401 - one BLAS thread, examples/ on the path
import torch

from rducc.training import attention
from rducc.training import compile as training_compile

SDPA = torch.ops.aten.scaled_dot_product_attention.default


def _joint_graph_size(form: str) -> tuple[int, float]:
    """Nodes and CPU seconds of one 70B layer's joint graph with attention as `form`."""
    from train_llama import llama_loss

    from rducc.training.program import export_for_training

    model, ids = llama_loss("70b", 1)
    ep, _, _ = export_for_training(model, (ids, ids), None, None, 1.0, None, 1)
    with _form(form):
        start = time.process_time()
        joint = training_compile.joint_graph(ep)
        return len(joint.graph.nodes), time.process_time() - start


class _form:  # noqa: N801 - a context manager read as a phrase
    """Attention differentiated as `form`: plain math, spelled out or the size rule."""

    def __init__(self, form: str) -> None:
        self.form = form

    def __enter__(self) -> None:
        self.saved = training_compile._DIFFERENTIATED_AS[SDPA], attention.ROUNDED_ADDITIONS
        if self.form == "plain math":
            training_compile._DIFFERENTIATED_AS[SDPA] = attention.attention_math
        elif self.form == "spelled out":
            attention.ROUNDED_ADDITIONS = math.inf  # type: ignore[assignment]

    def __exit__(self, *_: object) -> None:
        training_compile._DIFFERENTIATED_AS[SDPA], attention.ROUNDED_ADDITIONS = self.saved


def _gradients(form: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               grad: torch.Tensor) -> Iterator[torch.Tensor]:
    """The key and value gradients of causal grouped attention computed as `form`."""
    q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
    if form == "eager kernel":
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    elif form == "float64 math":
        q, k, v = (t.double().detach().requires_grad_() for t in (q, k, v))
        out = attention.attention_math(q, k, v, is_causal=True, enable_gqa=True)
    else:
        with _form(form):  # the backward too: that is where the sums are
            out = attention.attention_as_eager(q, k, v, is_causal=True, enable_gqa=True)
            out.backward(grad.to(out.dtype))
        return (t.grad for t in (k, v))  # type: ignore[misc]
    out.backward(grad.to(out.dtype))
    return (t.grad for t in (k, v))  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=1)
    parser.add_argument("--no-graph", action="store_true", help="skip the 70B layer's joint graph")
    args = parser.parse_args()
    if not args.no_graph:
        print("| one 70B layer, seq 4,096, meta, bf16 | joint graph nodes | CPU s |\n| --- | --- | --- |")
        for form in ("plain math", "spelled out", "size rule"):
            nodes, seconds = _joint_graph_size(form)
            print(f"| {form} | {nodes:,} | {seconds:.1f} |", flush=True)
    blocks = -(-args.seq // attention._query_block(args.seq))
    additions = blocks * args.heads // args.kv_heads
    print(f"\nseq {args.seq}, {args.heads} query heads over {args.kv_heads} key/value heads, dim 64: "
          f"{additions} rounded additions (rule above {attention.ROUNDED_ADDITIONS})\n")
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(1, args.heads, args.seq, 64, generator=generator).bfloat16()
    k, v = (torch.randn(1, args.kv_heads, args.seq, 64, generator=generator).bfloat16() for _ in range(2))
    grad = torch.randn(1, args.heads, args.seq, 64, generator=generator)
    exact = list(_gradients("float64 math", q, k, v, grad))
    eager = list(_gradients("eager kernel", q, k, v, grad))
    print("| gradients | key: max error / max |grad| | value: the same | elements unequal to eager's (key, value) |")
    print("| --- | --- | --- | --- |")
    for form in ("eager kernel", "spelled out", "size rule"):
        got = list(_gradients(form, q, k, v, grad))
        errors = [f"{float((g.double() - e).abs().max() / e.abs().max()):.2e}" for g, e in zip(got, exact)]
        unequal = [f"{float((g != e).float().mean()):.1%}" for g, e in zip(got, eager)]
        print(f"| {form} | {errors[0]} | {errors[1]} | {unequal[0]}, {unequal[1]} |", flush=True)


if __name__ == "__main__":
    main()
