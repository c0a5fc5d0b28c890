"""Decoder layers found by structure: the same Llama decode step written in other
forms (examples/llama_decode_forms.py: layers called from the parent's forward or as
modules, residual adds and norms at either end, caches concatenated, updated in
place or stacked, KV heads repeated by other means) compiles to one outlined
`@layer` whose calls run as one kernel loop, with the same modeled time per
token as BENCHMARKS' form within 2% on sn40l and sn40l-16 (tp=16: two ranks a
KV head, the harder split), and the same numbers as eager. sn40l-8 (tp=8) is
checked here by the stacked forms against eager and, for every form, at 32
layers by bench/decode_forms.py. Also transformers' decoders exported
for decode with their static cache (Llama, Mistral, Qwen2, Gemma2, Phi3,
GPT-NeoX): one looped layer each."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import LlamaConfig

import llama_decode_forms
import models
import rducc
from rducc.dialects.contracts import calls_of, is_outlined, partition_of
from rducc.dialects.program import functions
from rducc.driver import lower
from rducc.frontend.importer import decompose, import_program
from rducc.model.cost_model import Report, estimate
from rducc.pipeline import default_passes
from rducc.targets import load_target

LAYERS = 2
CACHED = 16
TOLERANCE = 0.02
SPLITS = {"sn40l": (0, 0), "sn40l-8": (8, 1), "sn40l-16": (16, 1)}
"""The tensor-parallel split forced on each target (8B's: tp over all sockets)."""
FORM_TARGETS = ("sn40l", "sn40l-16")
"""The targets every form is compiled for here (bench/decode_forms.py: all three, 32 layers)."""
CHECKED = [form for form in llama_decode_forms.FORMS if form not in llama_decode_forms.KNOWN_GAPS]


def _config() -> LlamaConfig:
    """Small, with 8B's head layout (4 query heads a KV head, tp=16 > KV heads)."""
    return LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=LAYERS,
                       num_attention_heads=16, num_key_value_heads=8)


def _compile(exported, decomposed, target: str):
    """(module, report, program): sn40l by `rducc.compile` (its own pipeline: layers
    outlined at import when the module paths allow, else by the pass), runnable;
    the others by the -O2 pipeline with the split forced (no program)."""
    if target == "sn40l":
        program = rducc.compile(exported, target=target)
        return program.module, estimate(program.module, load_target(target)), program
    module = import_program(decomposed)
    lower(module, load_target(target), 2, split=SPLITS[target])
    return module, estimate(module, load_target(target)), None


def _layers(module) -> list[int]:
    """`rdu.calls` of each outlined function."""
    return [calls_of(f) for f in functions(module) if is_outlined(f)]


@pytest.fixture(scope="module")
def compiled() -> dict[str, tuple]:
    """Each checked form: (model, inputs, {target: (module, report, program)})."""
    built = {}
    for form in CHECKED:
        model, inputs = llama_decode_forms.make(form, _config(), CACHED)
        exported = models.export(model, inputs)
        decomposed = decompose(exported)
        built[form] = (model, inputs, {target: _compile(exported, decomposed, target) for target in FORM_TARGETS})
    return built


def _looped_once(report: Report) -> bool:
    return len(report.loops) == 1 and report.loops[0].looped and report.loops[0].calls == LAYERS


@pytest.mark.parametrize("form", CHECKED)
def test_form_is_one_looped_layer(compiled, form: str) -> None:
    _, _, targets = compiled[form]
    for target, (module, report, _) in targets.items():
        assert _layers(module) == [LAYERS], (form, target)
        assert _looped_once(report), (form, target, report.loops)
        if target != "sn40l":
            assert partition_of(module)[0] == SPLITS[target][0]


@pytest.mark.parametrize("form", [f for f in CHECKED if f != "modules"])
def test_form_models_the_same_time(compiled, form: str) -> None:
    """Within 2% of BENCHMARKS' form on every target but those TIME_GAPS names."""
    gaps = llama_decode_forms.TIME_GAPS.get(form, {})
    for target in (t for t in FORM_TARGETS if t not in gaps):
        reference = compiled["modules"][2][target][1].modeled_time_s
        time_s = compiled[form][2][target][1].modeled_time_s
        assert abs(time_s / reference - 1) <= TOLERANCE, (form, target, time_s, reference)


@pytest.mark.parametrize("form", CHECKED)
def test_form_matches_eager(compiled, form: str) -> None:
    """The sn40l program runs the form as eager does."""
    model, inputs, targets = compiled[form]
    got = targets["sn40l"][2](*inputs)
    with torch.no_grad():
        expected = model(*inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple | list) else (got,)
    for ours, theirs in zip(got, expected):
        np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family", llama_decode_forms.HF_FAMILIES)
def test_transformers_decode_is_one_looped_layer(family: str) -> None:
    """transformers' own decode step (static cache updated in place, its own
    attention and GQA code) of each family: one @layer, its calls one loop."""
    _, exported, _ = llama_decode_forms.hf_decode(family, CACHED)
    program = rducc.compile(exported)
    report = estimate(program.module, load_target("sn40l"))
    assert _layers(program.module) == [LAYERS]
    assert _looped_once(report), (family, report.loops)


@pytest.mark.parametrize("form", ["stacked", "stacked_weights", "index_heads"])
def test_stacked_form_split_across_sockets_matches_eager(form: str) -> None:
    """A stacked cache (two windows a call) and stacked weights split by tp=8 through
    their per-layer windows, and KV heads repeated by a head map gathered per rank
    from the rank's own KV heads (the map rebased): the 8 sockets' program runs
    the step as eager does."""
    model, inputs = llama_decode_forms.make(form, _config(), CACHED)
    program = rducc.compile(models.export(model, inputs), target="sn40l-8", split=SPLITS["sn40l-8"])
    assert partition_of(program.module)[0] == 8
    with torch.no_grad():
        expected = model(*inputs)
    for ours, theirs in zip(program(*inputs), expected):
        np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-4, atol=1e-5)


def test_empty_weights_keeps_index_tensors() -> None:
    """Under rducc.empty_weights() weights and float buffers are meta, a small
    integer tensor computed in __init__ keeps its values; an explicit device wins."""
    with rducc.empty_weights():
        model = llama_decode_forms.IndexHeads(_config())
        explicit = torch.zeros(2, dtype=torch.long, device="meta")
    assert model.layers[0].q_proj.is_meta and model.embed_tokens.weight.is_meta and explicit.is_meta
    assert model.head_map.device.type == "cpu"
    assert model.head_map.tolist() == [h // 2 for h in range(16)]


def test_head_map_buffer_on_meta_split_per_rank() -> None:
    """index_heads built on the meta device (its head map buffer kept real by
    rducc.empty_weights): at tp=16 rdu-partition splits the gather by the map per
    rank as with real weights, gathering nothing (bench/decode_forms.py checks the
    modeled time at 8B size: within 2% of BENCHMARKS' form)."""
    model, inputs = llama_decode_forms.make("index_heads", _config(), CACHED, device="meta")
    module = import_program(decompose(models.export(model, inputs)))
    passes = default_passes(2, "placed", 16, SPLITS["sn40l-16"])
    lower(module, load_target("sn40l-16"), passes=passes[:[p.name for p in passes].index("rdu-partition") + 1])
    assert partition_of(module)[0] == 16
    assert "rdu.all_gather" not in str(module)
