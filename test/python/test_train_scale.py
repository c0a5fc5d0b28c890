"""Compile speed of big training steps, by mechanism (issue 27's scaling part):
decomposing only the nodes that need it, rdu-fuse answering each distinct
group once, and SRAM placement that does not fail where another order fits.
Counts, not seconds: full-size timings are bench/train_llama.py's."""

from __future__ import annotations

import collections
import dataclasses
import itertools

import pytest
import torch
from torch import nn
from torch.export.experimental import _export_forward_backward
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, i64

import rducc
import rducc.passes.rdu_fuse as fuse
import rducc.passes.rdu_outline_layers as outline_layers
from rducc.dialects.contracts import arg_attrs, shard_of
from rducc.driver import CompileOptions, compile_module, module_text
from rducc.frontend.decompositions import decompose, decomposition_table
from rducc.frontend.local_decompose import decompose_locally, nodes_to_decompose
from rducc.passes.rdu_sram_alloc import SramBuffer, _place_group


class FracMish(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.frac(3.0 * x + y) * torch.ops.aten.mish(x) - 1.5


def _ops(ep: torch.export.ExportedProgram) -> collections.Counter[str]:
    return collections.Counter(str(n.target) for n in ep.graph.nodes if n.op == "call_function")


def test_local_decomposition_equals_torchs_and_runs() -> None:
    inputs = (torch.randn(4, 6), torch.randn(4, 6))
    ep = torch.export.export(FracMish(), inputs)
    table = decomposition_table(ep)
    assert {str(n.target) for n in nodes_to_decompose(ep, table) or []} == {"aten.frac.default", "aten.mish.default"}
    local = decompose_locally(ep, table)
    assert local is not None
    assert _ops(local) == _ops(ep.run_decompositions(table))
    assert "aten.frac.default" in _ops(ep)  # the caller's program is left as it was
    torch.testing.assert_close(rducc.compile(ep, opt_level=0)(*inputs), FracMish()(*inputs))


def test_local_decomposition_declines_what_retracing_changes() -> None:
    ep = torch.export.export(nn.Linear(3, 2), (torch.randn(2, 3),))  # aten.linear: CompositeImplicitAutograd
    assert decompose_locally(ep, decomposition_table(ep)) is None
    assert "aten.linear.default" not in _ops(decompose(ep))  # torch's whole-program decomposition instead


class Stack(nn.Module):
    """`depth` identical blocks and a loss: a joint graph of repeated layers, not outlined."""

    def __init__(self, depth: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 16)) for _ in range(depth)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + block(x)
        return (x * x).mean()


def _fuse_answers(depth: int, remember: bool) -> tuple[int, str]:
    """How many groups rdu-fuse weighed for a `depth`-block training step, and the IR
    (-O1: -O2 would merge so small a model into one growing kernel)."""
    torch.manual_seed(0)
    x = torch.randn(8, 16)
    joint = _export_forward_backward(torch.export.export(Stack(depth), (x,)))
    computed = [0]
    original, signature = fuse._remembered, fuse.group_signature
    fresh = itertools.count()

    def counting(question, ops, target, answer):  # type: ignore[no-untyped-def]
        def counted():  # type: ignore[no-untyped-def]
            computed[0] += 1
            return answer()
        return original(question, ops, target, counted)

    fuse._remembered = counting
    outline = outline_layers.outline_training_step
    outline_layers.outline_training_step = lambda module, function: {}  # every block inline: the memo's case
    if not remember:
        fuse.group_signature = lambda ops: next(fresh)
    try:
        module = compile_module(joint, CompileOptions(opt_level=1)).module
    finally:
        fuse._remembered, fuse.group_signature = original, signature
        outline_layers.outline_training_step = outline
    return computed[0], module_text(module, locations=False)


@pytest.fixture(scope="module")
def fuse_runs() -> dict[tuple[int, bool], tuple[int, str]]:
    return {(d, r): _fuse_answers(d, r) for d, r in ((2, True), (4, True), (4, False))}


def test_fuse_weighs_each_distinct_group_once(fuse_runs: dict[tuple[int, bool], tuple[int, str]]) -> None:
    two, four, every = fuse_runs[2, True][0], fuse_runs[4, True][0], fuse_runs[4, False][0]
    # two more blocks (forward and backward) ask as many questions again, but few new ones
    assert every > 2 * four
    assert four - two < (four + two) / 4


def test_fuse_memo_changes_no_kernel(fuse_runs: dict[tuple[int, bool], tuple[int, str]]) -> None:
    assert fuse_runs[4, True][1] == fuse_runs[4, False][1]


def test_sram_placement_tries_another_order_when_largest_first_fragments() -> None:
    op = arith.ConstantOp(IntegerAttr(0, i64))
    # largest first puts x and y at 0, then p above x and q above p: 8 bytes; 6 are live at most
    x, y, p, q = SramBuffer(op, 4, 0, 0), SramBuffer(op, 4, 2, 2), SramBuffer(op, 2, 0, 1), SramBuffer(op, 2, 1, 2)
    _place_group([x, y, p, q], capacity=8)
    assert max(b.offset + b.size for b in (x, y, p, q)) == 8  # fits: the largest-first plan is kept
    _place_group([x, y, p, q], capacity=6)
    assert max(b.offset + b.size for b in (x, y, p, q)) == 6
    for a, b in itertools.combinations((x, y, p, q), 2):  # no two buffers live at once overlap
        if a.start <= b.end and b.start <= a.end:
            assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset


class CausalAttention(nn.Module):
    """One attention block through scaled_dot_product_attention, and a loss."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.out = nn.Linear(16, 48), nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.unflatten(-1, (2, 8)).transpose(1, 2) for t in self.qkv(x).chunk(3, -1))
        attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(attended.transpose(1, 2).flatten(2)).square().mean()


def test_joint_graph_traces_attention_math_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The attention's math is differentiated in the joint graph's own trace: the
    program is traced once, not once more to replace attention first, and the
    joint graph is the one torch builds from the program with attention replaced."""
    from rducc.training.attention import attention_math as _attention_math
    from rducc.training.compile import joint_graph

    ep = torch.export.export(CausalAttention(), (torch.randn(2, 5, 16),))
    attention = torch.ops.aten.scaled_dot_product_attention.default
    reference = _export_forward_backward(ep.run_decompositions({attention: _attention_math}))

    def no_retrace(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the program was traced again before the joint graph")

    monkeypatch.setattr(torch.export.ExportedProgram, "run_decompositions", no_retrace)
    joint = joint_graph(ep)

    def shapes(ep: torch.export.ExportedProgram) -> list[tuple[str, tuple[int, ...]]]:
        return [(str(n.target), tuple(n.meta["val"].shape)) for n in ep.graph.nodes
                if n.op == "call_function" and isinstance(n.meta.get("val"), torch.Tensor)]

    assert shapes(joint) == shapes(reference)
    assert "aten.bmm.default" in _ops(joint) and str(attention) not in _ops(joint)
    assert joint.graph_signature.output_specs == reference.graph_signature.output_specs
    assert attention in {n.target for n in ep.graph.nodes}  # the caller's program is left as it was


def test_joint_graph_of_a_16_bit_meta_model_differentiates_attention() -> None:
    """Full-size steps compile on the meta device (bench/train_llama.py): there the
    16-bit attention's stand-in runs with no autocast to turn off."""
    from rducc.training.compile import joint_graph

    with torch.device("meta"):
        model = CausalAttention().to(torch.bfloat16)
        ep = torch.export.export(model, (torch.zeros(2, 5, 16, dtype=torch.bfloat16),))
    joint = joint_graph(ep)
    assert "aten.bmm.default" in _ops(joint)
    assert str(torch.ops.aten.scaled_dot_product_attention.default) not in _ops(joint)


class GroupedAttention(nn.Module):
    """Causal attention with `heads` query heads over `kv_heads` key/value heads (dim 4), and a loss."""

    def __init__(self, heads: int, kv_heads: int) -> None:
        super().__init__()
        self.widths = [heads * 4, kv_heads * 4, kv_heads * 4]
        self.qkv, self.out = nn.Linear(16, sum(self.widths)), nn.Linear(heads * 4, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.unflatten(-1, (-1, 4)).transpose(1, 2) for t in self.qkv(x).split(self.widths, -1))
        attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.out(attended.transpose(1, 2).flatten(2)).square().mean()


def _joint_graph_nodes(seq: int, heads: int, kv_heads: int) -> int:
    from rducc.training.compile import joint_graph

    with torch.device("meta"):
        model = GroupedAttention(heads, kv_heads).to(torch.bfloat16)
        ep = torch.export.export(model, (torch.zeros(1, seq, 16, dtype=torch.bfloat16),))
    return len(joint_graph(ep).graph.nodes)


def test_16_bit_attention_joint_graph_does_not_grow_with_blocks_and_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel adds key/value gradients up in bf16 one query head and one
    block of query rows at a time: spelled out, the joint graph grew with
    blocks x grouped heads (a 70B layer at seq 4,096: 16 x 8, 2,639 nodes
    against 460 with attention's plain math; here 16 x 8 gave 2,039 against
    129). Above `ROUNDED_ADDITIONS` one float32 sum: within twice the plain
    math's graph."""
    from rducc.training import attention, compile

    rounded = _joint_graph_nodes(4096, 8, 1)
    monkeypatch.setitem(compile._DIFFERENTIATED_AS, torch.ops.aten.scaled_dot_product_attention.default,
                        attention.attention_math)
    assert rounded < 2 * _joint_graph_nodes(4096, 8, 1)
    assert 16 * 8 > attention.ROUNDED_ADDITIONS  # the case is above the bound


class LlamaLoss(nn.Module):
    """A one-layer transformers Llama (8 query heads over 2 key/value heads) and its next-token loss."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        self.model = LlamaForCausalLM(LlamaConfig(
            hidden_size=64, num_attention_heads=8, num_key_value_heads=2, intermediate_size=128,
            num_hidden_layers=1, vocab_size=256, max_position_embeddings=2048))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids, labels=ids, use_cache=False).loss


def _collectives_at_tp2(monkeypatch: pytest.MonkeyPatch, plain: bool) -> list[str]:
    """The collectives of LlamaLoss's 16-bit training step (meta, above the
    size rule's bound) split tp=2 on sn40l-8, with the stand-in or the plain math."""
    from rducc.driver import CompileOptions
    from rducc.training import attention, compile
    from rducc.training.optimizers import named_optimizer
    from rducc.training.program import export_for_training

    if plain:
        monkeypatch.setitem(compile._DIFFERENTIATED_AS, torch.ops.aten.scaled_dot_product_attention.default,
                            attention.attention_math)
    with torch.device("meta"):
        model = LlamaLoss().to(torch.bfloat16).train()
        x = torch.zeros((1, 2048), dtype=torch.int64)
    ep, _, _ = export_for_training(model, (x,), None, None, 1.0, None, 1)
    groups = compile.single_group(named_optimizer("sgd", {"lr": 1e-4}), ep)
    module = compile.compile_step(ep, groups, CompileOptions(target="sn40l-8", split=(2, 1))).module
    return sorted(str(op.results[0].type) for op in module.walk()
                  if op.name in ("rdu.all_gather", "rdu.all_reduce", "rdu.reduce_scatter"))


def test_16_bit_attention_above_the_bound_splits_by_heads_as_the_plain_math(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Above `ROUNDED_ADDITIONS` the stand-in is float32 math rounded once,
    which tp splits by heads as it splits the plain math. The first size rule
    kept the kernel's backward with one float32 sum, whose graph tp could not
    split by heads (a 2-layer 70B step at tp=16 all-gathered whole weights:
    358.9 ms modeled). With the heads repeated after the float32 cast this
    step outlines the k and v projections' backward as one layer, which
    all-gathered the key and value weights until rdu-partition took its
    caller's head split (`test_tp_splits_repeated_heads_through_an_outlined_backward`)."""
    from rducc.training import attention

    assert 8 * 4 > attention.ROUNDED_ADDITIONS  # seq 2,048: 8 query blocks x 4 heads a key head serves
    assert _collectives_at_tp2(monkeypatch, plain=False) == _collectives_at_tp2(monkeypatch, plain=True)


class RepeatedHeadsAttention(nn.Module):
    """One grouped-query attention block (8 query heads over 2 key/value heads)
    and a next-token loss, its key/value heads repeated by `repeat` (a
    `repeat_interleave`, or expand and reshape) and cast to float32 before or after."""

    def __init__(self, repeat: str, cast: str, hidden: int = 64, heads: int = 8, kv_heads: int = 2) -> None:
        super().__init__()
        self.repeat, self.cast, self.heads, self.kv_heads = repeat, cast, heads, kv_heads
        self.embed, self.head = nn.Embedding(256, hidden), nn.Linear(hidden, 256, bias=False)
        self.q, self.o = nn.Linear(hidden, hidden, bias=False), nn.Linear(hidden, hidden, bias=False)
        self.k, self.v = (nn.Linear(hidden, kv_heads * hidden // heads, bias=False) for _ in range(2))

    def _repeated(self, x: torch.Tensor) -> torch.Tensor:
        group = self.heads // self.kv_heads
        if self.repeat == "interleave":
            return x.repeat_interleave(group, 1)
        b, kv, s, d = x.shape
        return x[:, :, None].expand(b, kv, group, s, d).reshape(b, kv * group, s, d)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        (b, s, hidden), d = x.shape, x.size(-1) // self.heads
        q, k, v = (p(x).view(b, s, -1, d).transpose(1, 2) for p in (self.q, self.k, self.v))
        if self.cast == "before":
            q, k, v = q.float(), k.float(), v.float()
        k, v = self._repeated(k), self._repeated(v)
        weights = torch.softmax(q.float() @ k.float().transpose(-2, -1) / d**0.5, -1)
        y = x + self.o((weights @ v.float()).to(x.dtype).transpose(1, 2).reshape(b, s, hidden))
        return nn.functional.cross_entropy(self.head(y).float().view(-1, 256), ids.view(-1))


@pytest.mark.parametrize("repeat,cast", [("interleave", "after"), ("expand", "before")])
def test_tp_splits_repeated_heads_through_an_outlined_backward(repeat: str, cast: str) -> None:
    """Where a step outlines the key and value projections' backward as one
    layer (here: SRAM too small for the step inline), that layer reads the
    gradient its caller summed over each group of repeated heads, split by
    key/value heads; rdu-partition partitions it at its first call, in the
    caller's split, so tp=2 gathers neither a value split by heads nor the
    key and value weights, however the heads are repeated and wherever the cast is.
    Partitioned before its caller, the layer took that gradient whole: the
    caller all-gathered both gradients and the layer the key and value weights."""
    from rducc.pipeline import default_passes
    from rducc.targets import load_target
    from rducc.training import compile
    from rducc.training.optimizers import named_optimizer
    from rducc.training.program import export_for_training

    small = dataclasses.replace(load_target("sn40l-8"), name="small-sram", sram_bytes=60_000, pmu_bytes=500, pmus=200)
    passes = default_passes(2, "placed", small.sockets, (2, 1))
    passes = passes[:[p.name for p in passes].index("rdu-partition") + 1]
    with torch.device("meta"):
        model = RepeatedHeadsAttention(repeat, cast).to(torch.bfloat16).train()
        ids = torch.zeros((1, 64), dtype=torch.int64)
    ep, _, _ = export_for_training(model, (ids,), None, None, 1.0, None, 1)
    groups = compile.single_group(named_optimizer("sgd", {"lr": 1e-4}), ep)
    module = compile.compile_step(ep, groups, CompileOptions(target=small, split=(2, 1), passes=passes)).module
    backward = next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == "layer_backward")
    assert any("rdu.input" in attrs and shard_of(attrs) is not None for attrs in arg_attrs(backward))  # taken split
    gathered = [op.results[0].type.get_shape() for op in module.walk() if op.name == "rdu.all_gather"]
    assert gathered and not [s for s in gathered if len(s) > 2 or s == (16, 64)], gathered  # heads, k/v weights
