"""Issue 30: complex tensors at the program's edge and Python numbers computed by the graph.

Complex inputs and outputs are real pairs inside the program (`rdu.complex_inputs`,
`rdu.complex_outputs`); `rducc.Program` and `rducc-run` take and give complex
arrays. Arithmetic on `.item()` reads is computed in the program as rank-0
tensors and handed back as Python numbers. Each against eager at -O0 and -O2.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import rducc
from rducc.errors import RduccError, UnsupportedOpsError


class ComplexArithmetic(nn.Module):
    """A complex input, complex weights-free arithmetic and a complex output."""

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return z * z.conj() + (1 - 2j) * z


class RealViewOfInput(nn.Module):
    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return torch.view_as_real(z) * 2 + 1


class ComplexViewOfInput(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.view_as_complex(x) * (0.5 + 1j)


class ComplexNorms(nn.Module):
    def forward(self, z: torch.Tensor):
        return (torch.linalg.vector_norm(z, dim=-1), torch.norm(z, p=2, dim=0),
                torch.linalg.vector_norm(z, ord=float("inf")), torch.linalg.vector_norm(z, ord=1, dim=1, keepdim=True))


class PromotingCat(nn.Module):
    """complex with float and integer tensors: torch's type promotion."""

    def forward(self, z: torch.Tensor, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        return torch.cat([z, x, n], 0)


class Spectra(nn.Module):
    def forward(self, x: torch.Tensor):
        window = torch.hann_window(8)
        return torch.fft.rfft2(x), torch.stft(x, n_fft=8, hop_length=4, window=window, return_complex=True)


class ComplexMoves(nn.Module):
    """Ops that only move complex values: the pair's trailing 2 comes along (roll reads index_select)."""

    def forward(self, z: torch.Tensor):
        return (torch.roll(z, 1, -1), z.flip(0), z[torch.tensor([2, 0])], z.repeat(2, 1),
                nn.functional.pad(z, (1, 2)), z.index_select(1, torch.tensor([3, 1])))


class ComplexSpreads(nn.Module):
    """var and std of complex values (real: the real parts' spread plus the imaginary parts'),
    with and without a correction, over one dim, all dims and a dims list, and the _mean forms."""

    def forward(self, z: torch.Tensor):
        return (z.var(1), z.std(0, correction=0), torch.var_mean(z, 1, keepdim=True), torch.std_mean(z),
                torch.var(z, (0, 1), correction=2, keepdim=True))


class Complex128(nn.Module):
    def forward(self, z: torch.Tensor, x: torch.Tensor):
        return torch.fft.fft(z) + x, (z * x).abs()


class RunningLogSumExp(nn.Module):
    """Complex logcumsumexp along the first and last dims: real parts far apart (a shift per
    prefix), -inf terms first (torch's -inf + 0i start), wide imaginary parts (torch's branch,
    not (-pi, pi]), complex128, a rank-0 input."""

    def forward(self, z: torch.Tensor, wide: torch.Tensor, w: torch.Tensor, one: torch.Tensor):
        return (torch.logcumsumexp(z, 0), torch.logcumsumexp(wide, -1), torch.logcumsumexp(w, 1),
                torch.logcumsumexp(one, 0))


class ComplexNanToNum(nn.Module):
    """nan_to_num of complex values (each part alone), defaults and given values; the NaN and
    infinities come from a product with a real number (promoted to x + 0i, as torch does)."""

    def forward(self, z: torch.Tensor, w: torch.Tensor):
        return (torch.nan_to_num(z), torch.nan_to_num(z * 2, nan=0.5, posinf=9.0, neginf=-9.0),
                torch.nan_to_num(w + 1, nan=-1.0))


class ComplexMatrices(nn.Module):
    """The matrix exponential of complex matrices (scaling by a count read from the data, then
    squaring), of small and large norm, batched, complex128; the Cholesky factor of a Hermitian
    matrix (L L^H, upper too) and a solve with it."""

    def forward(self, z: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
        hermitian = z @ z.mH + 3 * torch.eye(3)
        return (torch.linalg.matrix_exp(z * 0.3), torch.linalg.matrix_exp(z * 3), torch.linalg.matrix_exp(w),
                torch.linalg.cholesky(hermitian), torch.linalg.cholesky(hermitian, upper=True),
                torch.cholesky_solve(b, torch.linalg.cholesky(hermitian)))


class ComplexFactorizations(nn.Module):
    """Complex QR, SVD, eigh and eig (torch's complex kernels on the host) and the eigendecomposition
    of a real matrix (complex results). Factors are unique only up to phase, so the program returns
    what is not: reconstructions, Gram matrices, moduli, singular values, eigenvalue sets. A wide
    complete QR, a batched tall complex128 QR and SVD, `mode="r"`, an empty matrix, `UPLO="U"`,
    a factor of a transposed input, and the factors computed with after the host call (an
    embedding lookup in a complex table among them)."""

    def forward(self, wide: torch.Tensor, tall: torch.Tensor, real: torch.Tensor, empty: torch.Tensor):
        q, r = torch.linalg.qr(wide, mode="complete")
        tall_q = torch.linalg.qr(tall)[0]
        u, s, vh = torch.linalg.svd(tall, full_matrices=False)
        hermitian = wide @ wide.mH
        w, v = torch.linalg.eigh(hermitian, UPLO="U")
        e, ev = torch.linalg.eig(real)
        empty_q, empty_r = torch.linalg.qr(empty)
        return (q @ r, tall_q.mH @ tall_q, torch.linalg.qr(wide.mT, mode="r")[1].abs(),
                (u * s.to(u.dtype).unsqueeze(-2)) @ vh, s, u.mH @ u, w, (v * w.to(v.dtype)) @ v.mH,
                real.to(ev.dtype) @ ev - ev * e, e.abs().sort().values,
                torch.linalg.eigvals(wide[:, :3]).abs().sort().values, empty_q @ empty_r,
                nn.functional.embedding(torch.tensor([[2, 0], [1, 2]]), r))  # a complex table's rows, as its parts


_NOT_FINITE = torch.tensor([[float("nan"), 1.0], [float("inf"), -float("inf")], [2.0, 3.0]])


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(30)


def _complex(*shape: int, dtype: torch.dtype = torch.complex64) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, generator=_generator())


COMPLEX_CASES = {
    "arithmetic": (ComplexArithmetic, lambda: (_complex(3, 4),)),
    "view_as_real_input": (RealViewOfInput, lambda: (_complex(5),)),
    "view_as_complex_output": (ComplexViewOfInput, lambda: (torch.randn(4, 3, 2, generator=_generator()),)),
    "norms": (ComplexNorms, lambda: (_complex(3, 4),)),
    "cat_promotes": (PromotingCat, lambda: (_complex(3), torch.randn(2), torch.arange(4))),
    "rfft2_stft": (Spectra, lambda: (torch.randn(2, 32, generator=_generator()),)),
    "moves": (ComplexMoves, lambda: (_complex(3, 4),)),
    "spreads": (ComplexSpreads, lambda: (_complex(3, 5),)),
    "logcumsumexp": (RunningLogSumExp, lambda: (
        torch.complex(torch.tensor([-float("inf"), -float("inf"), 0.0, 1000.0, -1000.0, 5.0]), torch.arange(6.0)),
        torch.complex(torch.randn(2, 30, generator=_generator()) * 3, torch.randn(2, 30, generator=_generator()) * 4),
        _complex(2, 3, 4, dtype=torch.complex128), torch.tensor(0.5 - 2j))),
    "nan_to_num": (ComplexNanToNum, lambda: (torch.complex(_NOT_FINITE, _NOT_FINITE.flip(0)),
                                             torch.complex(_NOT_FINITE, _NOT_FINITE).to(torch.complex128))),
    "matrices": (ComplexMatrices, lambda: (_complex(3, 3), _complex(2, 4, 4, dtype=torch.complex128), _complex(3, 2))),
    "complex128": (Complex128, lambda: (_complex(6, dtype=torch.complex128), torch.randn(6, dtype=torch.float64))),
}


def _assert_matches(got, want) -> None:
    got_items, want_items = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    assert len(got_items) == len(want_items)
    for g, w in zip(got_items, want_items):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


class AllCases(nn.Module):
    """Every case of `cases` in one program (one compile per -O level); its inputs are
    the cases' inputs one after the other, its outputs a tuple of each case's."""

    def __init__(self, cases: dict) -> None:
        super().__init__()
        self.cases = nn.ModuleList(module() for module, _ in cases.values())
        self.arity = [len(make()) for _, make in cases.values()]

    def forward(self, *inputs: torch.Tensor):
        outputs, start = [], 0
        for case, arity in zip(self.cases, self.arity):
            outputs.append(case(*inputs[start:start + arity]))
            start += arity
        return tuple(outputs)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_complex_edges_match_eager(opt_level):
    module = AllCases(COMPLEX_CASES)
    inputs = tuple(t for _, make in COMPLEX_CASES.values() for t in make())
    program = rducc.compile(module, inputs, opt_level=opt_level)
    for name, got, want in zip(COMPLEX_CASES, program(*inputs), module(*inputs), strict=True):
        try:
            _assert_matches(got, want)
        except AssertionError as error:
            raise AssertionError(f"complex case {name}: {error}") from error


@pytest.fixture(scope="module")
def saved_cat(tmp_path_factory):
    """PromotingCat compiled once at -O2 and saved (the edge tests below read it)."""
    inputs = (_complex(4), torch.randn(3), torch.arange(2))
    program = rducc.compile(PromotingCat(), inputs, opt_level=2)
    path = tmp_path_factory.mktemp("cat") / "cat.mlir"
    program.save(path)
    return program, path, inputs


def test_complex_edges_are_marked_on_the_module(saved_cat):
    program, _, _ = saved_cat
    assert 'rdu.complex_inputs = ["z"]' in program.mlir
    assert "rdu.complex_outputs = [0 : i64]" in program.mlir


def test_rducc_run_reads_and_writes_complex_npy(tmp_path, saved_cat):
    from rducc.tools.run import main as run_main

    _, saved, inputs = saved_cat
    paths = []
    for i, tensor in enumerate(inputs):
        paths.append(str(tmp_path / f"in{i}.npy"))
        np.save(paths[-1], tensor.numpy())
    flags = [flag for path in paths for flag in ("--input", path)]
    argv = [str(saved), *flags, "--output", str(tmp_path / "o.npz")]
    assert run_main(argv) == 0
    result = np.load(tmp_path / "o.npz")["output_0"]
    assert result.dtype == np.complex64
    np.testing.assert_allclose(result, PromotingCat()(*inputs).numpy(), rtol=1e-6)


def test_rducc_run_takes_inputs_by_label(tmp_path, capsys, saved_cat):
    """`--input LABEL=FILE` binds by the model's argument name, in any order and after positional
    ones; an unknown label, a label given twice and a left-out input are one clear error each."""
    from rducc.tools.run import main as run_main

    _, saved, inputs = saved_cat
    paths = {}
    for label, tensor in zip(("z", "x", "n"), inputs):
        paths[label] = str(tmp_path / f"{label}.npy")
        np.save(paths[label], tensor.numpy())
    out = tmp_path / "o.npz"
    for flags in (["n=" + paths["n"], "z=" + paths["z"], "x=" + paths["x"]], [paths["z"], "n=" + paths["n"],
                                                                               "x=" + paths["x"]]):
        out.unlink(missing_ok=True)
        argv = [str(saved), *[f for flag in flags for f in ("--input", flag)], "--output", str(out), "-q"]
        assert run_main(argv) == 0
        np.testing.assert_allclose(np.load(out)["output_0"], PromotingCat()(*inputs).numpy(), rtol=1e-6)
    for flags, message in (([paths["z"], "bias=" + paths["x"]], "no input labelled 'bias'; its inputs are z, x, n"),
                           ([paths["z"], "z=" + paths["z"]], "input 'z' is given twice (by position and by label)"),
                           (["n=" + paths["n"]], "no file for inputs z, x (give each by position or as LABEL=")):
        assert run_main([str(saved), *[f for flag in flags for f in ("--input", flag)]]) == 1
        error = capsys.readouterr().err.strip()
        assert len(error.splitlines()) == 1 and message in error, error


def test_rducc_run_refuses_a_real_array_for_a_complex_input(tmp_path, capsys, saved_cat):
    from rducc.tools.run import main as run_main

    _, saved, inputs = saved_cat
    np.save(tmp_path / "real.npy", np.zeros((4, 2), np.float32))
    paths = [str(tmp_path / "real.npy")]
    for i, tensor in enumerate(inputs[1:], 1):
        paths.append(str(tmp_path / f"in{i}.npy"))
        np.save(paths[-1], tensor.numpy())
    flags = [flag for path in paths for flag in ("--input", path)]
    argv = [str(saved), *flags, "--output", str(tmp_path / "o.npz")]
    assert run_main(argv) == 1
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert "has dtype float32, expected complex64" in error
    assert not (tmp_path / "o.npz").exists()


def _factorization_inputs() -> tuple[torch.Tensor, ...]:
    return (_complex(3, 5), _complex(2, 5, 3, dtype=torch.complex128),
            torch.randn(4, 4, dtype=torch.float64, generator=_generator()), _complex(0, 3))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_complex_factorizations_match_eagers_invariants(opt_level):
    """Compiled alone, not among `COMPLEX_CASES`: the interpreter's -O0 preparation grows faster
    than the program, and this case costs three times as much there."""
    inputs = _factorization_inputs()
    got = rducc.compile(ComplexFactorizations(), inputs, opt_level=opt_level)(*inputs)
    _assert_matches(got, ComplexFactorizations()(*inputs))


def test_a_complex_factorization_without_host_ops_is_one_clear_error():
    """A complex QR runs only on the host: with host ops off it is the operator error, naming it."""
    class Factored(nn.Module):
        def forward(self, z: torch.Tensor) -> torch.Tensor:
            return torch.linalg.qr(z)[1]

    with pytest.raises(UnsupportedOpsError, match=r"cannot import:\n  aten\.linalg_qr\.default: 1 use, first at "):
        rducc.compile(Factored(), (_complex(3, 3),), opt_level=0, host_ops=False)


# --- Python numbers ---------------------------------------------------------


class FloatNumbers(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor):
        x, y = a.sum().item(), b.max().item()
        return x + y, x - y, x * y, x / y, -x, x ** 2, x + 1.5, 2.0 * y, x // y, x % y


class IntNumbers(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor):
        x, y = a.sum().item(), b.max().item()
        return x + y, x - y, x * y, x // y, x % y, x / y, -x, x ** 2, 3 + x, 7 - y, (x + y) * (x - y)


class NumbersBesideTensors(nn.Module):
    """Numbers and tensors returned together, in a structure."""

    def forward(self, a: torch.Tensor):
        total = a.sum().item()
        return {"scaled": a * 2, "mean": total / a.numel(), "shifted": total - a.min().item()}


class NumbersAsScalars(nn.Module):
    """Numbers read with `.item()` passed to ops that take them only as a Scalar (no Tensor
    overload): computed in the program as values, through torch's decomposition of each op."""

    def forward(self, x: torch.Tensor, t: torch.Tensor, n: torch.Tensor):
        slope, low, high = t[0].item(), t[1].item(), t[2].item()
        F = nn.functional
        return (F.leaky_relu(x, slope), F.elu(x, alpha=high), F.softplus(x, beta=high, threshold=high * 4),
                F.celu(x, alpha=high), F.threshold(x, slope, low), F.hardshrink(x, high),
                F.leaky_relu(x.double(), n.sum().item()), F.elu(x.bfloat16(), slope) * slope)


def _dyadic(*shape: int, low: int = -40) -> torch.Tensor:
    """Floats whose sums are exact in any order: the numbers read are eager's, bit for bit."""
    return torch.randint(low, 40, shape, generator=_generator()).float() / 8


NUMBER_CASES = {
    "float": (FloatNumbers, lambda: (_dyadic(5), _dyadic(5, low=1))),
    "int": (IntNumbers, lambda: (torch.tensor([4, -9, 30]), torch.tensor([2, 5, 7]))),
    "structure": (NumbersBesideTensors, lambda: (_dyadic(2, 3),)),
    "scalar_arguments": (NumbersAsScalars, lambda: (torch.randn(3, 4, generator=_generator()),
                                                    torch.tensor([0.2, -1.0, 1.5]), torch.tensor([1, 2]))),
}


@pytest.mark.parametrize("opt_level", [0, 2])
def test_python_numbers_match_eager(opt_level):
    module = AllCases(NUMBER_CASES)
    inputs = tuple(t for _, make in NUMBER_CASES.values() for t in make())
    for case, got, want in zip(NUMBER_CASES, rducc.compile(module, inputs, opt_level=opt_level)(*inputs),
                               module(*inputs), strict=True):
        got_leaves, want_leaves = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
        assert len(got_leaves) == len(want_leaves), case
        for g, w in zip(got_leaves, want_leaves):
            if isinstance(w, torch.Tensor):
                torch.testing.assert_close(g, w)
            else:
                assert type(g) is type(w), (case, g, w)
                assert g == pytest.approx(w, rel=1e-12, abs=1e-12), (case, g, w)


def test_numbers_passed_as_scalars_are_values_for_every_input():
    """Other numbers than the example's: the program computes with them (they are not constants)."""
    module = NumbersAsScalars()
    example = (torch.randn(3, 4, generator=_generator()), torch.tensor([0.2, -1.0, 1.5]), torch.tensor([1, 2]))
    program = rducc.compile(module, example, opt_level=0)
    other = (example[0] * 2, torch.tensor([0.7, -0.3, 0.5]), torch.tensor([-4, 1]))
    for got, want in zip(program(*other), module(*other), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-2 if want.dtype == torch.bfloat16 else 1e-6, atol=1e-6)


def test_a_number_an_op_takes_as_a_scalar_with_no_tensor_form_stays_one_clear_error():
    """`a * a.max().item()`, `torch.full((3,), a.max().item())` and `leaky_relu(a, a.max().item())` are
    computed in the program; `elu`'s decomposition multiplies its scale by alpha in Python, so a number
    read as the scale is refused, one error naming the op."""
    class Scaled(nn.Module):
        def forward(self, a: torch.Tensor) -> torch.Tensor:
            return torch.ops.aten.elu.default(a, 2.0, a.max().item()) * a

    with pytest.raises(RduccError, match=r"passed to aten\.elu\.default as a Scalar: that op has no Tensor overload"):
        rducc.compile(Scaled(), (torch.randn(3),), opt_level=0)


class ScalarSlopes(nn.Module):
    """A training step whose activations take numbers read with `.item()` as their slope and alpha."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, t: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        h = nn.functional.leaky_relu(h, t[0].item()) + nn.functional.elu(h, alpha=t[1].item())
        return ((h - y) ** 2).mean()


@pytest.mark.parametrize("opt_level", [0, 2])
def test_numbers_passed_as_scalars_train_as_eager(opt_level):
    """Their gradients: one SGD step's loss and parameters are eager's."""
    torch.manual_seed(0)
    model, reference = ScalarSlopes(), ScalarSlopes()
    reference.load_state_dict(model.state_dict())
    x, t, y = torch.randn(3, 4, generator=_generator()), torch.tensor([0.2, 0.7]), torch.randn(3, 4)
    program = rducc.compile_training(model, (x, t, y), optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                                     opt_level=opt_level)
    loss = program.step(x, t, y)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    want = reference(x, t, y)
    want.backward()
    optimizer.step()
    torch.testing.assert_close(torch.as_tensor(float(loss)), want.detach())
    for name, value in program.parameters().items():
        torch.testing.assert_close(value, dict(reference.named_parameters())[name.removeprefix("model.")].detach())
