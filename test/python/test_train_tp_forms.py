"""Tensor parallelism through training for the spellings users write (issue 27):
grouped-query heads tiled by `k.repeat(1, g, 1, 1)` or `cat([k] * g)` (query head
h reads KV head h % kv_heads: the query heads split with the period the tiled KV
heads arrive with, `_paired_period`), and weights computed from parameters
(weight_norm's `g * v / |v|`, written by hand or by torch's parametrization: the
matmul splits, each rank cutting its part of the computed weight, `_weight_part`),
and an embedding tied to the LM head (its gradient scattered split as the head's).
Each trains as eager does."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from training_cases import assert_sgd_steps_match

import rducc
from rducc.api import after
from rducc.dialects.rdu.collectives import AllGatherOp
from rducc.dialects.rdu.dataflow import ConvOp, MatmulOp
from rducc.passes.rdu_partition import RduPartition
from rducc.training import compile_training

HIDDEN, VOCAB = 32, 64


def tiled(k: torch.Tensor, spelling: str, group: int) -> torch.Tensor:
    """KV heads (b, kv, s, d) tiled `group` times along the heads, as `spelling` writes it."""
    return k.repeat(1, group, 1, 1) if spelling == "repeat" else torch.cat([k] * group, dim=1)


class TiledAttention(nn.Module):
    """One attention block whose KV heads are tiled for the query heads and a
    next-token loss through an LM head tied to the embedding; k takes a scale v
    does not (two distinct projections)."""

    def __init__(self, spelling: str, heads: int = 8, kv_heads: int = 4) -> None:
        super().__init__()
        self.spelling, self.heads, self.kv_heads = spelling, heads, kv_heads
        self.embed, self.head = nn.Embedding(VOCAB, HIDDEN), nn.Linear(HIDDEN, VOCAB, bias=False)
        self.head.weight = self.embed.weight
        self.q, self.o = nn.Linear(HIDDEN, HIDDEN, bias=False), nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.k, self.v = (nn.Linear(HIDDEN, kv_heads * HIDDEN // heads, bias=False) for _ in range(2))

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        (b, s, _), d, group = x.shape, HIDDEN // self.heads, self.heads // self.kv_heads
        q = self.q(x).view(b, s, self.heads, d).transpose(1, 2)
        k, v = (p(x).view(b, s, self.kv_heads, d).transpose(1, 2) for p in (self.k, self.v))
        k, v = tiled(k * d**-0.5, self.spelling, group), tiled(v, self.spelling, group)
        y = torch.softmax(q @ k.transpose(-2, -1), -1) @ v
        y = x + self.o(y.transpose(1, 2).reshape(b, s, HIDDEN))
        return nn.functional.cross_entropy(self.head(y).flatten(0, 1), labels.flatten())


class NormedMLP(nn.Module):
    """An MLP whose two weights are computed from parameters: `up`'s by torch's
    weight_norm parametrization, `down`'s as `g * v / v.norm(dim=1)` written out."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.head = nn.Embedding(VOCAB, HIDDEN), nn.Linear(HIDDEN, VOCAB, bias=False)
        self.up, self.down = nn.Linear(HIDDEN, 3 * HIDDEN), nn.Linear(3 * HIDDEN, HIDDEN)
        nn.utils.parametrizations.weight_norm(self.up)
        self.gain = nn.Parameter(torch.rand(HIDDEN, 1) + 0.5)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        down = self.gain * self.down.weight / self.down.weight.norm(dim=1, keepdim=True)
        x = x + nn.functional.linear(nn.functional.gelu(self.up(x)), down, self.down.bias)
        return nn.functional.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


def _train_as_eager(model: nn.Module, tp: int):
    """Two SGD steps through rducc at `tp` on sn40l-8 and eagerly: equal losses and
    weights; the compiled step, for the caller's checks of its split."""
    torch.manual_seed(0)
    batches = [(torch.randint(0, VOCAB, (2, 8)), torch.randint(0, VOCAB, (2, 8))) for _ in range(2)]
    eager = copy.deepcopy(model)
    options = {"lr": 0.05, "momentum": 0.9}
    program = compile_training(model, batches[0], optimizer="sgd", target="sn40l-8", tp=tp, **options)
    assert_sgd_steps_match(program, eager, batches, **options)
    return program


def _gathered(program) -> list[tuple[int, ...]]:
    return [tuple(op.operands[0].type.get_shape()) for op in program.module.walk() if isinstance(op, AllGatherOp)]


@pytest.mark.parametrize(("spelling", "tp", "kv_heads"), [("repeat", 4, 2), ("cat", 2, 4)])
def test_tiled_kv_heads_and_tied_embedding_split(spelling, tp, kv_heads):
    """KV heads tiled by `repeat` at tp=4 over 2 KV heads (more ranks than KV heads:
    KV head r % 2 on rank r, the tiling's copies spread over the ranks above) or by
    `cat` at tp=2 over 4 (8 query heads): the query heads split with the tiled
    heads' period, so neither q nor the tiled k and v are gathered, nor the KV
    heads' gradients summed over their copies (before: q, the tiled k and v, their
    gradients and the k/v weights were); the embedding tied to the LM head has its
    gradient scattered split by vocabulary rows as the head's (before: the head's
    gradient and weight were gathered)."""
    torch.manual_seed(0)
    program = _train_as_eager(TiledAttention(spelling, kv_heads=kv_heads), tp)
    gathered = _gathered(program)
    assert gathered and all(shape[-1] == 1 for shape in gathered), gathered  # the cross entropy's maxima only


def test_computed_weights_split_their_matmuls():
    """weight_norm (torch's and written out) at tp=2: the parameters are split as the
    matmuls take the computed weights (`up`'s v and g by rows, `down`'s v by columns,
    its norm over them a partial sum all-reduced), so no matmul makes the whole hidden
    layer and neither the weights nor their gradients are gathered (before: the MLP ran
    whole on every rank; then the weights were computed whole and each computed
    weight's gradient all-gathered for their backward)."""
    torch.manual_seed(0)
    program = _train_as_eager(NormedMLP(), 2)
    widths = {op.result.type.get_shape()[-1] for op in program.module.walk() if isinstance(op, MatmulOp)}
    assert 3 * HIDDEN not in widths, widths
    assert all(shape[-1] == 1 for shape in _gathered(program)), _gathered(program)  # vectors at most


class FusedProjections(nn.Module):
    """q, k and v from one weight stored [in, out] (transformers' Conv1D: GPT-2's
    `c_attn`) cut by `split`, and a gated MLP whose gate and up come from one
    projection cut by `chunk`, after a layer norm."""

    def __init__(self, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.embed, self.head = nn.Embedding(VOCAB, HIDDEN), nn.Linear(HIDDEN, VOCAB, bias=False)
        self.norm = nn.LayerNorm(HIDDEN)
        self.qkv_weight = nn.Parameter(torch.randn(HIDDEN, 3 * HIDDEN) * 0.1)
        self.qkv_bias = nn.Parameter(torch.randn(3 * HIDDEN) * 0.1)
        self.o, self.gate_up, self.down = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, 4 * HIDDEN), nn.Linear(
            2 * HIDDEN, HIDDEN)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        (b, s, _), d = x.shape, HIDDEN // self.heads
        fused = torch.addmm(self.qkv_bias, self.norm(x).view(-1, HIDDEN), self.qkv_weight).view(b, s, 3 * HIDDEN)
        q, k, v = (t.view(b, s, self.heads, d).transpose(1, 2) for t in fused.split(HIDDEN, dim=2))
        y = torch.softmax(q @ k.transpose(-2, -1) * d**-0.5, -1) @ v
        x = x + self.o(y.transpose(1, 2).reshape(b, s, HIDDEN))
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        x = x + self.down(nn.functional.silu(gate) * up)
        return nn.functional.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


def test_fused_projection_gradients_stay_split():
    """A fused q/k/v projection stored [in, out] and cut by `split`, and a gate/up cut
    by `chunk`, at tp=2: the weights split by column blocks, and the backward joins
    the blocks' gradients (q's, k's, v's; the gate's and up's), each split by heads or
    columns, into the projection's gradient split alike (a concat of split values:
    each rank joins its parts), which the weight's gradient, the bias's and the
    input's take as it is: nothing but the cross entropy's maxima is gathered (before:
    q's, k's and v's gradients, then the fused weight and bias for the update). The
    parameters left whole (the layer norm's, biases added after an all-reduce) are
    named with the op that reads them whole, for the report."""
    from rducc.tools.report import whole_weights

    torch.manual_seed(0)
    program = _train_as_eager(FusedProjections(), 2)
    assert all(shape[-1] == 1 for shape in _gathered(program)), _gathered(program)
    readers = {group.reader: group for group in whole_weights(program.module)}
    assert readers["rdu.layer_norm"].count == 2 and "norm.weight" in readers["rdu.layer_norm"].first, readers
    assert not any("qkv" in group.first for group in readers.values()), readers


class GroupedConvs(nn.Module):
    """A dense stem split by output channels, then convolutions of 4 groups and, transposed,
    of 2 (group widths 2 -> 4 -> 2 channels), a depthwise one and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.grouped = nn.Conv2d(8, 16, 3, padding=1, groups=4)
        self.up = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.head = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        h = nn.functional.relu(self.grouped(nn.functional.relu(self.stem(x))))
        h = self.depthwise(nn.functional.relu(self.up(h)))
        return nn.functional.cross_entropy(self.head(h.mean((2, 3))), labels)


def test_grouped_convolutions_split_by_whole_groups():
    """Grouped, transposed grouped and depthwise convolutions reading channels split by
    the stem train as eager at tp=2: each rank convolves the whole groups it holds
    (`groups` its own share), rather than summing its channels as a dense
    convolution's contraction (which added one group's channels into another's: losses
    4.9e-3 off eager on `grouped_convs`). The transposed one is `rdu.conv`'s
    transposed form, a group a rank (tconv23; before, a direct convolution of
    its spread input). Fewer groups than ranks (computed whole): lit
    rdu-partition-grouped-conv.mlir, rdu-partition-grouped-conv-transposed.mlir."""
    tp = 2
    torch.manual_seed(0)
    model = GroupedConvs()
    batches = [(torch.randn(2, 3, 6, 6), torch.randint(0, 5, (2,))) for _ in range(2)]
    eager = copy.deepcopy(model)
    program = compile_training(model, batches[0], optimizer="sgd", target="sn40l-8", tp=tp, lr=0.1, momentum=0.9)
    assert_sgd_steps_match(program, eager, batches, lr=0.1, momentum=0.9)
    ranks = {(op.input.type.get_shape()[1], op.groups.value.data) for op in program.module.walk()
             if isinstance(op, ConvOp)}
    assert (8 // tp, 4 // tp) in ranks, ranks  # the 4-group convolution's forward: its groups a rank
    transposed = {(tuple(op.weight.type.get_shape()), op.groups.value.data) for op in program.module.walk()
                  if isinstance(op, ConvOp) and op.transposed}
    assert ((16 // tp, 4, 3, 3), 1) in transposed, transposed  # the 2-group transposed one: a group a rank


class SkipProjection(nn.Module):
    """A layer whose output width changes (64 -> `out`), its residual a bias-free skip
    projection added to the MLP's output, and a position table whose shape is the
    one-hot's by coincidence (16 positions x 64 features; 16 tokens x 64 words)."""

    def __init__(self, out: int = 48) -> None:
        super().__init__()
        self.embed, self.pos = nn.Embedding(VOCAB, 64), nn.Embedding(16, 64)
        self.up, self.down = nn.Linear(64, 32), nn.Linear(32, out)
        self.skip = nn.Linear(64, out, bias=False)
        self.head = nn.Linear(out, VOCAB, bias=False)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids) + self.pos(torch.arange(ids.shape[1]))
        y = self.skip(x) + self.down(nn.functional.gelu(self.up(x)))
        return nn.functional.cross_entropy(self.head(y).flatten(0, 1), labels.flatten())


def test_skip_projection_and_weight_shaped_one_hot_stay_split():
    """At tp=2 the skip projection, split by output columns, is gathered where it meets
    the MLP's whole output, so its gradient arrives whole: each rank cuts its part of
    that gradient for the input gradient and the update rather than gather the weight
    (`_cuts_beside_weight`), and the update keeps the weight split. The cross
    entropy's one-hot, shaped as the whole position table, is no gradient of it
    (`_updates_weights`) and is scattered split by vocabulary (before: the logits'
    gradient and the head were gathered). What is gathered: the skip's output and
    the cross entropy's maxima."""
    torch.manual_seed(0)
    program = _train_as_eager(SkipProjection(), 2)
    assert sorted(_gathered(program)) == [(2, 8, 24), (16, 1)], _gathered(program)


def test_narrow_skip_projection_gathers_its_weight_where_that_is_cheaper():
    """A skip projection into 8 features beside 16 tokens: the input gradient's
    all-reduce (16 x 64) would cost more than gathering the weight's half (4 x 64) and
    running the product whole (sn40l's link and HBM figures, `_whole_is_cheaper`), so
    the weight is gathered for it; its update still cuts the whole gradient, so the
    weight stays split (before: the gradient was always cut beside the split weight)."""
    torch.manual_seed(0)
    program = _train_as_eager(SkipProjection(out=8), 2)
    assert sorted(_gathered(program)) == [(2, 8, 4), (4, 64), (16, 1)], _gathered(program)


class GramProjection(nn.Module):
    """Tokens projected by the Gram matrix of a trained factor, `F @ F.mT` (a learned
    covariance, as held-out round 11's `cholesky_whitening` builds one): one parameter
    read as both operands of one product."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.head = nn.Embedding(VOCAB, 8), nn.Linear(8, VOCAB)
        self.factor = nn.Parameter(torch.eye(8) + 0.2 * torch.randn(8, 8))

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        y = self.embed(ids) @ (self.factor @ self.factor.mT)
        return nn.functional.cross_entropy(self.head(y).flatten(0, 1), labels.flatten())


def test_parameter_read_as_both_operands_of_one_product():
    """At tp=2 the Gram product's plan wants its rhs split by columns and its lhs whole:
    the factor is not split in place for the rhs (that split the lhs read with it: the
    step's IR did not verify, "'rdu.matmul' result shape [8, 4] should be [4, 4]"), the
    product runs whole and the step trains as eager does (lit rdu-partition-gram.mlir)."""
    torch.manual_seed(0)
    _train_as_eager(GramProjection(), 2)


class PooledDepthwise(nn.Module):
    """A depthwise 7x7 convolution of the image (replicated at tp, no gradient
    wanted), pooled over space into a linear head: its channels meet only as the
    head's [batch, classes] sums."""

    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.head = nn.Linear(channels, 5)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.head(nn.functional.gelu(self.depthwise(x)).mean((2, 3))), labels)


@pytest.mark.parametrize("opt_level", [0, 2], ids=["O0", "O2"])
def test_depthwise_convolution_of_a_replicated_input_splits_by_groups_where_that_pays(opt_level: int) -> None:
    """A depthwise convolution of a replicated 2x8x128x128 image at tp=2 splits by whole
    groups (4 a rank; each rank cuts its channels of the image, its forward and weight
    gradient convolutions its groups alone): by sn40l's figures, running it and its
    weight gradient whole costs more than the all-reduce of the head's [2, 5] sums its
    split pays (`_split_groups`; before, every grouped convolution on a replicated
    input ran whole). The forward (-O2) and 2 SGD steps (-O0, -O2) equal eager's. A ConvNeXt block's
    (a layer norm over the channels right after it) stays whole (lit
    rdu-partition-grouped-conv-replicated.mlir), and so does one whose input is an
    activation of a training step, whose input gradient would be gathered (lit
    rdu-partition-conv-transposed.mlir's up3)."""
    torch.manual_seed(0)
    model = PooledDepthwise()
    batches = [(torch.randn(2, 8, 128, 128, generator=torch.Generator().manual_seed(seed)), torch.tensor([1, 3]))
               for seed in (1, 2)]
    compiled = []
    if opt_level == 2:  # the forward alone (its split pays the all-reduce alone); -O0's is the step's
        forward = rducc.compile(model, batches[0], target="sn40l-8", opt_level=opt_level,
                                passes=[after("rdu-canonicalize", RduPartition(tp=2))])
        with torch.no_grad():
            torch.testing.assert_close(torch.as_tensor(forward(*batches[0])), model(*batches[0]), rtol=1e-5,
                                       atol=1e-6)
        compiled.append(forward)
    eager = copy.deepcopy(model)
    program = rducc.compile_training(model, batches[0], optimizer="sgd", target="sn40l-8", tp=2, lr=0.1,
                                     momentum=0.9, opt_level=opt_level)
    assert_sgd_steps_match(program, eager, batches, lr=0.1, momentum=0.9)
    for made in (*compiled, program):
        groups = [op.groups.value.data for op in made.module.walk() if isinstance(op, ConvOp)]
        assert groups and set(groups) == {4}, groups  # 8 groups, 4 a rank (the weight gradient's too)
    assert not _gathered(program), _gathered(program)
