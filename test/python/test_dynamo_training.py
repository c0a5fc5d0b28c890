"""Training through the torch.compile backend (issue 27, item 5; issue 32,
newcomer item 1): a graph that needs grad goes through AOT autograd, its
forward and backward graphs each compiled by rducc, and `loss.backward()`
gives eager's gradients (an MLP, a CNN with batch norm in training mode, a
tiny transformer from transformers). A graph rducc cannot compile for
training runs in eager with one warning; `dynamic=True` compiles each shape."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from rducc.tools import dynamo


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _train_step(model: nn.Module, inputs: tuple, loss_of, options: dict | None = None) -> tuple[nn.Module, nn.Module]:
    """One forward and backward, compiled by rducc and in eager, on copies of `model`."""
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="rducc", options=options)
    loss = loss_of(compiled(*inputs))
    loss.backward()
    expected = loss_of(eager(*inputs))
    expected.backward()
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-6)
    return model, eager


def _assert_same_gradients(model: nn.Module, eager: nn.Module, rtol: float = 1e-4, atol: float = 1e-6) -> None:
    for (name, got), want in zip(model.named_parameters(), eager.parameters()):
        assert (got.grad is None) == (want.grad is None), name
        if want.grad is not None:
            torch.testing.assert_close(got.grad, want.grad, rtol=rtol, atol=atol, msg=name)


def test_mlp_gradients_equal_eager_and_both_graphs_run_in_rducc():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    x = torch.randn(5, 8, requires_grad=True)
    x_eager = x.detach().clone().requires_grad_()
    compiled = torch.compile(model, backend="rducc", options={"opt_level": 0})
    eager = copy.deepcopy(model)
    compiled(x).pow(2).mean().backward()
    eager(x_eager).pow(2).mean().backward()
    _assert_same_gradients(model, eager)
    torch.testing.assert_close(x.grad, x_eager.grad, rtol=1e-4, atol=1e-7)
    forward, backward = dynamo.TRAINING_PARTS
    assert len(forward) == len(backward) == 1, "one rducc program for each of the forward and backward graphs"
    [backward_program] = backward.values()
    assert "tier.compute" in backward_program.mlir


class CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=2, bias=False)
        self.fc = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        h = F.avg_pool2d(F.silu(self.conv2(h)), 3, 1, 1, count_include_pad=False)
        return self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1))


def test_cnn_with_batch_norm_in_training_mode():
    torch.manual_seed(1)
    model, eager = _train_step(CNN().train(), (torch.randn(2, 3, 16, 16),),
                               lambda y: F.cross_entropy(y, torch.tensor([1, 4])))
    _assert_same_gradients(model, eager, atol=1e-6)
    torch.testing.assert_close(model.bn.running_mean, eager.bn.running_mean)
    torch.testing.assert_close(model.bn.running_var, eager.bn.running_var)
    assert int(model.bn.num_batches_tracked) == 1


def test_bf16_layer_norm_gradients_are_eagers_kernels():
    """A bfloat16 Linear + LayerNorm: the weight and bias gradients of the layer norm are its fused kernel's
    (`LAYER_NORM_AS_EAGER`, kept whole through AOT autograd), bit for bit; decomposed, 6 to 10 of the 16
    were a bf16 rounding off."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), nn.LayerNorm(16)).bfloat16()
    x = torch.randn(6, 16, generator=torch.Generator().manual_seed(1)).bfloat16()
    weights = torch.randn(6, 16, generator=torch.Generator().manual_seed(2))
    model, eager = _train_step(model, (x,), lambda y: (y.float() * weights).sum(), {"opt_level": 0})
    _assert_same_gradients(model, eager, rtol=0, atol=0)


class _AppliedThrice(nn.Module):
    """One Linear applied three times (held-out round 13's `adaptive_depth`) after a LayerNorm whose input
    is bf16 under autocast and whose weight and bias stay float32 (the CPU kernel's mixed-type path), after
    a causal self-attention (`scaled_dot_product_attention`, 2 heads of 3 over the 5 rows)."""

    def __init__(self) -> None:
        super().__init__()
        self.inp, self.layer, self.norm, self.head = nn.Linear(6, 6), nn.Linear(6, 6), nn.LayerNorm(6), nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        heads = h.view(1, 5, 2, 3).transpose(1, 2)
        h = h + F.scaled_dot_product_attention(heads, heads, heads, is_causal=True).transpose(1, 2).reshape(5, 6)
        for _ in range(3):
            h = h + torch.tanh(self.layer(self.norm(h)))
        return self.head(h)


def test_bf16_autocast_gradients_are_eager_autocasts():
    """Under an autocast the user enters around the compiled call, gradients equal eager autocast's bit for
    bit. Eager casts the shared weight once (its cache) and sums the three uses' gradients in bf16; AOT
    autograd traces with the cache off, so the backend writes the cache into Dynamo's graph first
    (`shared_autocast_casts_in_graph`; without it `layer.weight` is a bf16 rounding off). The mixed-type
    layer norm's float32 statistics are recomputed in the backward program (`saved_statistics`; saved
    between the two programs in torch's declared bf16, `norm.weight` and `inp.weight` were off). Attention is
    traced as the joint graph traces it (`attention_as_eager`; as AOT's flash-attention op, `inp.weight` off)."""
    torch.manual_seed(0)
    model, x, labels = _AppliedThrice(), torch.randn(5, 6), torch.tensor([0, 1, 2, 0, 1])

    def loss_of(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), labels)

    with torch.autocast("cpu", torch.bfloat16):
        model, eager = _train_step(model, (x,), loss_of, {"opt_level": 0})
    _assert_same_gradients(model, eager, rtol=0, atol=0)


def test_tiny_transformer_from_transformers():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(2)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    model = LlamaForCausalLM(config).train()
    ids = torch.randint(0, 64, (2, 6))

    def loss_of(output):
        return output.loss

    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="rducc")
    loss = loss_of(compiled(input_ids=ids, labels=ids))
    loss.backward()
    expected = loss_of(eager(input_ids=ids, labels=ids))
    expected.backward()
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-6)
    _assert_same_gradients(model, eager, rtol=1e-4, atol=1e-6)


def test_a_graph_rducc_cannot_train_falls_back_to_eager_with_one_warning():
    torch.manual_seed(3)
    model = nn.Linear(4, 2).double()  # float64 refused by the option below
    x = torch.randn(3, 4, dtype=torch.float64)
    compiled = torch.compile(model, backend="rducc", options={"f64": "refuse"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(x).sum().backward()
    ours = [w for w in caught if "rducc:" in str(w.message)]
    assert len(ours) == 1 and "runs in eager" in str(ours[0].message) and "float64" in str(ours[0].message)
    torch.testing.assert_close(model.weight.grad, x.sum(0).expand(2, 4))


def test_dynamic_true_compiles_each_shape_statically():
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(8, 4), nn.Tanh()).eval()
    compiled = torch.compile(model, backend="rducc", dynamic=True)
    with torch.no_grad():
        for rows in (2, 5, 3):
            x = torch.randn(rows, 8)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)


def test_dropout_mask_reaches_the_backward_and_a_new_shape_compiles_at_its_first_call():
    """The forward program draws the mask, the backward program reads it: the
    gradient is the kept inputs scaled by 1 / (1 - p). The second and third
    shapes come as graphs with symbolic sizes, compiled when first called."""
    torch.manual_seed(5)

    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(64))
            self.dropout = nn.Dropout(0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.dropout(x * self.weight)

    model = Scaled().train()
    compiled = torch.compile(model, backend="rducc")
    for rows in (8, 16, 12):
        x = torch.randn(rows, 64)
        y = compiled(x)
        y.sum().backward()
        kept = y != 0
        assert 0.3 < kept.float().mean() < 0.7
        torch.testing.assert_close(model.weight.grad, (x * kept / 0.5).sum(0), rtol=1e-5, atol=1e-5)
        model.weight.grad = None


class _FrozenWithBreaks(nn.Module):
    """A frozen first layer and two graph breaks (a print, a branch on a value)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(8, 16).requires_grad_(False)
        self.body = nn.Linear(16, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.body(self.embed(x)))
        print("", end="")
        if hidden.sum() > 0:
            hidden = hidden * 2
        return self.head(hidden)


def test_frozen_layer_and_graph_breaks_train_in_rducc_with_eager_gradients():
    torch.manual_seed(6)
    x, labels = torch.randn(4, 8), torch.tensor([0, 1, 2, 3])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, eager = _train_step(_FrozenWithBreaks(), (x,), lambda out: F.cross_entropy(out, labels),
                                   {"opt_level": 0})
    assert not [w for w in caught if "rducc:" in str(w.message)], "every graph trained in rducc"
    assert len(dynamo.TRAINING_PARTS) >= 3, "the last graph's forward and backward, and the first's backward"
    assert model.embed.weight.grad is None
    _assert_same_gradients(model, eager)


class _WideBackward(torch.autograd.Function):
    """tanh whose backward computes in float64, which `options={"f64": "refuse"}` refuses:
    a backward graph rducc cannot compile under a forward it can."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.tanh(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return (grad.double() * (1 - torch.tanh(x.double()) ** 2)).float()


class _RefusedBackward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner, self.head = nn.Linear(6, 8), nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(_WideBackward.apply(self.inner(x)))


def _train_refused_backward(steps: int) -> tuple[nn.Module, nn.Module, list[warnings.WarningMessage]]:
    """`steps` SGD steps through torch.compile (float64 refused) and in eager on the same batches."""
    torch.manual_seed(7)
    model = _RefusedBackward()
    eager = copy.deepcopy(model)
    compiled = torch.compile(model, backend="rducc", options={"f64": "refuse", "opt_level": 0})
    ours, theirs = (torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (model, eager))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(steps):
            x, labels = torch.randn(4, 6), torch.tensor([0, 1, 2, step % 3])
            for run, optimizer in ((compiled, ours), (eager, theirs)):
                optimizer.zero_grad()
                F.cross_entropy(run(x), labels).backward()
                optimizer.step()
    return model, eager, [w for w in caught if "rducc:" in str(w.message)]


def test_a_backward_rducc_refuses_runs_in_eager_and_training_matches_eager():
    """The refusal comes at the first `loss.backward()` (AOT autograd compiles the
    backward lazily): that backward graph runs in eager, the forward in rducc."""
    model, eager, _ = _train_refused_backward(steps=3)
    forward, backward = dynamo.TRAINING_PARTS
    assert len(forward) == 1 and not backward, "the forward compiled by rducc, the backward left to eager"
    for (name, got), want in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=name)


def test_a_refused_backward_warns_once_naming_why():
    _, _, ours = _train_refused_backward(steps=2)
    assert len(ours) == 1, [str(w.message) for w in ours]
    message = str(ours[0].message)
    assert "backward graph" in message and "runs in eager" in message and "float64" in message
    assert "test_dynamo_training.py" in message, "the reason names the user's line"
