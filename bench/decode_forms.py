"""Modeled Llama 3.1 8B decode (cost model) for the same step written in other forms.

Each form of examples/llama_decode_forms.py (the same math: layers as modules or
called from the parent's forward, residual adds and norms at either end of a
layer, the KV cache extended by concatenation, updated in place, passed
stacked or updated by `scatter_`, grouped-query heads repeated by a reshape,
`repeat_interleave`, `expand` or indexing, gate and up fused in one weight)
is built at the exact Llama 3.1 8B config on the meta device (bf16, batch 1,
KV cache of 4,096 positions), compiled at -O2 for
sn40l, sn40l-8 and sn40l-16 (the split the cost model picks), and costed:
launches per token, calls of `@layer` and whether they run as one loop, the
aggregate-HBM roofline / modeled time (the bytes a token must read: every
weight but the embedding table, one embedding row and the caches, over
sockets x HBM bandwidth), and tokens/s. Goal: every form one looped layer,
and each form's modeled time within 2% of the `modules` form's (BENCHMARKS').

Every figure is modeled from shapes, not measured on a chip.

Run: python bench/decode_forms.py [--quick] [--forms a,b]   (--quick: 4 layers, sn40l and sn40l-16;
--forms: only those forms, beside `modules`, the reference)
"""

from __future__ import annotations

import sys
import time

import torch
from common import Section, standalone

import llama_decode_forms  # noqa: E402
import models  # noqa: E402

from rducc.driver import lower  # noqa: E402
from rducc.frontend.importer import decompose, import_program  # noqa: E402
from rducc.model.cost_model import Report, estimate  # noqa: E402
from rducc.targets import load_target  # noqa: E402

CACHED = 4096
TARGETS = ("sn40l", "sn40l-8", "sn40l-16")
TOLERANCE = 0.02
REPEATED_HEADS_NOTE = (
    "- The forms that repeat the KV heads over the whole cache before the attention matmuls "
    "(`repeat_interleave`, `expand` + `reshape`, `Tensor.repeat`, `unsqueeze` + `expand` + `flatten`, SDPA's "
    "`enable_gqa`, indexing by a head map) are one kernel a layer on one socket too: the repeated keys and values "
    "(32 heads x 4,097 positions, 100 MB with K's transpose) are streamed views the products read from the cached "
    "KV heads by address (docs/cost-model.md, \"Streamed views\"), not buffers beside the MLP's weights.")


def bytes_per_token(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> int:
    """Bytes one decode step must read: every weight and buffer but the embedding
    table, one embedding row, and the tensor inputs (token, rotary, caches)."""
    table = model.embed_tokens.weight
    state = [*model.parameters(), *model.buffers()]
    weights = sum(t.numel() * t.element_size() for t in state if t is not table)
    row = table.shape[1] * table.element_size()
    return weights + row + sum(t.numel() * t.element_size() for t in inputs)


def compile_form(form: str, targets: tuple[str, ...], layers: int) -> list[tuple[str, Report, int, float]]:
    """Per target: (target, report, bytes a token must read, seconds to import and lower)
    of one form, exported and decomposed once."""
    config = models.llama31_8b_config(layers)
    model, inputs = llama_decode_forms.make(form, config, CACHED, device="meta", dtype=torch.bfloat16)
    needed = bytes_per_token(model, inputs)
    decomposed = decompose(models.export(model, inputs))
    results = []
    for target_name in targets:
        start = time.perf_counter()
        module = import_program(decomposed)
        target = load_target(target_name)
        lower(module, target, 2)
        results.append((target_name, estimate(module, target), needed, time.perf_counter() - start))
    return results


SELECTED: tuple[str, ...] = llama_decode_forms.FORMS
"""The forms a run compiles (`--forms`), `modules` first: every other is compared with it."""


def run(quick: bool) -> Section:
    layers = 4 if quick else 32
    section = Section(f"Modeled decode by model form: Llama 3.1 8B ({layers} layers), cache 4,096 (cost model)",
                      f"python bench/decode_forms.py{' --quick' if quick else ''}"
                      + (f" --forms {','.join(SELECTED[1:])}" if SELECTED != llama_decode_forms.FORMS else ""))
    targets = ("sn40l", "sn40l-16") if quick else TARGETS
    reference: dict[str, float] = {}
    for form in SELECTED:
        for target_name, report, needed, seconds in compile_form(form, targets, layers):
            target = load_target(target_name)
            roofline_s = needed / (target.sockets * target.hbm_bandwidth)
            time_s = report.modeled_time_s
            reference.setdefault(target_name, time_s)
            off = time_s / reference[target_name] - 1
            loops = "; ".join(f"{loop.calls} calls of @{loop.callee} " + ("one loop" if loop.looped else
                              f"not looped ({loop.reason})") for loop in report.loops) or "no run of calls"
            section.add(f"{form} on {target_name}: launches a token / roofline / tokens/s",
                        f"{report.kernel_launches} launches ({loops}); {roofline_s / time_s:.1%} of roofline "
                        f"({time_s * 1e3:.3f} ms); {1 / time_s:,.0f} tok/s; {off:+.2%} vs modules",
                        "one loop, within 2%",
                        any(loop.looped and loop.calls == layers for loop in report.loops) and abs(off) <= TOLERANCE)
            print(section.figures[-1].name, section.figures[-1].value, file=sys.stderr, flush=True)
            section.details.append(f"- {form} on {target_name}: imported and lowered in {seconds:.0f} s, "
                                   f"{len(report.kernels)} kernels, {needed / 1e9:.2f} GB a token.")
    section.details.append("")
    section.details += [f"- {form}: {why} (a known gap)." for form, why in llama_decode_forms.KNOWN_GAPS.items()]
    section.details += [f"- {form} on sn40l-8, sn40l-16: {why} (a meta-device gap)."
                        for form, why in llama_decode_forms.META_GAPS.items()]
    for form, gaps in llama_decode_forms.TIME_GAPS.items():
        for why in dict.fromkeys(gaps.values()):
            targets = ", ".join(t for t, w in gaps.items() if w == why)
            section.details.append(f"- {form} on {targets}: {why} (a known gap).")
    section.details.append(REPEATED_HEADS_NOTE)
    return section


def _select_forms(argv: list[str]) -> tuple[str, ...]:
    """The forms `--forms a,b` names (removed from `argv`), after `modules`; every form without it."""
    if "--forms" not in argv:
        return llama_decode_forms.FORMS
    at = argv.index("--forms")
    named = argv[at + 1].split(",") if at + 1 < len(argv) else []
    del argv[at:at + 2]
    unknown = [form for form in named if form not in llama_decode_forms.FORMS]
    if unknown or not named:
        sys.exit(f"decode_forms: --forms takes forms of {', '.join(llama_decode_forms.FORMS)}, got {named}")
    return ("modules", *(form for form in named if form != "modules"))


if __name__ == "__main__":
    SELECTED = _select_forms(sys.argv)
    standalone(run, __doc__)
