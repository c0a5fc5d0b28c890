"""Modeled chip performance of Llama 3.1 8B (exact config, meta device, bf16).

Compiles the model at -O2 for one sn40l socket and runs the cost model in
simulate mode (shapes only, no weights): a decode step (one new token; the
model is exported without a KV cache, so attention sees just that token) and
a 128-token prefill. The decode step is set against the HBM roofline measured
in the same run: the bytes the step must read from HBM (its weights) divided
by the socket's HBM bandwidth. Published SN40L figures (shared/TARGETS.md)
are printed beside them for scale: they are for 8 and 16 sockets, ours for one.

Run: python bench/model_llama8b.py [--target sn40l]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
warnings.filterwarnings("ignore", category=FutureWarning)

import models  # noqa: E402

from rducc.driver import import_exported, lower  # noqa: E402
from rducc.runtime.cost_model import estimate  # noqa: E402
from rducc.targets import load_target  # noqa: E402


def modeled(seq: int, target):
    model, inputs = models.llama31_8b_meta(seq=seq)
    module = import_exported(models.export(model, inputs))
    lower(module, target, 2)
    weight_bytes = module.attributes["tier.hbm_weight_bytes"].value.data
    return estimate(module, target), weight_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="sn40l")
    args = parser.parse_args()
    target = load_target(args.target)

    decode, weight_bytes = modeled(1, target)
    hbm_read = decode.bytes_by_tier.get("hbm->sram", 0)
    roofline_s = hbm_read / target.hbm_bandwidth
    print(f"Llama 3.1 8B, bf16, -O2, one {target.name} socket (modeled, not measured)")
    print(f"decode step (1 token): {decode.modeled_time_s * 1e3:.3f} ms modeled, "
          f"{1 / decode.modeled_time_s:.0f} tokens/s, {len(decode.kernels)} kernels")
    print(f"  HBM read {hbm_read / 1e9:.2f} GB (weights in HBM: {weight_bytes / 1e9:.2f} GB; "
          f"the 1 GB embedding table is gathered, not read whole)")
    print(f"  HBM roofline {roofline_s * 1e3:.3f} ms = {hbm_read / 1e9:.2f} GB / "
          f"{target.hbm_bandwidth / 1e12:.1f} TB/s; modeled / roofline = {decode.modeled_time_s / roofline_s:.3f}x "
          f"({roofline_s / decode.modeled_time_s:.1%} of roofline)")
    bounds = {}
    for kernel in decode.kernels:
        bounds[kernel.bound] = bounds.get(kernel.bound, 0) + 1
    print(f"  kernel bounds: {bounds}")
    prefill, _ = modeled(128, target)
    print(f"prefill (128 tokens): {prefill.modeled_time_s * 1e3:.3f} ms modeled, "
          f"{prefill.flops / 1e12:.2f} TFLOP, {128 / prefill.modeled_time_s:.0f} tokens/s")
    print("published, for scale (shared/TARGETS.md): 1,042 tokens/s per user on 16 sockets "
          "(SambaNova, Sep 2024); roofline 0.60 ms a token for 15.4 GB on 16 sockets' 25.6 TB/s")


if __name__ == "__main__":
    main()
