"""Grouped-query K/V heads repeated before the attention products are streamed
views (dialects/streamed.py), not buffers: a decoder layer whose repeated keys
and values would not fit SRAM beside its weights, but whose cached K/V heads do,
is one kernel. Checked by count on a tiny GQA model (8 query heads a KV head)
on an SRAM between the two sizes; with the rule switched off the same layer is
two kernels (the check can fail)."""

from __future__ import annotations

import dataclasses

import llama_decode_forms
import models
import pytest
from transformers import LlamaConfig
from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block, Region

from rducc.dialects import streamed
from rducc.dialects.contracts import is_outlined
from rducc.dialects.program import functions
from rducc.dialects.rdu.dataflow import BroadcastOp, MapOp, MatmulOp, ReshapeOp, YieldOp
from rducc.driver import lower
from rducc.frontend.importer import decompose, import_program
from rducc.model import kernel_model, mapping
from rducc.passes import rdu_sram_alloc
from rducc.targets import load_target

SRAM = 600_000
"""Bytes: a layer's weights and cached K/V (about 0.55 MB) fit, with the keys and
values repeated 8 times (about 0.1 MB more) they do not."""

def _layer_kernels(decomposed) -> int:
    module = import_program(decomposed)
    lower(module, dataclasses.replace(load_target("sn40l"), name="sram-600k", sram_bytes=SRAM), 2)
    (layer,) = [f for f in functions(module) if is_outlined(f)]
    return sum(1 for op in layer.walk() if op.name == "tier.compute")


def test_repeated_heads_stream_into_one_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers' repeat_kv (`expand` + `reshape` of the cache buffers); the other
    ways of repeating heads are one looped layer in test_decode_forms.py."""
    config = LlamaConfig(vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                         num_attention_heads=16, num_key_value_heads=2)
    model, inputs = llama_decode_forms.make("residual_in_parent", config, 64)
    decomposed = decompose(models.export(model, inputs))
    assert _layer_kernels(decomposed) == 1
    for user in (kernel_model, mapping, rdu_sram_alloc):
        monkeypatch.setattr(user, "streamed_views", lambda ops, kept=(): {})
    assert _layer_kernels(decomposed) == 2, "the repeated heads fit anyway: the check proves nothing"


def test_only_expanding_views_read_by_products_stream() -> None:
    """The rule itself: an expanded view read by a product streams from its source;
    the same view also read by an elementwise op of two tensors is written."""
    block = Block(arg_types=[TensorType(f32, [2, 1, 4, 8]), TensorType(f32, [8, 1, 8])])
    source, q = block.args
    widened = BroadcastOp(source, TensorType(f32, [2, 4, 4, 8]))
    heads = ReshapeOp(widened.result, TensorType(f32, [8, 4, 8]))
    product = MatmulOp(q, heads.result, TensorType(f32, [8, 1, 4]), transpose_rhs=True)
    ops = [widened, heads, product]
    assert streamed.streamed_views(ops) == {widened.result: source, heads.result: source}
    body = Block(arg_types=[f32, f32])
    body.add_ops([add := arith.AddfOp(*body.args), YieldOp(add.result)])
    summed = MapOp([heads.result, heads.result], TensorType(f32, [8, 4, 8]), Region(body))
    assert streamed.streamed_views([*ops, summed]) == {}
    assert streamed.streamed_views(ops, {heads.result}) == {}
