"""Errors raised while compiling a training step name the user's line (issue 27).

The joint graph's nodes, the backward's too, keep the stack trace of the
forward node they come from (AOT autograd's own record; rducc carries it
through torch's second trace of the joint graph, `locations.replay`), so a
refusal on a backward op names the model's line, not `<eval_with_key>`: through
`rducc.compile_training`, the torch.compile backend and (error_cases.py) the CLI.
A custom autograd.Function on the gradient path and a hook on a gradient,
which torch.export drops, are refused by name.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import rducc
from rducc.errors import RduccError

IDS, OFFSETS = torch.tensor([1, 2, 1, 3]), torch.tensor([0, 2])


class BagLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(10, 4, scale_grad_by_freq=True)

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.bag(ids, offsets).square().mean()


LINE = f"{__file__}:30:9: return self.bag(ids, offsets).square().mean()"


def test_compile_training_names_the_users_line_for_a_backward_op() -> None:
    with pytest.raises(RduccError) as error:
        rducc.compile_training(BagLoss(), (IDS, OFFSETS), optimizer=None, opt_level=0)
    message = str(error.value)
    assert message.startswith(f"{LINE}: nn.EmbeddingBag(scale_grad_by_freq=True) in training"), message[:300]


def test_torch_compile_backward_names_the_users_line() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(BagLoss(), backend="rducc", options={"opt_level": 0})
    loss = compiled(IDS, OFFSETS)
    with pytest.warns(UserWarning) as warned:  # AOT autograd compiles the backward at its first call
        loss.backward()  # refused by rducc: it runs in eager, with one warning naming the line
    messages = [str(w.message) for w in warned if str(w.message).startswith("rducc:")]
    assert len(messages) == 1 and f"({LINE}" in messages[0], messages
    torch._dynamo.reset()


class StraightThrough(torch.autograd.Function):
    """round, with the identity as its gradient (a straight-through estimator)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
        return torch.round(x)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:
        return grad


class Quantized(nn.Module):
    def __init__(self, detach: bool) -> None:
        super().__init__()
        self.fc, self.out, self.detach = nn.Linear(4, 4), nn.Linear(4, 1), detach

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x) * 3
        return self.out(StraightThrough.apply(h.detach() if self.detach else h)).square().mean()


def test_a_custom_autograd_function_on_the_gradient_path_is_refused_by_name() -> None:
    x = torch.randn(3, 4)
    with pytest.raises(RduccError, match=r"test_training_locations.py:\d+: return self.out\(StraightThrough.apply"
                                         r".*custom torch.autograd.Function StraightThrough \(defined at "):
        rducc.compile_training(Quantized(detach=False), (x,), optimizer=None, opt_level=0)
    loss, *gradients = rducc.compile_training(Quantized(detach=True), (x,), optimizer=None, opt_level=0).step(x)
    assert len(gradients) == 2  # out.weight and out.bias: fc gets none through the detached input


class Checkpointed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem, self.block, self.head = nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.GELU()), nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        return self.head(h + torch.utils.checkpoint.checkpoint(self.block, h, use_reentrant=True))


class CheckpointedInput(Checkpointed):
    """The reentrant checkpoint on the model's input, which requires no grad: its result has no grad_fn."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=True) + self.stem(x))


@pytest.mark.parametrize("model", [Checkpointed, CheckpointedInput])
def test_a_reentrant_checkpoint_is_refused_naming_the_form_that_trains(model: type[nn.Module]) -> None:
    x, y = torch.randn(3, 4), torch.tensor([0, 1, 1])
    with pytest.raises(RduccError, match=r"test_training_locations.py:\d+: return self.head.*torch.utils.checkpoint "
                                         r"with use_reentrant=True.*give use_reentrant=False"):
        rducc.compile_training(model(), (x, y), optimizer=None, loss_fn=nn.functional.cross_entropy,
                               opt_level=0)


class Hooked(nn.Module):
    """A Linear stack whose gradients a hook clamps, in the form `kind` names."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.stem, self.head, self.kind = nn.Linear(4, 4), nn.Linear(4, 2), kind
        if kind == "parameter":
            self.stem.weight.register_hook(lambda grad: grad.clamp(-1e-3, 1e-3))
        elif kind == "post_accumulate":
            self.stem.bias.register_post_accumulate_grad_hook(lambda parameter: None)
        elif kind == "module":
            self.head.register_full_backward_hook(lambda module, grad_in, grad_out: (grad_in[0] * 0.5,))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.stem(x))
        if self.kind == "forward":
            h.register_hook(lambda grad: grad.clamp(-1e-3, 1e-3))
        return self.head(h)


@pytest.mark.parametrize(("kind", "named"), [
    ("parameter", r"parameter 'stem.weight' has a gradient hook \(Tensor.register_hook\): .*<lambda> \(defined at "),
    ("post_accumulate", r"parameter 'stem.bias' has a post-accumulate-grad hook"),
    ("module", r"module 'head' has a full backward hook"),
    ("forward", r"test_training_locations.py:\d+: h.register_hook\(lambda grad.*hook on a tensor's gradient")])
def test_a_gradient_hook_is_refused_by_name_not_dropped(kind: str, named: str) -> None:
    """torch.export drops every gradient hook: without the refusal the step trained without it (eager clamps)."""
    x, y = torch.randn(3, 4), torch.tensor([0, 1, 1])
    with pytest.raises(RduccError, match=named + r".*compile_training\(max_grad_norm=...\)"):
        rducc.compile_training(Hooked(kind), (x, y), optimizer=None, loss_fn=nn.functional.cross_entropy,
                               opt_level=0)
