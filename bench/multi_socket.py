"""Modeled multi-socket decode (cost model): Llama 3.1 8B and 70B on sn40l-8 and sn40l-16.

Each model is the decode step of the exact Llama 3.1 config (meta device,
bf16, batch 1, a KV cache of 4,096 positions; examples/models.py,
LlamaDecodeStep), compiled at -O2 for the target with its default pipeline:
`rdu-partition` picks the tensor/pipeline split with the cost model. Figures:
modeled time per token and tokens/s, the split chosen, the time on the
sockets' links (and how much of it the next kernel's weight reads hide), and
the ratio to the aggregate-HBM roofline, the bytes a token must read
(weights, KV cache, one embedding row, each once across the system) /
(sockets x HBM bandwidth); and the compulsory bytes that more than one
socket reads (replicated KV heads), which cap the achievable ratio; the
kernel launches with kernel looping (the target's `kernel_looping`: the
consecutive calls of the one-kernel decoder layer launched once) and the
same program's time and ratio without it. Goal >= 90% of roofline. SambaNova's published figures
(shared/TARGETS.md) stand beside them. The 405B config must compile for
sn40l-16.

Every figure is modeled from shapes, not measured on a chip; each roofline
ratio is also in `Section.modeled` as a function of the target (the range
hook, bench/common.py). Each model is exported and decomposed once and
compiled from there for each target (`import_once`). --quick
compiles 2 decoder layers of each model instead of all (the roofline is then
that of the same 2 layers, so the ratio is comparable; tokens/s is not).

Run: python bench/multi_socket.py [--quick]
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from common import Modeled, Section, import_once, looping_figure, standalone

import models  # noqa: E402

from rducc.driver import lower  # noqa: E402
from rducc.dialects.contracts import partition_of  # noqa: E402
from rducc.runtime.sockets import shard_specs  # noqa: E402
from rducc.model.cost_model import Report, estimate  # noqa: E402
from rducc.targets import load_target  # noqa: E402

CACHED = 4096
LAYERS = {"8b": 32, "70b": 80, "405b": 126}
PUBLISHED_TOKENS_S = {"8b": 1042, "70b": 457, "405b": 129}
"""SambaNova, Sep 2024 (Artificial Analysis), 16-bit, per user: shared/TARGETS.md."""


def bytes_per_token(model, inputs) -> int:
    """Bytes one decode step must read: every weight but the embedding table, one
    embedding row, and the KV cache inputs."""
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    table = model.embed_tokens.weight
    row = table.shape[1] * table.element_size()
    cache = sum(t.numel() * t.element_size() for t in inputs[3:])
    return weights - table.numel() * table.element_size() + row + cache


def replicated_bytes(model, inputs, module) -> int:
    """Bytes of one token's compulsory reads (`bytes_per_token`) that more than one
    socket reads: a value of S bytes split into P parts over tp ranks is read
    tp / P times (a KV head's k/v weights and KV cache on the two sockets of a
    pair at tp=16; the norms' weights on every socket)."""
    tp, _ = partition_of(module)
    input_splits, weight_splits, _ = shard_specs(module)

    def copies(split) -> int:
        parts = 1
        for entry in split.entries if split else ():  # (dim, parts, stride, period)
            parts *= entry[1]
        return tp // parts

    extra = 0
    for name, weight in model.named_parameters():
        if name != "embed_tokens.weight":
            extra += weight.numel() * weight.element_size() * (copies(weight_splits.get(name)) - 1)
    for value, split in zip(inputs[3:], input_splits[3:]):
        extra += value.numel() * value.element_size() * (copies(split) - 1)
    return extra


def compile_decode(size: str, target_name: str, layers: int) -> tuple[Any, Any, Report, Any, float]:
    """The decode step compiled at -O2 for the target: model, inputs, report, module,
    seconds (the decomposition, done once for every target: `import_once`, included)."""
    model, inputs = models.llama31_decode_meta(size, CACHED, layers)
    module, imported_s = import_once(("decode", size, layers), lambda: models.export(model, inputs))
    start = time.perf_counter() - imported_s
    lower(module, load_target(target_name), 2)
    report = estimate(module, load_target(target_name))
    return model, inputs, report, module, time.perf_counter() - start


def aggregate_share(module, needed: int) -> Modeled:
    """Aggregate-HBM roofline / modeled time of a compiled decode step on any target (the range hook)."""
    return lambda target: needed / (target.sockets * target.hbm_bandwidth) / estimate(module, target).modeled_time_s


def decode(section: Section, size: str, target_name: str, layers: int) -> None:
    target = load_target(target_name)
    model, inputs, report, module, seconds = compile_decode(size, target_name, layers)
    tp, pp = partition_of(module)
    needed = bytes_per_token(model, inputs)
    replicated = replicated_bytes(model, inputs, module)
    hidden = sum(k.overlap_s for k in report.kernels)
    roofline_s = needed / (target.sockets * target.hbm_bandwidth)
    share = roofline_s / report.modeled_time_s
    link_s = sum(k.link_s for k in report.kernels)
    label = f"{size.upper()} on {target_name} ({layers} layers)"
    published = f"; published, 16 sockets: {PUBLISHED_TOKENS_S[size]:,}" if layers == LAYERS[size] else ""
    section.add(f"{label}: tokens/s (batch 1)",
                f"{1 / report.modeled_time_s:,.0f} ({report.modeled_time_s * 1e3:.3f} ms a token, tp={tp} pp={pp}, "
                f"links {link_s * 1e3:.3f} ms, {hidden * 1e3:.3f} ms of it behind weight reads{published})")
    section.model(f"{label}: aggregate-HBM roofline / modeled time", aggregate_share(module, needed), target)
    section.add(f"{label}: aggregate-HBM roofline / modeled time",
                f"{share:.1%} ({needed / 1e9:.2f} GB a token / ({target.sockets} x "
                f"{target.hbm_bandwidth / 1e12:.1f} TB/s) = {roofline_s * 1e3:.3f} ms)", ">= 90%", share >= 0.9)
    unlooped = estimate(module, replace(target, kernel_looping=False))
    section.add(f"{label}: kernel looping", looping_figure(report, unlooped, roofline_s))
    section.add(f"{label}: compulsory bytes read by more than one socket",
                f"{replicated / 1e9:.2f} GB a token more: the ratio can reach at most "
                f"{needed / (needed + replicated):.1%} with tp={tp} (every socket busy)")
    section.details.append(f"- {label}: compiled in {seconds:.0f} s; {len(report.kernels)} kernels, "
                           f"{report.kernel_launches} launches.")


def compiles(section: Section, size: str, target_name: str, layers: int) -> None:
    _, _, report, module, seconds = compile_decode(size, target_name, layers)
    tp, pp = partition_of(module)
    section.add(f"{size.upper()} on {target_name} ({layers} layers): compiles",
                f"yes, tp={tp} pp={pp}, {report.modeled_time_s * 1e3:.3f} ms a token modeled, "
                f"{seconds:.0f} s to compile", "compiles", True)


def run(quick: bool) -> Section:
    section = Section("Modeled multi-socket decode: Llama 3.1 on sn40l-8 and sn40l-16 (cost model)",
                      f"python bench/multi_socket.py{' --quick' if quick else ''}")
    for size in ("8b", "70b"):
        for target_name in ("sn40l-8", "sn40l-16"):
            decode(section, size, target_name, 2 if quick else LAYERS[size])
    compiles(section, "405b", "sn40l-16", 2 if quick else LAYERS["405b"])
    section.details += [
        "",
        "Link figures are assumed (compiler/targets/sn40l.toml): 100 GB/s, and a collective step pays "
        "link_latency_s a hop (1 hop inside a module of 2 sockets, cross_module_hops between modules). "
        "Llama 3.1 has 8 KV heads: at tp=16 rank r holds KV head r / 2 (its k/v weights and "
        "KV cache read by both sockets of a pair, counted once in the roofline's bytes) and "
        "half the query heads under it. The schedule places a kernel's collectives beside the next "
        "kernel when it does not wait for them, else beside its weight load when the SRAM has room "
        "(docs/cost-model.md, The schedule). Kernel looping "
        "(`kernel_looping = true` in the target, SambaNova's arXiv 2410.23668): the consecutive calls "
        "of the one-kernel decoder layer run as one loop, launched once, with the DMA start-up paid once "
        "(compiler/model/kernel_looping.py); the 'without kernel looping' figures cost the same program with it off.",
        "",
    ]
    return section


if __name__ == "__main__":
    standalone(run, __doc__)
