"""ATen pointwise ops without a converter, imported generically as `rdu.pointwise_call`
inside `rdu.map` bodies (rducc.dialects.rdu.pointwise, frontend/aten_pointwise.py) and run
by torch's CPU kernel: against eager at -O0 and -O2 (f32, f16, bf16), fused with
their neighbours, refused forms, the runtime's guards and the cost model's count.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects import math as xmath
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import rducc
from rducc.dialects.rdu.aten import AtenOpAttr
from rducc.dialects.rdu.dataflow import Dataflow, MapOp
from rducc.dialects.rdu.pointwise import ASSUMED_ALU_OPS, PointwiseCallOp
from rducc.dialects.tier import ComputeOp
from rducc.errors import RduccError
from rducc.frontend.aten_pointwise import check_pointwise
from rducc.frontend.host_ops import constant_attribute
from rducc.runtime.host_calls import call_constants
from rducc.runtime.map_body import compile_map

Fn = Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]


def _positive(x: torch.Tensor) -> torch.Tensor:
    return x.abs() + 0.5


SPECIAL: dict[str, Fn] = {
    "lgamma": lambda x, y: torch.lgamma(x),
    "digamma": lambda x, y: torch.digamma(_positive(x)),
    "polygamma_1": lambda x, y: torch.polygamma(1, _positive(x)),
    "polygamma_3": lambda x, y: torch.special.polygamma(3, _positive(x)),
    "mvlgamma": lambda x, y: torch.mvlgamma(x.abs() + 2, 3),
    "i0": lambda x, y: torch.i0(x),
    "zeta": lambda x, y: torch.special.zeta(x.abs() + 1.5, _positive(y)),
    "zeta_scalar": lambda x, y: torch.special.zeta(x.abs() + 1.5, 2.0),
    "zeta_self_scalar": lambda x, y: torch.special.zeta(3.0, x.abs() + 1),
    "igamma_fill": lambda x, y: torch.igamma(_positive(x), torch.full_like(x, 2.0)),  # -O2: a constant in the body
    "igamma": lambda x, y: torch.igamma(_positive(x), _positive(y)),
    "nextafter": lambda x, y: torch.nextafter(x, y),
    "bessel_j0": lambda x, y: torch.special.bessel_j0(x),
    "bessel_y1": lambda x, y: torch.special.bessel_y1(_positive(x)),
    "modified_bessel_k1": lambda x, y: torch.special.modified_bessel_k1(_positive(x)),
    "chebyshev_t": lambda x, y: torch.special.chebyshev_polynomial_t(x, 3),
    "hermite_h": lambda x, y: torch.special.hermite_polynomial_h(x, y.abs().round()),
    "frexp": lambda x, y: torch.frexp(x),
}
"""Each special function on two [3, 5] inputs (the second broadcasts as [5] where it is used).
Few on purpose: the decomposition tries torch's own decomposition of each distinct op
that has one (one whole-program `run_decompositions` each); bench/op_sweep.py and
test_op_sweep.py run the others."""

HALF: dict[str, Fn] = {
    name: SPECIAL[name] for name in ("lgamma", "digamma", "polygamma_1", "i0", "igamma", "nextafter")
}
"""The ones torch's CPU build has f16 and bf16 kernels for."""


class Model(torch.nn.Module):
    """SPECIAL on the f32 pair of inputs, HALF on the f16 pair and on the bf16 pair:
    one program, so that it is exported and decomposed once."""

    def forward(self, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        results: list[torch.Tensor] = []
        for fns, (x, y) in zip((SPECIAL, HALF, HALF), zip(xs[::2], xs[1::2])):
            for fn in fns.values():
                out = fn(x, y)
                results.extend(out if isinstance(out, tuple) else (out,))
        return tuple(results)


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, generator=generator) * 2
    y = torch.randn(5, generator=generator) * 2
    return x.to(dtype), y.to(dtype)


@pytest.fixture(scope="module")
def exported() -> tuple[torch.export.ExportedProgram, tuple[torch.Tensor, ...]]:
    inputs = tuple(t for dtype in (torch.float32, torch.float16, torch.bfloat16) for t in _inputs(dtype))
    with torch.no_grad():
        return torch.export.export(Model(), inputs), inputs


@pytest.mark.parametrize("opt_level", [0, 2])
def test_special_functions_match_eager(exported, opt_level: int) -> None:
    program, inputs = exported
    got = rducc.compile(program, opt_level=opt_level)(*inputs)
    with torch.no_grad():
        want = Model()(*inputs)
    assert len(got) == len(want)
    for index, (actual, expected) in enumerate(zip(got, want)):
        assert actual.dtype == expected.dtype, index
        torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m, i=index: f"output {i}: {m}")
    assert {t.dtype for t in want} >= {torch.float32, torch.float16, torch.bfloat16}


class Erfc(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.erfc(x) * 2


def test_erfc_keeps_its_tail() -> None:
    """erfc is torch's own kernel (the generic import), not 1 - erf(x), which is 0 past x = 4 in f32."""
    x = torch.linspace(-3.0, 9.0, 49)
    got = rducc.compile(Erfc(), (x,))(x)
    assert got[-1] > 0
    torch.testing.assert_close(got, Erfc()(x), rtol=1e-6, atol=0.0)


def _ops(module: builtin.ModuleOp, kind: type) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def test_a_special_function_fuses_with_its_neighbours() -> None:
    """exp(lgamma(|x| + 1) * 2) - 1 at -O2: one kernel (`tier.compute` once placed),
    one map, one call in its body."""

    class Chain(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.exp(torch.lgamma(x.abs() + 1) * 2) - 1

    x = _inputs(torch.float32)[0]
    program = rducc.compile(torch.export.export(Chain(), (x,)), opt_level=2)
    assert len(_ops(program.module, ComputeOp)) == 1
    [fused] = _ops(program.module, MapOp)
    [call] = _ops(fused, PointwiseCallOp)
    assert call.callee.full_name == "aten::lgamma.default"
    assert fused.body_ops() == ASSUMED_ALU_OPS + 5  # abs, add, mul, exp, sub: one each
    torch.testing.assert_close(program(x), Chain()(x))


def test_the_cost_model_counts_the_assumed_alu_ops() -> None:
    [map_op] = _ops(_parse(_CALL.format(callee='"aten::lgamma.default"', type="f32")), MapOp)
    assert map_op.flops() == 2 * 8 * ASSUMED_ALU_OPS


# --------------------------------------------------------------------------
# The runtime
# --------------------------------------------------------------------------

_CALL = """
func.func @f(%x: tensor<2x8x{type}>) -> tensor<2x8x{type}> {{
  %y = rdu.map %x : (tensor<2x8x{type}>) -> tensor<2x8x{type}> {{
  ^bb0(%a: {type}):
    %r = rdu.pointwise_call #rdu.aten<{callee}> (%a) : ({type}) -> {type}
    rdu.yield %r : {type}
  }}
  func.return %y : tensor<2x8x{type}>
}}
"""


def _parse(text: str, verify: bool = True) -> builtin.ModuleOp:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, xmath.Math, Dataflow):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    if verify:
        module.verify()
    return module


def test_an_op_without_a_half_kernel_runs_in_f32() -> None:
    """torch's CPU build has no bf16 zeta; the runtime computes it in f32 and rounds once."""
    text = _CALL.format(callee='"aten::special_zeta.other_scalar", {other = 2.0 : f64}', type="bf16")
    [map_op] = _ops(_parse(text), MapOp)
    x = (torch.rand(2, 8) * 3 + 1.5).to(torch.bfloat16)
    bits = x.view(torch.int16).numpy()
    got = torch.from_numpy(np.asarray(compile_map(map_op)(bits.view(rducc.runtime.dtypes.BF16))).view(np.int16))
    expected = torch.special.zeta(x.float(), 2.0).to(torch.bfloat16)
    assert torch.equal(got.view(torch.bfloat16), expected)


def test_the_runtime_calls_nothing_but_pointwise_aten_ops() -> None:
    """An unverified module naming another op is refused when the map is compiled."""
    [map_op] = _ops(_parse(_CALL.format(callee='"aten::sort.default"', type="f32"), verify=False), MapOp)
    with pytest.raises(RduccError, match="'aten::sort.default': it is not tagged pointwise"):
        compile_map(map_op)


def test_the_verifier_refuses_other_namespaces() -> None:
    [call] = _ops(_parse(_CALL.format(callee='"builtins::eval.default"', type="f32"), verify=False), PointwiseCallOp)
    with pytest.raises(VerifyException, match="'builtins::eval.default': it is not an op of the aten namespace"):
        call.verify()


# --------------------------------------------------------------------------
# Refused forms
# --------------------------------------------------------------------------


def _node(target: object, *vals: torch.Tensor, out: object) -> torch.fx.Node:
    graph = torch.fx.Graph()
    args = []
    for index, val in enumerate(vals):
        placeholder = graph.placeholder(f"x{index}")
        placeholder.meta["val"] = val
        args.append(placeholder)
    node = graph.call_function(target, tuple(args))
    node.meta["val"] = out
    return node


def test_forms_the_generic_import_refuses() -> None:
    meta = torch.empty(3, device="meta")
    assert check_pointwise(_node(torch.ops.aten.lgamma.default, meta, out=meta)) is None
    complex_input = torch.empty(3, dtype=torch.complex64, device="meta")
    assert check_pointwise(_node(torch.ops.aten.lgamma.default, complex_input, out=meta)) == "complex argument 'self'"
    wrong_shape = torch.empty(4, device="meta")
    assert "broadcast shape" in str(check_pointwise(_node(torch.ops.aten.lgamma.default, meta, out=wrong_shape)))
    assert "not tagged pointwise" in str(check_pointwise(_node(torch.ops.aten.sort.default, meta, out=meta)))


def test_the_callee_attribute_keeps_constants_and_result() -> None:
    callee = AtenOpAttr.of("aten::frexp", "Tensor", {}, 1)
    assert callee.full_name == "aten::frexp.Tensor" and callee.result.data == 1
    assert callee.op_name == "aten.frexp.Tensor"
    floor = AtenOpAttr.of("aten::div", "Tensor_mode", {"rounding_mode": constant_attribute("floor")})
    assert call_constants(floor) == {"rounding_mode": "floor"}
    clamp = {"min": constant_attribute(None), "max": constant_attribute(1.0)}
    assert call_constants(AtenOpAttr.of("aten::clamp", "default", clamp)) == {"min": None, "max": 1.0}
