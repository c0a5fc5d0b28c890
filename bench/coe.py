"""Composition of Experts (issue 21): 150 Llama 3.1 8B experts on sn40l-8 and on a DGX H100 (serving simulation).

The deployment is real: the exact Llama 3.1 8B config on the meta device
(examples/models.py), its decode step with all 32 decoder layers (KV cache
of `CACHED` positions, bf16: every weight of the 8B model, 16.06 GB), is
exported once and saved as 150 expert archives and a router archive (one
file, hard-linked: meta-device experts have no weight data to differ in),
and `rducc deploy` (rducc.deploy.deployment.deploy) deploys the 151 for sn40l-8:
it checks the DDR total from the archives, compiles the one graph once at
-O2 and writes every model's program and the manifest. The simulation reads
that manifest (rducc.deploy.serving.served_models): weight bytes, residency, the
decode step's modeled time. Prefill is modeled apart (the deployed program
is a 1-token step): the prefill of `PROMPT` tokens compiled at -O2 with 1
and 2 decoder layers, extended to 32 layers by the per-layer difference (the
layers are identical and kernel looping runs them as one loop). A seeded
synthetic trace (Poisson arrivals, Zipf expert popularity, every request routed) is
served on sn40l-8 and on dgx-h100 (compute times moved to the GPU node by
the roofline: decode by HBM bandwidth, prefill by peak BF16).

Figures: the deploy's time (wall and CPU); the time to switch one expert
into HBM on each node (DDR -> HBM on the SN40L node, host memory -> HBM over
PCIe on dgx-h100 and dgx-a100, at the bandwidths the SN40L paper's baseline
takes, arXiv 2405.07518 Section VI-C) and the ratios beside its Table V (15x
over DGX H100, 31x over DGX A100), with the ranges the sources allow; the
machines needed to hold the experts in the memory they are served from, for
the bench's 151 models and as the paper counts its 19x (the experts one
SN40L node's DDR holds, in DGX HBM); whether the experts fit the node's DDR;
the simulation's throughput, HBM hit rate, switching time and latency on both.

Every figure is modeled from shapes and target figures, not measured. The
deploy takes about 22 s of CPU (one compile; 150 models reuse it) and the
whole bench about 40 s of CPU and 490 MB (more wall time on a loaded machine).

Run: python bench/coe.py [--quick]
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import tempfile
import time
from pathlib import Path

import torch
from common import Section, standalone

import models  # noqa: E402  (after common: it puts examples/ on sys.path)

from rducc.deploy.deployment import DeployOptions, deploy  # noqa: E402
from rducc.deploy.manifest import DEFAULT_HBM_RESERVE, Deployment  # noqa: E402
from rducc.deploy.serving import Memory, Request, ServedModel, rescaled, served_models, simulate  # noqa: E402
from rducc.driver import import_exported, lower  # noqa: E402
from rducc.model.cost_model import estimate  # noqa: E402
from rducc.model.switching import copy_bandwidth  # noqa: E402
from rducc.targets import Target, load_target  # noqa: E402

EXPERTS = 150
"""Samba-CoE's expert count (SN40L paper)."""
LAYERS = 32
CACHED = 4096
"""KV-cache positions of the modeled decode step (as bench/model_llama8b.py)."""
PROMPT = 128
"""Tokens of the modeled prefill; its time per token is used for every prompt."""
RESERVE_FRACTION = DEFAULT_HBM_RESERVE
"""Share of HBM kept for activations and KV caches on both nodes (the deployment's default)."""
PAPER_SWITCH_BY_GPU = {"dgx-h100": 15, "dgx-a100": 31}
"""SN40L paper, Table V: model switching time, SN40L node over the DGX (the text of VI-C says 16x for H100)."""
PAPER_FOOTPRINT = 19
PUBLISHED_SWITCH_S = 0.01
"""Hot Chips 2024: a Llama 3.1 8B model switch DDR -> HBM takes about 0.01 s (shared/TARGETS.md)."""
SEED = 21
RATE = 3.0
"""Requests a second of the synthetic trace."""


def modeled_seconds(build, target: Target) -> float:
    """The cost model's time of a model built by `build(layers)`, at LAYERS layers,
    from the 1- and 2-layer programs: t(1) + (LAYERS - 1) x (t(2) - t(1))."""
    times = []
    for layers in (1, 2):
        module = import_exported(models.export(*build(layers)))
        lower(module, target, 2)
        times.append(estimate(module, target).modeled_time_s)
    return times[0] + (LAYERS - 1) * (times[1] - times[0])


def deploy_experts(folder: Path, target: Target) -> tuple[Deployment, float, float]:
    """The router and the 150 experts as meta-device archives in `folder`,
    deployed with `rducc deploy` for `target`; the deployment and its wall and CPU seconds."""
    archive = folder / "llama31_8b_decode.pt2"
    torch.export.save(models.export(*models.llama31_8b_decode_meta(CACHED, LAYERS)), archive)
    names = ["router", *(f"expert{i:03d}" for i in range(EXPERTS))]
    for name in names:
        os.link(archive, folder / f"{name}.pt2")
    start, cpu = time.perf_counter(), time.process_time()
    deployment = deploy([str(folder / f"{name}.pt2") for name in names], folder / "coe",
                        DeployOptions(target.name, 2, str(RESERVE_FRACTION), routers=["router"]))
    return deployment, time.perf_counter() - start, time.process_time() - cpu


def served_from(deployment: Deployment, target: Target) -> list[ServedModel]:
    """The manifest's models, with the prefill time a token of a `PROMPT`-token prefill."""
    prefill_s = modeled_seconds(lambda n: models.llama31_8b_meta(seq=PROMPT, layers=n), target) / PROMPT
    return [dataclasses.replace(m, prefill_s_per_token=prefill_s) for m in served_models(deployment)]


def trace(count: int, rate: float, seed: int = SEED) -> list[Request]:
    """Poisson arrivals at `rate` a second; expert k picked with weight 1 / (k + 1)
    (Zipf, so a few experts are hot and many cold); prompts 128-1,024 tokens,
    outputs 32-256; every request routed by the router."""
    rng = random.Random(seed)
    weights = [1 / (k + 1) for k in range(EXPERTS)]
    now, requests = 0.0, []
    for i in range(count):
        now += rng.expovariate(rate)
        expert = rng.choices(range(EXPERTS), weights)[0]
        requests.append(Request(f"q{i}", f"expert{expert:03d}", rng.randint(128, 1024), rng.randint(32, 256),
                                now, "router"))
    return requests


def switching(section: Section, served: list[ServedModel], sn40l: Target, gpus: dict[str, Target]) -> None:
    """One expert's switch time on each node, predicted from each target's own copy
    path (rducc.model.switching.copy_bandwidth: DDR a socket on the SN40L, each GPU's
    PCIe link on a DGX; every socket copies its shard at once), and the SN40L paper's
    Table V (15x over DGX H100, 31x over DGX A100) beside it as a check, with the
    ratio the paper's own assumption (one host link for the whole DGX node) gives."""
    size = served[1].weight_bytes
    rdu_rate = copy_bandwidth(sn40l) * sn40l.sockets
    rdu_s = size / rdu_rate + sn40l.dma_latency_s
    section.add("one expert's weights (bf16)", f"{size / 1e9:.2f} GB")
    section.add("switch one expert in: sn40l-8 (DDR -> HBM), predicted",
                f"{rdu_s * 1e3:.1f} ms ({rdu_rate / 1e9:.0f} GB/s = 8 x {sn40l.ddr_bandwidth / 1e9:.0f} GB/s x "
                f"{sn40l.ddr_efficiency:g}; published: the paper's \"over 1 TB/s\", Hot Chips 2024's about "
                f"{PUBLISHED_SWITCH_S * 1e3:.0f} ms for 8B)")
    for name, gpu in gpus.items():
        gpu_rate = copy_bandwidth(gpu) * gpu.sockets
        gpu_s = size / gpu_rate + gpu.dma_latency_s
        paper = PAPER_SWITCH_BY_GPU[name]
        section.add(f"switch one expert in: {name} (host -> HBM, each GPU over its PCIe link), predicted",
                    f"{gpu_s * 1e3:.0f} ms ({gpu_rate / 1e9:.0f} GB/s = 8 x {gpu.host_link_bandwidth / 1e9:.0f} "
                    f"GB/s x {gpu.ddr_efficiency:g})")
        one_link = Memory.of_target(gpu).copy_s(size)
        section.add(f"switching speedup, sn40l-8 over {name}",
                    f"predicted {gpu_s / rdu_s:.1f}x; the paper's Table V: {paper}x (its assumption, one "
                    f"{gpu.ddr_bandwidth * gpu.sockets / 1e9:.0f} GB/s link for the node: {one_link / rdu_s:.1f}x)")


def footprint(section: Section, served: list[ServedModel], sn40l: Target, gpu: Target) -> None:
    """Nodes needed to hold every model in the memory it is served from."""
    total = sum(m.weight_bytes for m in served)
    rdu_ddr = sn40l.ddr_bytes * sn40l.sockets
    section.add(f"{len(served)} models ({EXPERTS} experts + router) fit sn40l-8's DDR",
                f"{total / 1e12:.2f} TB of {rdu_ddr / 1e12:.1f} TB (8 x {sn40l.ddr_bytes / 1e12:.1f} TB)",
                "fits", total <= rdu_ddr)
    rdu_nodes = math.ceil(total / rdu_ddr)
    hbm = Memory.of_target(gpu, RESERVE_FRACTION).hbm_weight_budget_bytes
    gpu_nodes, gpu_bare = math.ceil(total / hbm), math.ceil(total / (gpu.hbm_bytes * gpu.sockets))
    section.add("footprint: nodes to hold every expert where it is served from",
                f"sn40l-8: {rdu_nodes} (DDR, switched in tens of ms); dgx-h100: {gpu_nodes} "
                f"(HBM less a {RESERVE_FRACTION:.0%} reserve; {gpu_bare} with none): {gpu_nodes / rdu_nodes:.0f}x")
    size = served[1].weight_bytes
    most = rdu_ddr // size
    full, bare = math.ceil(most * size / hbm), math.ceil(most * size / (gpu.hbm_bytes * gpu.sockets))
    section.add("footprint as the paper counts it: the experts one sn40l-8 holds in DDR, and the dgx-h100 nodes "
                "to hold them in HBM",
                f"{most} experts of 16.06 GB in 1 node; dgx-h100: {bare} nodes with all of HBM for weights (the "
                f"paper's assumption), {full} with a {RESERVE_FRACTION:.0%} reserve (paper: 850 Llama 2 7B experts, "
                f"{PAPER_FOOTPRINT} DGX nodes)", f"{PAPER_FOOTPRINT}x +- 10%", abs(bare / PAPER_FOOTPRINT - 1) <= 0.1)
    host = gpu.ddr_bytes * gpu.sockets
    section.add("the experts in dgx-h100's host memory", f"{total / 1e12:.2f} TB of {host / 1e12:.1f} TB: "
                f"{'fits' if total <= host else 'does not fit (the rest would come from storage)'}")


def serve(section: Section, served: list[ServedModel], sn40l: Target, gpu: Target, count: int) -> None:
    requests = trace(count, rate=RATE)
    reports = {}
    for target in (sn40l, gpu):
        models_here = served if target is sn40l else rescaled(served, sn40l, target)
        report = simulate(models_here, requests, Memory.of_target(target, RESERVE_FRACTION))
        reports[target.name] = report
        t = report.totals()
        section.add(f"trace of {count} requests on {target.name}",
                    f"{t['throughput_tokens_per_s']:,.0f} tokens/s; HBM hit rate {t['hbm_hit_rate']:.1%}; "
                    f"{t['copies']} switches, {t['switching_s']:.2f} s switching; ttft mean {t['ttft_mean_s']:.2f} s, "
                    f"p99 {t['ttft_p99_s']:.2f} s; tpot {t['tpot_mean_s'] * 1e3:.2f} ms")
    for policy in ("fifo", "lfu"):
        report = simulate(served, requests, Memory.of_target(sn40l, RESERVE_FRACTION), eviction=policy)
        section.add(f"trace on sn40l-8, eviction {policy}",
                    f"HBM hit rate {report.hit_rate:.1%}, {len(report.copies)} switches "
                    f"(lru: {reports[sn40l.name].hit_rate:.1%}, {len(reports[sn40l.name].copies)})")


def run(quick: bool) -> Section:
    section = Section("Composition of Experts: 150 Llama 3.1 8B experts, sn40l-8 vs dgx-h100 (serving simulation)",
                      f"python bench/coe.py{' --quick' if quick else ''}")
    sn40l, gpu = load_target("sn40l-8"), load_target("dgx-h100")
    gpus = {name: load_target(name) for name in PAPER_SWITCH_BY_GPU}
    with tempfile.TemporaryDirectory() as folder:
        start, cpu = time.perf_counter(), time.process_time()
        deployment, deploy_s, deploy_cpu_s = deploy_experts(Path(folder), sn40l)
        built_s = time.perf_counter() - start - deploy_s
        built_cpu_s = time.process_time() - cpu - deploy_cpu_s
        programs = len({m.shares_code_with or m.name for m in deployment.models})
        section.add(f"rducc deploy of {len(deployment.models)} models (meta device, {LAYERS} layers each)",
                    f"{deploy_s:.0f} s wall, {deploy_cpu_s:.0f} s CPU ({programs} program{'s' if programs > 1 else ''} "
                    f"compiled); export and save {built_s:.0f} s wall, {built_cpu_s:.0f} s CPU")
        start = time.perf_counter()
        models_here = served_from(deployment, sn40l)
    expert = models_here[1]
    section.add("one expert modeled on sn40l-8 (cost model: decode step of 32 layers from the deployment, "
                "prefill from 1 and 2 layers)",
                f"decode step {expert.decode_step_s * 1e3:.3f} ms (KV cache {CACHED:,}); prefill "
                f"{expert.prefill_s_per_token * 1e6:.2f} us a token (prompt {PROMPT}); prefill modeled in "
                f"{time.perf_counter() - start:.0f} s")
    switching(section, models_here, sn40l, gpus)
    footprint(section, models_here, sn40l, gpu)
    serve(section, models_here, sn40l, gpu, 300 if quick else 1000)
    section.details += [
        f"The trace: Poisson arrivals at {RATE:g} requests/s, expert k with weight 1/(k+1) over 150 experts, "
        "prompts 128-1,024 tokens, outputs 32-256, seed 21; every request runs the router (prefill) then "
        "its expert. Static batching of up to 8 requests of one model; LRU eviction unless named; "
        f"{RESERVE_FRACTION:.0%} of HBM reserved for activations and KV caches. dgx-h100's compute times are "
        "sn40l-8's moved by the roofline (decode x HBM bandwidth ratio, prefill x peak BF16 ratio): "
        "the comparison is of switching and memory, not of compute. bench/notes.md says where the "
        "switching and footprint figures land against the paper and why.",
    ]
    return section


def main() -> None:
    standalone(run, __doc__ or "")


if __name__ == "__main__":
    main()
