"""float8 (torch.float8_e4m3fn and float8_e5m2, the element types f8E4M3FN and
f8E5M2): casts, layout ops, `torch._scaled_mm`, float8 weights in the
safetensors sidecar and float8 model inputs and outputs, each compiled at -O0
and -O2 and compared with eager bit for bit (NaN matching NaN).

torch rounds to float8 to nearest, ties to even; float8_e4m3fn has no
infinity and torch saturates it at +-448 (infinities too), float8_e5m2
overflows to infinity. `torch._scaled_mm` runs on CPU in torch 2.13: the
operands in f32 times their scales, one f32 matmul, plus the bias, divided by
`scale_result` when `out_dtype` is given as a float8 type, rounded once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

import rducc
from rducc.dialects.shapes import byte_width
from rducc.frontend.types import element_type_of
from rducc.tools.run import main as run_main
from rducc.weights import numpy_to_torch, torch_to_numpy

E4 = torch.float8_e4m3fn
E5 = torch.float8_e5m2
GENERATOR = torch.Generator().manual_seed(8)


def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(shape, generator=GENERATOR) * scale


class Model(torch.nn.Module):
    def __init__(self, fn: Callable[..., object], buffers: dict[str, torch.Tensor] | None = None):
        super().__init__()
        self.fn = fn
        for name, value in (buffers or {}).items():
            self.register_buffer(name, value)

    def forward(self, *inputs: torch.Tensor) -> object:
        return self.fn(self, *inputs)


def assert_same(actual: object, expected: object, where: str = "result") -> None:
    """Same dtypes and shapes; values equal (float8 and integers bit for bit, NaN as NaN)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), where
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}[{key!r}]")
        return
    assert isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor), where
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (
        f"{where}: {actual.dtype}{list(actual.shape)}, expected {expected.dtype}{list(expected.shape)}"
    )
    if expected.dtype in (E4, E5, torch.bfloat16, torch.float16, torch.float32):
        torch.testing.assert_close(actual.float(), expected.float(), rtol=0, atol=0, equal_nan=True,
                                   msg=lambda m: f"{where}: {m}")
    else:
        assert torch.equal(actual, expected), where


ULP = {E4: 2.0**-3, E5: 2.0**-2, torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}
"""Relative spacing of each narrow result type's values: a matmul's f32 sum in another
order (BLAS against torch's) differs in its last bits, and may round to the next value."""


def assert_within_one_ulp(actual: torch.Tensor, expected: torch.Tensor, where: str) -> None:
    """f32 within torch's default tolerance; narrower types within one unit in the last place."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, where
    torch.testing.assert_close(actual.float(), expected.float(), rtol=ULP.get(expected.dtype, 1.3e-6), atol=1e-5,
                               msg=lambda m: f"{where}: {m}")


# Values around every rounding boundary: overflow and infinities (saturated in
# e4m3fn), the halfway cases above the largest finite values, ties to even,
# subnormals and values below the smallest subnormal, signed zeros and NaN.
EDGES = torch.tensor([
    1e4, -1e4, math.inf, -math.inf, math.nan, 448.0, 449.0, 464.0, 465.0, 480.0, -470.0,
    57344.0, 60000.0, 61440.0, 65504.0, 1.0625, 1.1875, 0.0009765625, 0.001953125 * 0.75,
    2.0**-10, 2.0**-17, 2.0**-18, 1e-30, -0.0, 0.0, 3.14159, -2.71828,
])  # fmt: skip

CAST_CASES: dict[str, Callable[..., dict[str, torch.Tensor]]] = {
    "f32": lambda m, x, n: {
        "e4m3": x.to(E4), "e5m2": x.to(E5), "noise_e4m3": n.to(E4), "noise_e5m2": n.to(E5),
        "back_f32": n.to(E4).float(), "back_bf16": n.to(E5).bfloat16(),
    },
    "narrow_floats": lambda m, x, n: {
        "bf16": x.bfloat16().to(E4), "f16": x.half().to(E5), "f64": x.double().to(E4),
        "e4m3_to_e5m2": n.to(E4).to(E5), "e5m2_to_e4m3": (n * 300).to(E5).to(E4),
        "e5m2_to_f16": n.to(E5).half(), "e4m3_to_f64": n.to(E4).double(),
    },
    "integers_and_bools": lambda m, x, n: {
        "from_i64": torch.arange(-600, 600, 37).to(E4), "from_i32": torch.arange(-9, 9, dtype=torch.int32).to(E5),
        "to_i32": (n * 50).to(E4).to(torch.int32), "to_i64": (n * 50).to(E5).long(),
        "from_bool": (n > 0).to(E4), "to_bool": n.to(E5).bool(),
    },
    "layout": lambda m, x, n: {
        "transpose": n.to(E4).t().contiguous(), "cat": torch.cat([n.to(E4), n[:2, :1].to(E4).expand(2, 40)]),
        "index_select": n.to(E5).index_select(1, torch.tensor([3, 0, 3])), "flip": n.to(E4).flip(0),
        "pad": torch.nn.functional.pad(n.to(E4), (1, 2)), "slice_expand": n.to(E5)[1:2, ::3].expand(3, 14).contiguous(),
    },
    "arithmetic": lambda m, x, n: {
        "mul": (n * 30).to(E4) * (n * 30).to(E4), "abs": n.to(E5).abs(),
        "where": torch.where(n > 0, n.to(E4), (n * 1000).to(E4)), "mm": (n * 20).to(E4) @ (n * 20).to(E4).t(),
    },
}


@pytest.mark.parametrize("opt_level", [0, 2])
def test_float8_ops_match_eager(opt_level: int) -> None:
    """Every group of CAST_CASES in one model (one export, one compile per level)."""
    inputs = (EDGES, randn(3, 40, scale=4))
    model = Model(lambda m, *xs: {name: case(m, *xs) for name, case in CAST_CASES.items()})
    program = rducc.compile(torch.export.export(model, inputs), opt_level=opt_level)
    assert_same(program(*inputs), model(*inputs))


def _scaled(out_dtype: torch.dtype | None, **options: object) -> Callable[..., torch.Tensor]:
    """A linear layer of float8 weights: x quantized per tensor, then `_scaled_mm`."""

    def forward(m: Model, x: torch.Tensor) -> torch.Tensor:
        x_scale = x.abs().amax().float() / 448
        x8 = (x / x_scale).to(E4)
        return torch._scaled_mm(x8, m.w8.t(), x_scale, m.w_scale, out_dtype=out_dtype, **options)

    return forward


SCALED_MM: dict[str, Callable[..., object]] = {
    "bf16": _scaled(torch.bfloat16), "f32": _scaled(torch.float32), "f16": _scaled(torch.float16),
    "default_is_e4m3": _scaled(None), "fast_accum": _scaled(torch.bfloat16, use_fast_accum=True),
    "bias_bf16": lambda m, x: _scaled(torch.bfloat16, bias=m.bias.bfloat16())(m, x),
    "bias_f32": lambda m, x: _scaled(torch.float32, bias=m.bias)(m, x),
    "e4m3_result_scaled": lambda m, x: _scaled(E4, scale_result=m.result_scale)(m, x),
    "e5m2_result_scaled": lambda m, x: _scaled(E5, scale_result=m.result_scale)(m, x),
    "default_ignores_scale_result": lambda m, x: _scaled(None, scale_result=m.result_scale)(m, x),
    # unnormalized operands of one sign: no cancellation, so the sum order cannot matter beyond one ulp
    "e5m2_weights_rowwise": lambda m, x: torch._scaled_mm(
        (x.abs() * 8).to(E4), m.w8_e5m2.t(), m.row_scales, m.column_scales, out_dtype=torch.bfloat16),
}  # fmt: skip


def scaled_mm_model() -> Model:
    weight = randn(24, 32)
    scale = weight.abs().amax() / 448
    return Model(
        lambda m, x: {name: fn(m, x) for name, fn in SCALED_MM.items()},
        {
            "w8": (weight / scale).to(E4), "w_scale": scale, "w8_e5m2": (weight.abs() * 100).to(E5),
            "bias": randn(24), "result_scale": torch.tensor(0.75),
            "row_scales": torch.rand(16, 1, generator=GENERATOR),
            "column_scales": torch.rand(1, 24, generator=GENERATOR),
        },
    )  # fmt: skip


@pytest.fixture(scope="module")
def scaled_mm_exported() -> tuple[Model, torch.export.ExportedProgram, torch.Tensor]:
    model, x = scaled_mm_model(), randn(16, 32, scale=3)
    return model, torch.export.export(model, (x,)), x


@pytest.mark.parametrize("opt_level", [0, 2])
def test_scaled_mm_matches_eager(scaled_mm_exported, opt_level: int) -> None:
    model, exported, x = scaled_mm_exported
    program = rducc.compile(exported, opt_level=opt_level)
    got, expected = program(x), model(x)
    for name in SCALED_MM:
        assert_within_one_ulp(got[name], expected[name], name)


def test_float8_weights_through_the_sidecar_and_rducc_run(scaled_mm_exported, tmp_path: Path) -> None:
    """float8 buffers are stored as safetensors F8_E4M3 / F8_E5M2 (1 byte each; the
    safetensors library reads them back as the same tensors), and rducc-run's results
    from the saved program equal eager's."""
    from safetensors.torch import load_file

    model, exported, x = scaled_mm_exported
    program = rducc.compile(exported)
    program.save(tmp_path / "out.mlir")
    stored = load_file(tmp_path / "out.safetensors")
    for name in ("w8", "w8_e5m2"):
        assert stored[name].dtype == getattr(model, name).dtype
        assert torch.equal(stored[name].view(torch.uint8), getattr(model, name).view(torch.uint8))
    assert "tensor<24x32xf8E4M3FN>" in program.mlir and "tensor<24x32xf8E5M2>" in program.mlir
    np.save(tmp_path / "x.npy", x.numpy())
    assert run_main([str(tmp_path / "out.mlir"), "--input", str(tmp_path / "x.npy"),
                     "--output", str(tmp_path / "y.npz")]) == 0  # fmt: skip
    results = np.load(tmp_path / "y.npz")
    expected = model(x)
    for index, name in enumerate(SCALED_MM):
        got = results[f"output_{index}"]
        got = got.view(torch_to_numpy(expected[name]).dtype) if got.dtype.kind == "V" else got  # ml_dtypes as raw bytes
        assert_within_one_ulp(numpy_to_torch(got), expected[name], name)


def test_float8_inputs_and_outputs(tmp_path: Path) -> None:
    """A float8 model input and a float8 result cross `Program` as float8 tensors."""
    model = Model(lambda m, a, b: (a.t() * b).contiguous())
    a, b = randn(5, 3, scale=50).to(E4), randn(3, 5, scale=50).to(E4)
    program = rducc.compile(torch.export.export(model, (a, b)), opt_level=2)
    assert_same(program(a, b), model(a, b))


def test_float8_is_one_byte_in_the_cost_model() -> None:
    """A float8 weight's bytes in HBM and in the kernels' DMAs: 1 per element."""
    assert byte_width(element_type_of(E4)) == byte_width(element_type_of(E5)) == 1
    weight = randn(64, 128).to(E4)
    model = Model(lambda m, x: x @ m.w.float().t(), {"w": weight})
    x = randn(8, 128)
    program = rducc.compile(torch.export.export(model, (x,)), opt_level=2)
    assert "tier.hbm_weight_bytes = 8192 : i64" in program.mlir
    assert_within_one_ulp(program(x), model(x), "x @ w.float().t()")


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fnuz, torch.float8_e5m2fnuz, torch.float8_e8m0fnu])
def test_other_float8_types_are_a_clear_error(dtype: torch.dtype) -> None:
    """The float8 variants without torch's CPU kernels (AMD's fnuz, the MX scale type)."""
    from rducc.errors import RduccError

    model = Model(lambda m, a: a.to(dtype))
    name = str(dtype).removeprefix("torch.")
    supported = r"\(supported: .*float8_e4m3fn, float8_e5m2"
    with pytest.raises(RduccError, match=rf"has dtype {name}, which rducc does not support {supported}"):
        rducc.compile(torch.export.export(model, (randn(3),)))


def test_float8_constants_in_the_program_text(tmp_path: Path) -> None:
    """Small float8 constants are printed inline (dense<...> : tensor<..xf8E4M3FN>) and
    read back by rducc-run as the same float8 values."""
    constant = torch.tensor([1.5, -2.25, 448.0, 0.001953125], dtype=E4)
    model = Model(lambda m, x: (x * constant.float(), torch.tensor([0.375, -57344.0], dtype=E5)))
    x = randn(4)
    program = rducc.compile(torch.export.export(model, (x,)))
    assert "dense<[1.500000e+00, -2.250000e+00, 4.480000e+02, 1.953120e-03]> : tensor<4xf8E4M3FN>" in program.mlir
    program.save(tmp_path / "out.mlir")
    np.save(tmp_path / "x.npy", x.numpy())
    assert run_main([str(tmp_path / "out.mlir"), "--input", str(tmp_path / "x.npy"),
                     "--output", str(tmp_path / "y.npz")]) == 0  # fmt: skip
    results = np.load(tmp_path / "y.npz")
    expected = model(x)
    assert_same(torch.from_numpy(results["output_0"]), expected[0])
    assert_same(numpy_to_torch(results["output_1"].view(torch_to_numpy(expected[1]).dtype)), expected[1])
