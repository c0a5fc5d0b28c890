"""Layer periods: decoders whose layers repeat with a period of several layers
(alternating attention kinds, every k-th layer different) compile to one outlined
group per period whose calls run as one kernel loop, model no more time than
the uniform stack (2%), and run as eager does, whatever number of kernels the
fuser cuts a period into (a target with few units: one callee of several kernels,
its calls one loop). A stack whose widths change is no period."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from xdsl.dialects.builtin import ModuleOp

import rducc
from rducc.dialects.contracts import calls_of, is_outlined
from rducc.dialects.program import functions
from rducc.dialects.tier import ComputeOp
from rducc.model.configuration import configuration_of
from rducc.model.cost_model import Report, estimate
from rducc.model.switching import switch_time
from rducc.targets import load_target

WIDTH = 16
FEW_UNITS = 'inherits = "sn40l"\nname = "few-units"\npcus = 80\npmus = 80\n'
"""A target whose fuser makes one of these layers a kernel, but not a period of three."""


class Block(nn.Module):
    """A pre-norm residual layer: attention over the tokens, then an MLP. Kind `g`
    (global) attends to every token; `s` (sliding) only to the previous two; `n`
    leaves out the rotation of the queries and keys (no rotary)."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH, bias=False)
        self.out = nn.Linear(WIDTH, WIDTH, bias=False)
        self.up = nn.Linear(WIDTH, 2 * WIDTH, bias=False)
        self.down = nn.Linear(2 * WIDTH, WIDTH, bias=False)

    def forward(self, x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(nn.functional.rms_norm(x, (WIDTH,))).chunk(3, dim=-1)
        if self.kind != "n":
            q, k = (t * torch.cos(angle) + t.flip(-1) * torch.sin(angle) for t in (q, k))
        scores = q @ k.transpose(-1, -2) / WIDTH**0.5
        tokens = scores.shape[-1]
        position = torch.arange(tokens)
        allowed = position[None, :] <= position[:, None]
        if self.kind == "s":
            allowed = allowed & (position[:, None] - position[None, :] < 2)
        x = x + self.out(scores.masked_fill(~allowed, float("-inf")).softmax(-1) @ v)
        return x + self.down(nn.functional.silu(self.up(nn.functional.rms_norm(x, (WIDTH,)))))


class Stack(nn.Module):
    """Layers (`layer`: `Block` unless named) of the kinds `pattern` names, in order."""

    def __init__(self, pattern: str, layer: type[nn.Module] | None = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList((layer or Block)(kind) for kind in pattern)

    def forward(self, x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, angle)
        return x


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    return torch.randn(1, 6, WIDTH), torch.randn(6, WIDTH)


def _compiled(model: nn.Module, target: str | Path = "sn40l"):
    model.eval()
    inputs = _inputs()
    program = rducc.compile(torch.export.export(model, inputs), target=str(target))
    return program, estimate(program.module, load_target(str(target))), inputs


def _assert_eager(program, model: nn.Module, inputs) -> None:
    with torch.no_grad():
        expected = model(*inputs)
    np.testing.assert_allclose(np.asarray(program(*inputs)), expected.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("period", ["sg", "sssn"])
def test_a_period_is_one_looped_group(period: str) -> None:
    """Periods 2 (sliding / global) and 4 (no rotary every 4th layer; period 3 is
    the next test's and rdu-outline-layers-periods.mlir's), two periods each: one
    callee, called once a period, its calls one loop, modeled no slower than the
    uniform stack of as many layers (2%; at these widths a period of layers in one
    kernel pays fewer loop iterations, so it may be faster)."""
    torch.manual_seed(0)
    model = Stack(period * 2)
    program, report, inputs = _compiled(model)
    assert [calls_of(f) for f in functions(program.module) if is_outlined(f)] == [2]
    assert [(loop.calls, loop.looped) for loop in report.loops] == [(2, True)]
    torch.manual_seed(0)
    uniform = _compiled(Stack("g" * len(period) * 2))[1]
    assert report.modeled_time_s <= uniform.modeled_time_s * 1.02
    _assert_eager(program, model, inputs)


def test_a_period_the_fuser_cuts_is_one_looped_group(tmp_path: Path) -> None:
    """Where a period of three layers is several kernels (80 PCUs and PMUs) and one
    layer is one: the period is still one callee, called once a period, and its
    calls are one loop whose body is its kernels (not a callee per distinct layer
    looping in runs)."""
    target = tmp_path / "few-units.toml"
    target.write_text(FEW_UNITS)
    torch.manual_seed(0)
    model = Stack("ssg" * 2)
    program, report, inputs = _compiled(model, target)
    assert [calls_of(f) for f in functions(program.module) if is_outlined(f)] == [2]
    [loop] = report.loops
    assert (loop.calls, loop.looped) == (2, True)
    assert loop.kernels > 1
    _assert_eager(program, model, inputs)


class Widening(nn.Module):
    """A stack whose widths change: no two neighbouring layers alike but the middle."""

    def __init__(self) -> None:
        super().__init__()
        widths = (WIDTH, 32, 32, 32, 8, WIDTH)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))

    def forward(self, x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x + angle


def test_widths_that_change_are_no_period() -> None:
    """Only the layers of equal widths share a callee (the two 32 -> 32 ones)."""
    model = Widening()
    program, _, inputs = _compiled(model)
    assert [calls_of(f) for f in functions(program.module) if is_outlined(f)] == [2]
    _assert_eager(program, model, inputs)



ONE_LAYER = 'inherits = "sn40l"\nname = "one-layer-sram"\nsram_bytes = 2048\npmu_bytes = 128\npmus = 16\n'
"""A target whose SRAM holds one `Dense` layer's kernel whole, not two: a layer is one kernel."""


class Dense(nn.Module):
    """A residual layer `x + act(W x)`: kind `r` ReLU, `g` GELU."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.fc = nn.Linear(WIDTH, WIDTH, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return x + (torch.relu(y) if self.kind == "r" else nn.functional.gelu(y))


class DenseStack(nn.Module):
    def __init__(self, pattern: str) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Dense(kind) for kind in pattern)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


KINDS_APART = ONE_LAYER.replace('"one-layer-sram"', '"kinds-apart"').replace("pmus = 16", "pmus = 12")
"""A target whose 12 PMUs hold one `Dense` layer's kernel, not a ReLU and a GELU layer's at once (13)."""


def test_a_period_that_repeats_a_layer_loads_each_configuration_once(tmp_path: Path) -> None:
    """Exaone4's and SmolLM3's form: a period of four layers, the first three alike (a
    sliding-window or rotary layer), the fourth not, each layer one kernel, where the
    units do not hold both kinds at once. The period's loop body is the four kernels;
    the three alike are one configuration, so a later iteration loads two (into the
    fourth's, and back across the loop's edge), as runs of the repeated layer would,
    not four, and the report says why the two are not held as one. The loop is
    faster than the same layers called one by one, and runs as eager does."""
    target = tmp_path / "kinds-apart.toml"
    target.write_text(KINDS_APART)
    unlooped_target = tmp_path / "kinds-apart-no-loop.toml"
    no_loop = KINDS_APART.replace('"kinds-apart"', '"kinds-apart-no-loop"') + "kernel_looping = false\n"
    unlooped_target.write_text(no_loop)
    torch.manual_seed(0)
    model = DenseStack("rrrg" * 2).eval()
    x = torch.randn(4, WIDTH)
    program = rducc.compile(torch.export.export(model, (x,)), target=str(target))
    report = program.report
    [loop] = report.loops
    assert (loop.calls, loop.kernels, loop.looped) == (2, 4, True)
    assert (loop.reloads, loop.shared) == (2, 0)
    assert "its 2 configurations need 3 PCUs and 13 PMUs at once" in loop.not_shared
    looped = [k for k in report.kernels if k.looped]
    assert [k.reconfigure_s > 0 for k in looped] == [True, False, False, True]
    assert switch_time(program.module, load_target(str(target))).loads == _cost_model_loads(program.module, report) == 2
    unlooped = estimate(program.module, load_target(str(unlooped_target)))
    assert report.modeled_time_s < unlooped.modeled_time_s
    np.testing.assert_allclose(np.asarray(program(x)), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def _cost_model_loads(module: ModuleOp, report: Report) -> int:
    """The configurations the cost model's report has the program load: its kernels'
    distinct ones, a loop body it holds as one (`KernelLoop.shared` of them) once."""
    distinct = {configuration_of(op) for op in module.walk() if isinstance(op, ComputeOp)}
    return len(distinct) - sum(loop.shared - 1 for loop in report.loops if loop.shared)


@pytest.mark.parametrize(("stack", "period"), [("rg" * 3, 2), ("rrrg" * 2, 4)])
def test_a_period_of_two_kinds_is_one_configuration_kept_loaded(tmp_path: Path, stack: str, period: int) -> None:
    """A period of two layer kinds (ReLU and GELU layers alternating, or three of one
    and a fourth), each layer one kernel, on units that hold both kinds at once (16
    PMUs): the loop body's two configurations are one (shared_configuration.py), so
    no iteration loads one and the loop is launched once, as a stack of one kind is:
    one launch a step, and the time of that stack within 5%. The same numbers as eager."""
    target = tmp_path / "one-layer-sram.toml"
    target.write_text(ONE_LAYER)
    x = torch.randn(4, WIDTH)
    torch.manual_seed(0)
    model = DenseStack(stack).eval()
    program = rducc.compile(torch.export.export(model, (x,)), target=str(target))
    report = program.report
    [loop] = report.loops
    assert (loop.looped, loop.kernels, loop.reloads, loop.shared, loop.not_shared) == (True, period, 0, 2, "")
    assert report.kernel_launches == 1
    assert not any(k.reconfigure_s for k in report.kernels)
    # a switch to it loads the one configuration the loop holds, not its two kinds; none
    # after itself (the units hold that configuration)
    units = load_target(str(target))
    assert switch_time(program.module, units).loads == _cost_model_loads(program.module, report) == 1
    assert switch_time(program.module, units, after=program.module).loads == 0
    uniform = rducc.compile(torch.export.export(DenseStack("r" * len(stack)).eval(), (x,)),
                            target=str(target)).report
    assert uniform.kernel_launches == 1
    assert abs(report.modeled_time_s / uniform.modeled_time_s - 1) <= 0.05
    np.testing.assert_allclose(np.asarray(program(x)), model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


POST_NORM_PCUS = 'inherits = "sn40l"\nname = "post-norm-pcus"\npcus = 18\npmus = 16\n\n[fabric]\nrows = 4\ncols = 10\n'
"""A target whose 18 PCUs hold one `PostNorm` layer's kernel, not a layer and the next one's first matmul."""


class PostNorm(nn.Module):
    """Exaone4's form of a layer: each half's output normed after its matmul, then
    added (`x + norm(f(x))`), and a table made inside the layer from an input every
    layer reads (`angle.unsqueeze(0)`, which CSE leaves a period's first layer to
    make for all). Kind `r` ReLU, `g` GELU."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.fc = nn.Linear(WIDTH, WIDTH, bias=False)
        self.fc2 = nn.Linear(WIDTH, WIDTH, bias=False)

    def forward(self, x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
        y = self.fc(x + angle.unsqueeze(0))
        x = x + nn.functional.rms_norm(torch.relu(y) if self.kind == "r" else nn.functional.gelu(y), (WIDTH,))
        return x + nn.functional.rms_norm(self.fc2(x), (WIDTH,))


def test_a_post_norm_period_is_kernels_alike_each_its_layer(tmp_path: Path) -> None:
    """Exaone4's period (three alike and a fourth) where a layer is one kernel: -O1
    starts each group with the norm after the previous layer's last matmul, so the
    kernels were shifted ([layer 0 but its norm], [that norm, layer 1 but its norm],
    ..., 5 of them, each its own configuration) and the table shared from the first.
    Each kernel now closes after its own layer's norm and residual add (fewer bytes
    cross there) and makes its own table: 4 kernels, the three alike one
    configuration, 2 loads an iteration (was 5). The same numbers as eager."""
    target = tmp_path / "post-norm-pcus.toml"
    target.write_text(POST_NORM_PCUS)
    torch.manual_seed(0)
    model = Stack("rrrg" * 2, PostNorm).eval()
    inputs = (torch.randn(4, WIDTH), torch.randn(WIDTH))
    program = rducc.compile(torch.export.export(model, inputs), target=str(target))
    [loop] = program.report.loops
    assert (loop.calls, loop.kernels, loop.looped, loop.reloads) == (2, 4, True, 2)
    [layer] = [f for f in functions(program.module) if is_outlined(f)]
    first, *others = [configuration_of(op) for op in layer.walk() if isinstance(op, ComputeOp)]
    assert others[:2] == [first, first] and others[2] != first
    _assert_eager(program, model, inputs)
