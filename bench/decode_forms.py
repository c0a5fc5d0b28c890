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

transformers' own decoders (Llama, Mistral, Qwen2, Gemma2, Phi3, GPT-NeoX:
`llama_decode_forms.hf_decode`, exported for decode with their static cache
of 4,096 positions, at Llama 3.1 8B's sizes on the meta device) are costed
the same way, each against its own reference (`HF_REFERENCE`): Llama,
Mistral and Qwen2 (Llama's math; Qwen2 adds q/k/v biases, 0.2 MB) against
`modules`; Phi3 (q/k/v and gate/up fused, Llama's math otherwise) against
`fused_qkv`, the hand-written form of that math; Gemma2 (soft-capping,
alternating sliding-window layers, four norms a layer, tied embeddings)
and GPT-NeoX (parallel residual, partial rotary, LayerNorm, GELU MLP with
biases, 32 KV heads) have no Llama-shaped form, so each is held to its own
reference, the one bench/heldout_decode_forms.py holds its families to
(`decode_reference.own_reference_s`): its busiest socket's bytes at the
target's sustained rates (HBM, and DDR for what does not fit HBM) plus the
time `modules` spends beyond its own such reads.

Every figure is modeled from shapes, not measured on a chip.

Run: python bench/decode_forms.py [--quick] [--forms a,b] [--families x,y|none]   (--quick: 4 layers, sn40l
and sn40l-16; --forms: only those forms, beside `modules`, the reference, and the references the families
need; --families: only those transformers families, `none` for none)
"""

from __future__ import annotations

import sys
import time

import llama_decode_forms  # noqa: E402
import models  # noqa: E402
import torch
from common import Section, standalone
from decode_reference import beyond_reads, kv_state, own_reference_s

from rducc.driver import lower  # noqa: E402
from rducc.frontend.importer import decompose, import_program  # noqa: E402
from rducc.model.cost_model import Report, estimate  # noqa: E402
from rducc.targets import load_target  # noqa: E402

CACHED = 4096
TARGETS = ("sn40l", "sn40l-8", "sn40l-16")
TOLERANCE = 0.02
HF_REFERENCE: dict[str, str | None] = {"llama": "modules", "mistral": "modules", "qwen2": "modules",
                                       "phi3": "fused_qkv", "gemma2": None, "gpt_neox": None}
"""Each transformers family's reference form; None: its own reference (`decode_reference.own_reference_s`)."""
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


def hf_bytes_per_token(wrapper: torch.nn.Module) -> int:
    """Bytes one decode step of a transformers family must read: every weight and buffer
    (its static caches) but the embedding table, one embedding row; the whole table
    when the LM head is the embedding (tied, Gemma2)."""
    model = wrapper.model
    table = model.get_input_embeddings().weight
    tied = model.get_output_embeddings().weight is table
    state = [*wrapper.parameters(), *wrapper.buffers()]
    weights = sum(t.numel() * t.element_size() for t in state if tied or t is not table)
    return weights + (0 if tied else table.shape[1] * table.element_size())


def _lowered(decomposed, needed: int, targets: tuple[str, ...]) -> list[tuple[str, Report, int, float]]:
    """Per target: (target, report, `needed`, seconds to import and lower) of one decomposed program."""
    results = []
    for target_name in targets:
        start = time.perf_counter()
        module = import_program(decomposed)
        target = load_target(target_name)
        lower(module, target, 2)
        results.append((target_name, estimate(module, target), needed, time.perf_counter() - start))
    return results


def compile_form(form: str, targets: tuple[str, ...], layers: int) -> list[tuple[str, Report, int, float]]:
    """Per target: (target, report, bytes a token must read, seconds to import and lower)
    of one form, exported and decomposed once."""
    config = models.llama31_8b_config(layers)
    model, inputs = llama_decode_forms.make(form, config, CACHED, device="meta", dtype=torch.bfloat16)
    return _lowered(decompose(models.export(model, inputs)), bytes_per_token(model, inputs), targets)


def compile_family(family: str, targets: tuple[str, ...], layers: int):
    """`compile_form` for transformers' `family` at 8B's sizes (meta, bf16), static cache of CACHED,
    and its KV state (`decode_reference.kv_state`)."""
    wrapper, exported, _ = llama_decode_forms.hf_decode(family, CACHED, small=False, layers=layers)
    kv = kv_state(wrapper.model.config, layers, CACHED)
    return _lowered(decompose(exported), hf_bytes_per_token(wrapper), targets), kv


SELECTED: tuple[str, ...] = llama_decode_forms.FORMS
"""The forms a run compiles (`--forms`), `modules` first: every other is compared with it."""

FAMILIES: tuple[str, ...] = llama_decode_forms.HF_FAMILIES
"""The transformers families a run compiles (`--families`)."""


def _loops(report: Report) -> str:
    return "; ".join(f"{loop.calls} calls of @{loop.callee} " + ("one loop" if loop.looped else
                     f"not looped ({loop.reason})") for loop in report.loops) or "no run of calls"


def _add_row(section: Section, name: str, results, layers: int, reference: dict[str, float],
             versus: str, kv: tuple[int, int] = (0, 1)) -> dict[str, float]:
    """One figure per target for `name`'s results, off `reference` (time a target; where the
    family is held to its own roofline, `modules`' time beyond its reads a target, and `kv` its
    KV state: `decode_reference.own_reference_s`); its times."""
    times = {}
    for target_name, report, needed, seconds in results:
        target = load_target(target_name)
        roofline_s = needed / (target.sockets * target.hbm_bandwidth)
        time_s = times[target_name] = report.modeled_time_s
        expected = (reference[target_name] if versus != "own roofline"
                    else own_reference_s(needed, kv, target, reference))
        off = time_s / expected - 1
        section.add(f"{name} on {target_name}: launches a token / roofline / tokens/s",
                    f"{report.kernel_launches} launches ({_loops(report)}); {roofline_s / time_s:.1%} of roofline "
                    f"({time_s * 1e3:.3f} ms); {1 / time_s:,.0f} tok/s; {off:+.2%} vs {versus}",
                    "one loop, within 2%",
                    any(loop.looped and loop.calls == layers for loop in report.loops) and abs(off) <= TOLERANCE)
        print(section.figures[-1].name, section.figures[-1].value, file=sys.stderr, flush=True)
        section.details.append(f"- {name} on {target_name}: imported and lowered in {seconds:.0f} s, "
                               f"{len(report.kernels)} kernels, {needed / 1e9:.2f} GB a token.")
    return times


def _command(quick: bool) -> str:
    forms = f" --forms {','.join(SELECTED[1:]) or 'modules'}" if SELECTED != llama_decode_forms.FORMS else ""
    families = "" if FAMILIES == llama_decode_forms.HF_FAMILIES else f" --families {','.join(FAMILIES) or 'none'}"
    return f"python bench/decode_forms.py{' --quick' if quick else ''}{forms}{families}"


def run(quick: bool) -> Section:
    layers = 4 if quick else 32
    section = Section(f"Modeled decode by model form: Llama 3.1 8B ({layers} layers), cache 4,096 (cost model)",
                      _command(quick))
    targets = ("sn40l", "sn40l-16") if quick else TARGETS
    needed_forms = [*SELECTED, *(HF_REFERENCE[f] for f in FAMILIES if HF_REFERENCE[f] not in (None, *SELECTED))]
    times: dict[str, dict[str, float]] = {}
    beyond: dict[str, float] = {}
    for form in dict.fromkeys(needed_forms):
        results = compile_form(form, targets, layers)
        times[form] = _add_row(section, form, results, layers, times.get("modules", {}) or
                               {t: r.modeled_time_s for t, r, _, _ in results}, "modules")
        beyond = beyond or beyond_reads(results, kv_state(models.llama31_8b_config(layers), layers, CACHED))
    for family in FAMILIES:
        reference = HF_REFERENCE[family]
        results, kv = compile_family(family, targets, layers)
        _add_row(section, f"transformers {family}", results, layers,
                 times[reference] if reference else beyond, reference or "own roofline", kv)
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


def _select_families(argv: list[str]) -> tuple[str, ...]:
    """The families `--families x,y` names (removed from `argv`; `none`: none); every family without it."""
    if "--families" not in argv:
        return llama_decode_forms.HF_FAMILIES
    at = argv.index("--families")
    named = argv[at + 1].split(",") if at + 1 < len(argv) else []
    del argv[at:at + 2]
    if named == ["none"]:
        return ()
    if not named or any(family not in llama_decode_forms.HF_FAMILIES for family in named):
        sys.exit(f"decode_forms: --families takes none or families of {', '.join(llama_decode_forms.HF_FAMILIES)}, "
                 f"got {named}")
    return tuple(named)


if __name__ == "__main__":
    SELECTED = _select_forms(sys.argv)
    FAMILIES = _select_families(sys.argv)
    standalone(run, __doc__)
