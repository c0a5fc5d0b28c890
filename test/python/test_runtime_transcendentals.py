"""The runtime's transcendentals and float sums give eager's values bit for bit (issue 27).

A bf16 training step departs from eager autocast's at the first float32 value
that is an ulp off eager's: a weight or gradient on a bf16 rounding boundary
turns it into a bf16 ulp, and Adam's update of a small gradient into a step.
A census of tiny Llama's bf16 step (every value of its joint graph, rducc's
against the same graph run by torch) found the first such values at the
runtime's `exp`, `sin`, `cos` and `sigmoid` (NumPy's functions, not torch's
kernels: 10-40% of float32 elements an ulp or two apart) and at its float
sums (f32 summed in f64, not in torch's order). The map body now runs each
math op as torch's kernel (`elementwise.torch_math`), a sigmoid body as
torch's sigmoid, and `kernels.reduce` float sums as torch's sum: one bf16
step's loss and gradients equal eager autocast's (checked here on a small
model with a float32 RMS norm, SiLU and cross entropy).
"""

from __future__ import annotations

import copy

import ml_dtypes
import numpy as np
import pytest
import torch
from torch import nn
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import FloatAttr, TensorType, bf16, f32
from xdsl.ir import Block, Region

import rducc
from rducc.dialects.rdu import dataflow as rdu
from rducc.runtime import kernels, map_body

BF16 = np.dtype(ml_dtypes.bfloat16)
_UNARY = {"exp": xmath.ExpOp, "log": xmath.LogOp, "tanh": xmath.TanhOp, "sin": xmath.SinOp, "cos": xmath.CosOp,
          "sqrt": xmath.SqrtOp, "expm1": xmath.ExpM1Op, "log1p": xmath.Log1pOp, "atan": xmath.AtanOp}


def _one_op_map(make, element, shape: tuple[int, ...]) -> rdu.MapOp:
    outer = Block(arg_types=[TensorType(element, list(shape))])
    body = Block(arg_types=[element])
    ops = make(body.args[0])
    body.add_ops([*ops, rdu.YieldOp(ops[-1].results[0])])
    op = rdu.MapOp(list(outer.args), TensorType(element, list(shape)), Region(body))
    op.verify()
    return op


def _probe(name: str) -> torch.Tensor:
    x = torch.randn(4099, generator=torch.Generator().manual_seed(0)) * 4
    return x.abs() + 1e-3 if name in ("log", "sqrt", "log1p") else x


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("name", sorted(_UNARY))
def test_map_body_math_is_torchs_kernel(name: str, dtype: str) -> None:
    """A map body's math op equals torch's op on the same array, every element
    (NumPy's: 10-40% of float32 elements an ulp or two off; bf16 through
    torch's bf16 kernel, float32 inside and rounded once)."""
    x = _probe(name) if dtype == "f32" else _probe(name).bfloat16()
    run = map_body.compile_map(_one_op_map(lambda a: [_UNARY[name](a)], f32 if dtype == "f32" else bf16,
                                           tuple(x.shape)))
    array = x.numpy() if dtype == "f32" else x.view(torch.int16).numpy().view(BF16)
    got = np.asarray(run(array))
    want = getattr(torch, name)(x)
    got_tensor = torch.from_numpy(got) if dtype == "f32" else torch.from_numpy(got.view(np.int16)).view(torch.bfloat16)
    assert int((got_tensor != want).sum()) == 0, f"{int((got_tensor != want).sum())} of {x.numel()} differ"
    out = np.empty_like(got)
    run.into(out, array)  # type: ignore[attr-defined]  # written into the given array as well
    assert np.array_equal(out.view(np.uint8), got.view(np.uint8))


def test_sigmoid_body_is_eagers_sigmoid() -> None:
    """`1 / (1 + exp(-x))` (aten.sigmoid's decomposition) runs as torch's sigmoid,
    whose exponential is its own, not `torch.exp`'s: equal to eager's."""

    def sigmoid(a):
        one = arith.ConstantOp(FloatAttr(1.0, f32))
        neg = arith.NegfOp(a)
        exp = xmath.ExpOp(neg.result)
        add = arith.AddfOp(one.result, exp.result)
        return [one, neg, exp, add, arith.DivfOp(one.result, add.result)]

    x = torch.randn(64, 257, generator=torch.Generator().manual_seed(1)) * 4
    got = torch.from_numpy(np.asarray(map_body.compile_map(_one_op_map(sigmoid, f32, (64, 257)))(x.numpy())))
    assert torch.equal(got, torch.sigmoid(x)), f"{int((got != torch.sigmoid(x)).sum())} differ"
    scalar = torch.tensor(0.75)  # rank 0 (OpInfo's third sample): kept rank 0, not made rank 1
    got = np.asarray(map_body.compile_map(_one_op_map(sigmoid, f32, ()))(scalar.numpy()))
    assert got.shape == () and torch.equal(torch.from_numpy(got), torch.sigmoid(scalar))


@pytest.mark.parametrize("dims", [(1,), (0,), (0, 1), (2,)])
def test_float_sums_add_as_eager(dims: tuple[int, ...]) -> None:
    """`rdu.reduce sum` of f32 and bf16 equals torch's sum bit for bit (f32 was summed in f64)."""
    x = torch.randn(6, 40, 33, generator=torch.Generator().manual_seed(2)) * 3
    got = kernels.reduce(x.numpy(), "sum", dims)
    assert torch.equal(torch.from_numpy(np.asarray(got)), x.sum(dims))
    low = x.bfloat16()
    got16 = kernels.reduce(low.view(torch.int16).numpy().view(BF16), "sum", dims, keepdim=True)
    assert torch.equal(torch.from_numpy(np.asarray(got16).view(np.int16)).view(torch.bfloat16),
                       low.sum(dims, keepdim=True))


def test_bf16_products_round_as_eagers_gemm() -> None:
    """A bf16 product rounded to bf16 equals torch's (oneDNN's 16-bit GEMM),
    bit for bit; multiplied in f32 by OpenBLAS and rounded, elements differ."""
    generator = torch.Generator().manual_seed(5)
    lhs = torch.randn(64, 512, generator=generator).bfloat16()
    rhs = torch.randn(512, 48, generator=generator).bfloat16()

    def bits(t: torch.Tensor) -> np.ndarray:
        return t.view(torch.int16).numpy().view(BF16)

    got = kernels.matmul(bits(lhs), bits(rhs))
    assert torch.equal(torch.from_numpy(got.view(np.int16)).view(torch.bfloat16), lhs @ rhs)
    out = np.empty((48, 48), BF16)
    kernels.matmul(bits(rhs.t()[:, :64].contiguous()), bits(lhs[:, :48]), out=out)  # into a given array
    assert torch.equal(torch.from_numpy(out.view(np.int16)).view(torch.bfloat16), rhs.t()[:, :64] @ lhs[:, :48])


class _NormedMlp(nn.Module):
    """Llama's pieces at a tiny size: a float32 RMS norm, SiLU and cross entropy under bf16 autocast."""

    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(24, 64), nn.Linear(64, 16)
        self.norm = nn.Parameter(torch.rand(24) + 0.5)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = self.norm * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6))
        return nn.functional.cross_entropy(self.down(nn.functional.silu(self.up(h))), labels)


def test_bf16_adamw_steps_equal_eager_autocast_bit_for_bit() -> None:
    """Three mixed-precision AdamW steps: every float32 master weight equals
    eager autocast's and torch.optim's after each step, bit for bit (before:
    the norm's and the biases' gradients, sums, the SiLU's sigmoid and AdamW's
    `lerp_`, `addcmul_` and `sqrt` an ulp off in places; after 3 steps most
    weights differed)."""
    torch.manual_seed(0)
    model = _NormedMlp()
    eager = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(3)
    data = [(torch.randn(32, 24, generator=generator) * 2, torch.randint(0, 16, (32,), generator=generator))
            for _ in range(3)]
    program = rducc.compile_training(model, data[0], optimizer=torch.optim.AdamW(model.parameters(), lr=1e-2),
                                     mixed_precision="bf16", opt_level=0)
    optimizer = torch.optim.AdamW(eager.parameters(), lr=1e-2)
    for step, batch in enumerate(data):
        loss = program.step(*batch)
        optimizer.zero_grad()
        with torch.autocast("cpu", torch.bfloat16):
            want = eager(*batch)
        want.backward()
        optimizer.step()
        # the loss within a float32 ulp: eager's nll_loss adds the rows in its own
        # cascade (blocks of 16), rducc's lowering as one sum
        assert torch.as_tensor(loss).item() == pytest.approx(want.item(), rel=2.4e-7, abs=0)
        for name, parameter in eager.named_parameters():
            got = torch.as_tensor(program.parameters()[name])
            assert torch.equal(got, parameter.detach()), f"step {step}, {name}: {int((got != parameter).sum())} differ"


class _FusedArithmetic(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (a.add(b, alpha=1e-4), a.sub(b, alpha=0.3), torch.rsub(a, b, alpha=0.7), torch.lerp(a, b, 0.1),
                torch.lerp(a, b, 0.9), torch.lerp(a, b, c), torch.addcmul(a, b, c, value=1e-3),
                torch.addcdiv(a, b, c.abs() + 0.1, value=-1e-3))


def test_fused_multiply_adds_round_as_torchs_kernels() -> None:
    """add/sub with alpha, lerp and addcmul round once (a fused multiply-add), addcdiv
    scales before it divides, as torch's CPU kernels: every element equals eager's."""
    generator = torch.Generator().manual_seed(4)
    inputs = (torch.randn(64, 65, generator=generator), torch.randn(64, 65, generator=generator),
              torch.rand(64, 65, generator=generator))
    program = rducc.compile(_FusedArithmetic(), inputs, opt_level=0)
    for index, (got, want) in enumerate(zip(program(*inputs), _FusedArithmetic()(*inputs), strict=True)):
        got = torch.as_tensor(np.asarray(got))
        assert torch.equal(got, want), f"output {index}: {int((got != want).sum())} of {want.numel()} differ"


class _Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4096))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.weight * x).sum()  # its gradient is x, exactly


@pytest.mark.parametrize("hyper", [{}, {"momentum": 0.9, "weight_decay": 1e-2}])
def test_sgd_updates_round_as_torch_optim(hyper: dict[str, float]) -> None:
    """SGD's last line `param.add_(grad, alpha=-lr)` rounds once in torch.optim (one
    fused multiply-add); the compiled step rounds once too (before: `grad * lr`
    rounded, then subtracted: 590 of 4,096 weights off after three plain steps)."""
    torch.manual_seed(0)
    model = _Linear()
    eager = copy.deepcopy(model)
    inputs = (torch.randn(4096, generator=torch.Generator().manual_seed(5)),)
    program = rducc.compile_training(model, inputs, optimizer=torch.optim.SGD(model.parameters(), lr=0.1, **hyper))
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.1, **hyper)
    for step in range(3):
        program.step(*inputs)
        optimizer.zero_grad()
        eager(*inputs).backward()
        optimizer.step()
        got = torch.as_tensor(program.parameters()["weight"])
        assert torch.equal(got, eager.weight.detach()), f"step {step}: {int((got != eager.weight).sum())} differ"


def test_a_bf16_linear_on_a_rounding_tie_equals_eagers_addmm() -> None:
    """A bf16 `nn.Linear` (an `rdu.matmul` widened to f32 and a map adding the
    bf16 bias, rounded once) equals eager's `F.linear` bit for bit on an input
    where the f32 sum in numpy's BLAS order rounds the other way from eager's
    16-bit `addmm` (a bf16 tie: issue 27's `shared_mlm`). The runtime folds
    the pair into one `torch.addmm` on the bf16 tensors (`kernels.linear`);
    at -O0 too, where `rdu-fuse` keeps the pair one kernel (`unfused_segments`)."""
    with torch.random.fork_rng():
        torch.manual_seed(26)
        layer = nn.Linear(32, 64).bfloat16().requires_grad_(False)

    def numpy_order(x: torch.Tensor) -> torch.Tensor:  # the widened product on numpy, the bias, one rounding
        product = np.matmul(x.float().numpy(), layer.weight.float().numpy().T)
        return (torch.from_numpy(product) + layer.bias.float()).bfloat16()

    inputs = (torch.randn(16, 32, generator=torch.Generator().manual_seed(seed)).bfloat16() for seed in range(2000))
    x = next(x for x in inputs if not torch.equal(numpy_order(x), layer(x)))
    for opt_level in (2, 0):
        assert torch.equal(rducc.compile(layer, (x,), opt_level=opt_level)(x), layer(x)), f"-O{opt_level}"
