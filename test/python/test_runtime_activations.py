"""An activation a map body spells out op by op runs as torch's one-pass kernel,
alone or as a part of a larger body (issue 32, `rducc.runtime.activations`).

Mixtral's experts compute `act(gate) * up`: one map whose body is SiLU's
decomposition (the gate read as two body arguments) times `up`. Eager runs
torch's SiLU kernel and one product; the runtime ran six passes (negation,
exp, add, divide, two products), with `torch.exp`'s bits, not SiLU's. Now the
part of the body that reads the gate alone is torch's kernel: eager's bits,
two passes. A kernel that does not keep the formula's values where the input
is not finite (exact GELU with AVX-512) is used with a finiteness check, in a
part as in a whole body; one that does (this CPU's SiLU, its GELU with AVX2) needs
no check, so no pass over the result.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import rducc
from rducc.runtime import activations, elementwise, map_body


class Model(nn.Module):
    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.fn(*args)


class GatedLinear(nn.Module):
    """`form(gate, up)` of two products of one input, as an MLP's experts."""

    def __init__(self, form) -> None:
        super().__init__()
        torch.manual_seed(32)
        self.gate, self.up, self.form = nn.Linear(32, 64), nn.Linear(32, 64), form

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.form(self.gate(x), self.up(x))


FORMS = {
    "silu(gate) * up": lambda g, u: F.silu(g) * u,
    "up * gate * sigmoid(gate)": lambda g, u: u * g * torch.sigmoid(g),
    "gelu(gate) * up + gate": lambda g, u: F.gelu(g) * u + g,
}
"""Bodies with an activation of one input inside: Mixtral's, a hand-written
SiLU (a sigmoid part), GELU with a residual."""


X = torch.randn(16, 32, generator=torch.Generator().manual_seed(32)) * 4


@pytest.fixture(scope="module")
def compiled() -> dict[str, tuple[nn.Module, rducc.Program]]:
    """Each form's model and program, compiled once."""
    found = {}
    with torch.no_grad():
        for form, fn in FORMS.items():
            model = GatedLinear(fn).eval()
            found[form] = model, rducc.compile(torch.export.export(model, (X,)), opt_level=2)
    return found


def _map_sources(program: rducc.Program) -> str:
    return "\n".join(map_body.compile_map(op).source for op in program.module.walk() if op.name == "rdu.map")


@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_activation_inside_a_map_is_torchs_kernel(form: str, compiled) -> None:
    model, program = compiled[form]
    source = _map_sources(program)
    assert "_tk." in source or "_tkg" in source, source  # _tkg: guarded where this CPU's kernel is off at inf
    with torch.no_grad():
        assert torch.equal(program(X), model(X)), "not eager's bits"


def test_the_gate_read_twice_is_one_input(compiled) -> None:
    """Mixtral's map: the gate as two body arguments, SiLU's kernel on one of them."""
    source = _map_sources(compiled["silu(gate) * up"][1])
    assert "_tk.silu(" in source and "_tm.exp" not in source, source


def _disagreeing(kernel):
    """torch's `kernel`, but nan at +inf (as AVX-512's exact GELU is)."""

    def run(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        result = kernel(x, out=out) if out is not None else kernel(x)
        result[x == math.inf] = math.nan
        return result

    return run


def test_a_kernel_that_changes_non_finite_values_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: SiLU and GELU kernels giving nan at +inf. A part of a body
    and a whole body keep a finiteness check: the formula's inf at +inf,
    eager's bits where the input is finite."""
    for name in ("silu", "gelu"):
        disagreeing = _disagreeing(activations.KERNELS[name])
        monkeypatch.setitem(activations.KERNELS, name, disagreeing)
        monkeypatch.setattr(activations.ON_ARRAYS, name, elementwise.torch_math(disagreeing))
    model = GatedLinear(FORMS["silu(gate) * up"]).eval()
    with torch.no_grad():
        part = rducc.compile(torch.export.export(model, (X,)), opt_level=2)
        source = _map_sources(part)
        assert "_tk.silu" not in source and "_tkg" in source and "_tm.exp" not in source, source
        assert torch.equal(part(X), model(X)), "not eager's bits where the input is finite"
        big = X.clone()
        big[0, 0] = math.inf  # the gate's products of this row are +-inf or nan
        got, gates = part(big), model.gate(big)
        formula = gates * torch.sigmoid(gates) * model.up(big)  # silu's formula, not the planted kernel
        assert torch.equal(torch.isinf(got) | torch.isnan(got), torch.isinf(formula) | torch.isnan(formula))
    x = torch.linspace(-6.0, 6.0, 64)
    x[[3, 17, 40]] = torch.tensor([math.inf, -math.inf, math.nan])
    program = rducc.compile(torch.export.export(Model(F.gelu), (x,)), opt_level=2)
    assert "does where x is not finite" in _map_sources(program)
    result = program(x)
    assert result[3].item() == math.inf and math.isnan(result[17].item()) and math.isnan(result[40].item())


@pytest.mark.parametrize("name", ["gelu", "sigmoid"])
def test_no_finiteness_pass_where_this_cpus_kernel_keeps_the_values(name: str) -> None:
    """A whole one-input body: the check (a sum over the result) is made only
    where this CPU's kernel differs from the body off the finite values."""
    fn = {"gelu": F.gelu, "sigmoid": torch.sigmoid}[name]
    x = torch.linspace(-6.0, 6.0, 64)
    program = rducc.compile(torch.export.export(Model(fn), (x,)), opt_level=2)
    (op,) = [op for op in program.module.walk() if op.name == "rdu.map"]
    source = map_body.compile_map(op).source
    op_by_op = map_body.compile_body(op.regions[0].block)
    guarded = "does where x is not finite" in source
    assert f"torch's {name} " in source
    assert guarded == (not activations.agrees_off_finite(name, op_by_op))


def test_agreement_off_finite_is_read_from_the_kernel() -> None:
    assert activations.agrees_off_finite("silu", lambda x: x / (1 + np.exp(-x)))
    assert not activations.agrees_off_finite("silu", lambda x: np.nan_to_num(x / (1 + np.exp(-x))))


def test_an_input_that_is_not_finite_takes_the_formula_where_the_kernel_gives_a_finite_value() -> None:
    """The guard looks at the input, not the result: a kernel giving a finite
    value at -inf (where `x * Phi(x)` is nan) is still patched."""
    x = np.array([1.0, -np.inf, 2.0], np.float32)
    result = np.array([0.5, 0.0, 1.5], np.float32)  # the kernel's values, finite at -inf
    with np.errstate(all="ignore"):
        activations.patch_off_finite(result, x, lambda v: v * np.float32(0.0))
    assert result[0] == 0.5 and np.isnan(result[1]) and result[2] == 1.5
