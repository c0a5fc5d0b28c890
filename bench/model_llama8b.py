"""Modeled chip performance (cost model, one sn40l socket) of Llama 3.1 8B and the small models.

- Decode step of the exact Llama 3.1 8B config (meta device, bf16, batch 1)
  with a KV cache of 4,096 positions as inputs (examples/models.py,
  LlamaDecodeStep): modeled time per token, tokens/s, and the ratio to the
  HBM roofline (the bytes the step must read from HBM / HBM bandwidth).
  Goal >= 90% of roofline. With sn40l's `kernel_looping`, the 32 calls of
  the one-kernel decoder layer are one loop (one launch); the launches saved
  and the same program's figures without looping are printed beside.
- The same decode step with the KV cache held as one stacked key and one
  stacked value input [layers, 1, kv_heads, positions, head_dim], indexed per
  layer (`k_cache[i]`; examples/models.py, StackedCacheDecodeStep): each layer
  moves only its window of the stacked cache (a `tier.view`), the layers are
  still one looped `@layer`. Goals: bytes moved / compulsory <= 1.01 and
  >= 90% of roofline, as the per-layer form.
- The stacked-cache decode step on sn40l-8 and sn40l-16 (the split the cost
  model picks): the caches split across sockets along kv_heads (not
  gathered), the aggregate-HBM roofline share, and one socket's bytes moved /
  its compulsory (<= 1.01).
- transformers' own decode step with its static KV cache (buffers updated in
  place, exported by torch.export on the meta device) on one socket and on
  sn40l-8: the caches split along kv_heads with their written-back updates
  (sn40l-8), the cache bytes written back (the updated position only: an
  in-place `tier.scatter`, not the whole cache), and the aggregate-HBM
  roofline share. Goal >= 90%.
- Prefill of 128 and 2,048 tokens at -O0, -O1 and -O2: the modeled fusion
  speedups, on all 32 decoder layers (8 with --quick, to stay under 5
  minutes; see PREFILL_LAYERS). Goal: -O0 / -O2 within the SN40L paper's
  2x-13x (its fusion speedups on 8 sockets, shared/TARGETS.md).
- Off-chip bytes moved / compulsory bytes (each weight and input read once,
  each output written once; an embedding table counts the rows gathered).
  Goal <= 1.05x.
- SRAM peak / max-live lower bound for every model compiled. Goal <= 1.02x.

Every figure is modeled from shapes, not measured on a chip. Each modeled
headline is also in `Section.modeled` as a function of the target (the
compiled program costed again on it), for ranges over the target's assumed
figures (bench/common.py, `Section.ranges_table`). Each model is exported and
decomposed once and compiled from there for each target and level (`import_once`).

Run: python bench/model_llama8b.py [--quick]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from common import Modeled, Section, import_once, looping_figure, standalone

import models  # noqa: E402

from xdsl.dialects.builtin import ModuleOp  # noqa: E402

from rducc.dialects.tier import GatherDmaOp, GetGlobalOp, ScatterDmaOp  # noqa: E402
from rducc.driver import lower  # noqa: E402
from rducc.dialects.contracts import calls_of, is_outlined, partition_of  # noqa: E402
from rducc.runtime.sockets import shard_specs  # noqa: E402
from rducc.dialects.program import functions  # noqa: E402
from rducc.model.cost_model import Report, estimate  # noqa: E402
from rducc.model.program_walk import transfer_bytes  # noqa: E402
from rducc.dialects.shapes import value_bytes  # noqa: E402
from rducc.targets import Target, load_target  # noqa: E402

PREFILL_LAYERS = 32
"""Layers of the prefill programs (all of Llama 3.1 8B's): -O0 of all 32 fits
HBM since rdu-place-tiers reuses the HBM of dead activations."""

QUICK_PREFILL_LAYERS = 8
"""Layers of the prefill programs with --quick (stated in each figure's name)."""

PAPER_BYTES_PER_TOKEN = 15.4e9
"""Bytes a Llama 3.1 8B token reads, per the kernel looping paper (shared/TARGETS.md)."""


@dataclass
class Compiled:
    name: str
    report: Report
    compulsory_read: int
    compulsory_written: int
    unlooped: Report
    """The same program costed with `kernel_looping = false`."""
    module: ModuleOp
    """The compiled program, to cost again on another target (`Section.modeled`)."""

    @property
    def compulsory(self) -> int:
        return self.compulsory_read + self.compulsory_written

    @property
    def moved(self) -> int:
        return self.report.hbm_bytes + self.report.ddr_bytes


def compulsory_bytes(module) -> tuple[int, int]:
    """(read, written): each used input and weight once, each output once.

    A weight read only by `tier.gather` (an embedding table) counts the rows
    gathered, not the whole table.
    """
    read = written = 0
    for function in functions(module):
        if is_outlined(function):
            continue  # an outlined layer reads and writes its callers' values
        sources = [a for a in function.body.block.args if a.uses]
        sources += [op.results[0] for op in function.walk() if isinstance(op, GetGlobalOp) and op.results[0].uses]
        for value in sources:
            gathers = [use.operation for use in value.uses if isinstance(use.operation, GatherDmaOp)]
            if gathers and len(gathers) == len(list(value.uses)):
                read += sum(transfer_bytes(op) for op in gathers)
            else:
                read += value_bytes(value)
        written += sum(value_bytes(v) for v in function.body.block.last_op.operands)
    return read, written


def compile_model(name: str, model, inputs, target: Target, opt_level: int, key: Any = None) -> Compiled:
    """`model` compiled for `target`; exported and decomposed once per `key` (`import_once`)."""
    return compile_exported(name, lambda: models.export(model, inputs), target, opt_level, key)


def compile_exported(name: str, export: Callable[[], Any], target: Target, opt_level: int, key: Any = None
                     ) -> Compiled:
    """The program `export()` gives, compiled for `target` at `opt_level`: decomposed
    once per `key` (default: the name) for every target and level (`import_once`)."""
    module, _ = import_once(name if key is None else key, export)
    lower(module, target, opt_level)
    unlooped = estimate(module, replace(target, kernel_looping=False))
    return Compiled(name, estimate(module, target), *compulsory_bytes(module), unlooped, module)


def roofline_share(step: Compiled) -> Modeled:
    """Roofline / modeled time of a decode step, on any target (the range hook)."""
    return lambda target: step.compulsory_read / target.hbm_bandwidth / estimate(step.module, target).modeled_time_s


def speedup(slow: Compiled, fast: Compiled) -> Modeled:
    """Modeled time of `slow` / that of `fast`, on any target (the range hook)."""
    return lambda target: estimate(slow.module, target).modeled_time_s / estimate(fast.module, target).modeled_time_s


def decode_stacked(section: Section, target: Target, layers: int) -> Compiled:
    """The decode step with a stacked KV cache: its roofline share and its traffic."""
    step = compile_model(f"Llama 3.1 8B decode step, stacked KV cache 4,096, {layers} layers, -O2",
                         *models.llama31_8b_decode_stacked_meta(4096, layers), target, 2, ("stacked", layers))
    report = step.report
    share = step.compulsory_read / target.hbm_bandwidth / report.modeled_time_s
    section.model(f"decode, stacked KV cache ({layers} layers): roofline / modeled time", roofline_share(step), target)
    section.add(f"decode, stacked KV cache ({layers} layers): roofline / modeled time",
                f"{share:.1%} ({report.modeled_time_s * 1e3:.3f} ms, {len(report.kernels)} kernels)",
                ">= 90%", share >= 0.9)
    traffic = step.moved / step.compulsory
    section.add(f"decode, stacked KV cache ({layers} layers): off-chip bytes moved / compulsory",
                f"{traffic:.4f}x", "<= 1.01x", traffic <= 1.01)
    section.add(f"decode, stacked KV cache ({layers} layers): kernel looping",
                looping_figure(report, step.unlooped, step.compulsory_read / target.hbm_bandwidth))
    return step


def decode_stacked_sockets(section: Section, target: Target, layers: int) -> Compiled:
    """The stacked-cache decode step on several sockets (the split the cost model
    picks): the cache split along kv_heads, its aggregate-HBM roofline share
    (the bytes a token must read, each once across the sockets / (sockets x HBM
    bandwidth)) and one socket's traffic against its own compulsory bytes."""
    from multi_socket import bytes_per_token

    model, inputs = models.llama31_8b_decode_stacked_meta(4096, layers)
    step = compile_model(f"Llama 3.1 8B decode step, stacked KV cache 4,096, {layers} layers, {target.name}, -O2",
                         model, inputs, target, 2, ("stacked", layers))
    tp, pp = partition_of(step.module)
    cache_splits = shard_specs(step.module)[0][3:]
    label = f"decode, stacked KV cache, {target.name} ({layers} layers)"
    split_heads = all(split is not None and split.dims() == {2} for split in cache_splits)
    section.add(f"{label}: the cache split across sockets along kv_heads",
                f"tp={tp} pp={pp}: " + ", ".join(split.describe() if split else "whole" for split in cache_splits),
                "split, not gathered", split_heads)
    report = step.report
    share = bytes_per_token(model, inputs) / (target.sockets * target.hbm_bandwidth) / report.modeled_time_s
    section.add(f"{label}: aggregate-HBM roofline / modeled time",
                f"{share:.1%} ({report.modeled_time_s * 1e3:.3f} ms)")
    traffic = step.moved / step.compulsory
    section.add(f"{label}: one socket's off-chip bytes moved / its compulsory",
                f"{traffic:.4f}x", "<= 1.01x", traffic <= 1.01)
    return step


_STATIC_WRAPPERS: dict[int, Any] = {}
"""transformers' static-cache wrapper of each layer count exported (its buffers name the caches)."""


def decode_static_cache(section: Section, target: Target, layers: int) -> None:
    """transformers' own decode step with its static KV cache (buffers updated in
    place), on the target's sockets: the aggregate-HBM roofline share (every weight
    but the embedding table, one embedding row and the whole cache, each read once
    across the sockets) and the caches' split."""
    def export():
        _STATIC_WRAPPERS[layers], exported = models.llama31_8b_static_cache_meta(4096, layers)
        return exported

    module, _ = import_once(("static cache", layers), export)
    wrapper = _STATIC_WRAPPERS[layers]
    lower(module, target, 2)
    report = estimate(module, target)
    tp, pp = partition_of(module)
    weights = shard_specs(module)[1]
    caches = [name for name, _ in wrapper.named_buffers() if "_cache_" in name]
    split_heads = all(weights.get(name) is not None and weights[name].dims() == {1} for name in caches)
    label = f"decode, transformers' static KV cache, {target.name} ({layers} layers)"
    if target.sockets > 1:
        section.add(f"{label}: the caches split across sockets along kv_heads",
                    f"tp={tp} pp={pp}: {len(caches)} caches, "
                    f"{weights[caches[0]].describe() if split_heads else 'NOT split'}",
                    "split" if tp > 1 else "", split_heads if tp > 1 else None)
    rows, whole = written_back(module), sum(b.numel() * b.element_size() for name, b in wrapper.named_buffers()
                                            if name in caches) // max(1, tp)
    section.add(f"{label}: cache bytes written back a token (one socket)",
                f"{rows:,} (the updated position; the whole caches: {whole:,})", "the updated rows only",
                rows < whole // 100)
    table = wrapper.model.model.embed_tokens.weight
    needed = (sum(p.numel() * p.element_size() for p in wrapper.parameters()) - table.numel() * table.element_size()
              + table.shape[1] * table.element_size()
              + sum(b.numel() * b.element_size() for name, b in wrapper.named_buffers() if name in caches))
    share = needed / (target.sockets * target.hbm_bandwidth) / report.modeled_time_s
    section.add(f"{label}: aggregate-HBM roofline / modeled time",
                f"{share:.1%} ({needed / 1e9:.2f} GB a token, {report.modeled_time_s * 1e3:.3f} ms)",
                ">= 90%", share >= 0.9)


def written_back(module) -> int:
    """Bytes the program's in-place row updates (`tier.scatter`) write a run, one
    socket: each counted once per call of the function that holds it."""
    total = 0
    for function in functions(module):
        runs = calls_of(function) or 1
        total += runs * sum(transfer_bytes(op) for op in function.walk() if isinstance(op, ScatterDmaOp))
    return total


def decode(section: Section, target: Target, layers: int) -> Compiled:
    step = compile_model(f"Llama 3.1 8B decode step, KV cache 4,096, {layers} layers, -O2",
                         *models.llama31_8b_decode_meta(4096, layers), target, 2)
    report = step.report
    roofline_s = step.compulsory_read / target.hbm_bandwidth
    section.add(f"decode ({layers} layers): modeled time per token", f"{report.modeled_time_s * 1e3:.3f} ms "
                f"({len(report.kernels)} kernels, bound: {_bounds(report)})")
    section.add(f"decode ({layers} layers): tokens/s (one socket, batch 1)", f"{1 / report.modeled_time_s:.1f}")
    section.add(f"decode ({layers} layers): bytes the step must read from HBM",
                f"{step.compulsory_read / 1e9:.2f} GB (paper, 32 layers: {PAPER_BYTES_PER_TOKEN / 1e9:.1f} GB; weights, the 4,096-position KV cache, "
                "one embedding row)")
    share = roofline_s / report.modeled_time_s
    section.model(f"decode ({layers} layers): roofline / modeled time", roofline_share(step), target)
    section.add(f"decode ({layers} layers): roofline / modeled time",
                f"{share:.1%} ({roofline_s * 1e3:.3f} ms at {target.hbm_bandwidth / 1e12:.1f} TB/s)",
                ">= 90%", share >= 0.9)
    section.add(f"decode ({layers} layers): kernel looping", looping_figure(report, step.unlooped, roofline_s))
    return step


def _bounds(report: Report) -> str:
    counts: dict[str, int] = {}
    for kernel in report.kernels:
        counts[kernel.bound] = counts.get(kernel.bound, 0) + 1
    return ", ".join(f"{n} {bound}" for bound, n in counts.items())


PAPER_FUSION = (2.0, 13.0)
"""The SN40L paper's fusion speedups on 8 sockets (shared/TARGETS.md): the goal's range."""


def prefill(section: Section, target: Target, layers: int) -> list[Compiled]:
    """Prefill at -O0, -O1 and -O2: -O0 / -O1 beside, -O0 / -O2 against the paper's range."""
    compiled = []
    low, high = PAPER_FUSION
    for seq in (128, 2048):
        model, inputs = models.llama31_8b_meta(seq=seq, layers=layers)
        runs = {level: compile_model(f"Llama 3.1 8B prefill {seq}, {layers} layers, -O{level}",
                                     model, inputs, target, level, ("prefill", seq, layers)) for level in (0, 1, 2)}
        for level in (1, 2):
            slow, fast = runs[0].report, runs[level].report
            name = f"prefill {seq} ({layers} layers): -O0 / -O{level} modeled time"
            section.model(name, speedup(runs[0], runs[level]), target)
            ratio = slow.modeled_time_s / fast.modeled_time_s
            goal = {"goal": f"{low:g}x-{high:g}x (SN40L paper)", "met": low <= ratio <= high} if level == 2 else {}
            section.add(name, f"{slow.modeled_time_s * 1e3:.2f} ms / {fast.modeled_time_s * 1e3:.2f} ms = "
                        f"{ratio:.2f}x ({len(slow.kernels)} vs {len(fast.kernels)} kernels)", **goal)
        compiled += runs.values()
    return compiled


def small_models(target: Target) -> list[Compiled]:
    return [compile_model(f"{name}, -O{level}", *build(), target, level)
            for name, build in models.SMALL_MODELS.items() for level in (0, 2)]


def traffic_and_sram(section: Section, compiled: list[Compiled]) -> None:
    rows = ["| program | off-chip bytes moved | compulsory | moved / compulsory | SRAM peak | max-live bound "
            "| peak / bound |", "| --- | --- | --- | --- | --- | --- | --- |"]
    optimized = [c for c in compiled if c.name.endswith("-O2")]  # -O0 is the unfused baseline
    worst_traffic = max(optimized, key=lambda c: c.moved / c.compulsory)
    worst_sram = max(compiled, key=lambda c: c.report.sram_peak_bytes / max(1, c.report.sram_lower_bound_bytes))
    for c in compiled:
        r = c.report
        rows.append(f"| {c.name} | {c.moved:,} | {c.compulsory:,} | {c.moved / c.compulsory:.3f}x | "
                    f"{r.sram_peak_bytes:,} | {r.sram_lower_bound_bytes:,} | "
                    f"{r.sram_peak_bytes / max(1, r.sram_lower_bound_bytes):.4f}x |")
    traffic = worst_traffic.moved / worst_traffic.compulsory
    for c in optimized:
        if "8B" in c.name:
            section.add(f"off-chip bytes moved / compulsory: {c.name}", f"{c.moved / c.compulsory:.3f}x",
                        "<= 1.05x", c.moved / c.compulsory <= 1.05)
    section.add(f"off-chip bytes moved / compulsory, worst of the {len(optimized)} -O2 programs",
                f"{traffic:.3f}x ({worst_traffic.name})", "<= 1.05x", traffic <= 1.05)
    sram = worst_sram.report.sram_peak_bytes / max(1, worst_sram.report.sram_lower_bound_bytes)
    section.add(f"SRAM peak / max-live bound, worst of {len(compiled)} programs", f"{sram:.4f}x ({worst_sram.name})",
                "<= 1.02x", sram <= 1.02)
    section.details += ["Every program compiled here (one sn40l socket; modeled):", "", *rows, ""]


def run(quick: bool) -> Section:
    target = load_target("sn40l")
    section = Section("Modeled chip performance: Llama 3.1 8B on one sn40l socket (cost model)",
                      f"python bench/model_llama8b.py{' --quick' if quick else ''}")
    compiled = [decode(section, target, 8 if quick else 32), decode_stacked(section, target, 8 if quick else 32)]
    for sockets in ("sn40l-8", "sn40l-16"):
        decode_stacked_sockets(section, load_target(sockets), 2 if quick else 32)
    for sockets in ("sn40l", "sn40l-8"):
        decode_static_cache(section, load_target(sockets), 2 if quick else 32)
    compiled += prefill(section, target, QUICK_PREFILL_LAYERS if quick else PREFILL_LAYERS)
    compiled += small_models(target)
    traffic_and_sram(section, compiled)
    section.details += ["Published, for scale (shared/TARGETS.md): 1,042 tokens/s per user on 16 sockets "
                        "(SambaNova, Sep 2024); one socket is modeled here.", ""]
    return section


if __name__ == "__main__":
    standalone(run, __doc__)
