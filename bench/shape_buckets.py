"""Dynamic-shape buckets at a full-size config (docs/shapes.md).

A Llama of TinyLlama-1.1B's shape (hidden 2048, 32 heads, 4 KV heads, 5632
MLP, 4 layers here: identical layers are compiled once, so the layer count
barely changes the compile), on the meta device, exported once with a dynamic
batch and sequence, compiled by `rducc.shapes.compile_buckets` for
batch {1, 4} x seq {128, 512}. In the same run each bucket's size is also
exported statically and compiled the usual way, to show that a bucket is the
program a static export of its size gives (same modeled time) and what the
specialization costs in compile time.

Run: python bench/shape_buckets.py
"""

from __future__ import annotations

import time

import torch
from torch.export import Dim

from rducc.driver import CompileOptions, compile_module
from rducc.model.cost_model import estimate
from rducc.shapes import bucket_modules, compile_buckets

SIZES = {"batch": [1, 4], "seq": [128, 512]}


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def llama() -> torch.nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_hidden_layers=4, num_attention_heads=32,
                         num_key_value_heads=4, vocab_size=32000, torch_dtype=torch.bfloat16)
    with torch.device("meta"):
        return Logits(LlamaForCausalLM(config).to(torch.bfloat16).eval()).eval()


def main() -> None:
    model = llama()
    ids = torch.zeros(2, 64, dtype=torch.long, device="meta")
    with torch.no_grad():
        dynamic = torch.export.export(model, (ids,), dynamic_shapes=({0: Dim("batch", min=1, max=16),
                                                                       1: Dim("seq", min=2, max=4096)},))
    start = time.perf_counter()
    buckets = compile_buckets(dynamic, SIZES, CompileOptions(opt_level=2))
    bucketed_s = time.perf_counter() - start
    static_s = 0.0
    print(f"{'bucket':<20} {'modeled ms':>11} {'static ms':>10} {'ratio':>6} {'tokens/s':>10}")
    for values, module in bucket_modules(buckets.module):
        modeled = estimate(module, buckets.buckets[0].result.target).modeled_time_s
        start = time.perf_counter()
        with torch.no_grad():
            static = torch.export.export(model, (torch.zeros(values["batch"], values["seq"], dtype=torch.long,
                                                             device="meta"),))
        alone = compile_module(static, CompileOptions(opt_level=2))
        static_s += time.perf_counter() - start
        reference = estimate(alone.module, alone.target).modeled_time_s
        tokens = values["batch"] * values["seq"] / modeled
        label = " ".join(f"{k}={v}" for k, v in values.items())
        print(f"{label:<20} {modeled * 1e3:11.3f} {reference * 1e3:10.3f} {modeled / reference:6.3f} {tokens:10.0f}")
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    written = "none written: meta device" if not buckets.weights else f"{len(buckets.weights)} tensors written once"
    print(f"weights: {weights / 1e9:.2f} GB shared by {len(buckets.buckets)} buckets ({written})")
    print(f"compile: buckets {bucketed_s:.1f} s (one dynamic export), static exports + compiles {static_s:.1f} s "
          f"(ratio {bucketed_s / static_s:.2f})")


if __name__ == "__main__":
    main()
