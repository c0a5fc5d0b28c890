"""Property-based tests (hypothesis).

- random small graphs of the supported op families, compiled at -O0 and -O2
  and run, agree with PyTorch eager;
- random SRAM allocation problems, placed by `rdu-sram-alloc`, pass the
  independent checker (test/python/sram_checker.py);
- random and mutated IR text fed to `rducc-opt` yields a diagnostic (exit 1,
  `rducc-opt: error:`) or a result, never an internal error.

CI runs a few examples of each (seconds); `RDUCC_FUZZ_EXAMPLES=10000` runs
that many of every property:

    RDUCC_FUZZ_EXAMPLES=10000 .venv/bin/python -m pytest test/python/test_properties.py
"""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sram_checker import check_placed

ROOT = Path(__file__).resolve().parents[2]


def examples(ci: int) -> settings:
    """`ci` examples, or RDUCC_FUZZ_EXAMPLES of them; no deadline (compiles vary)."""
    count = int(os.environ.get("RDUCC_FUZZ_EXAMPLES", ci))
    return settings(max_examples=count, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --------------------------------------------------------------------------
# (a) random graphs against eager
# --------------------------------------------------------------------------

UNARY = {
    "relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "neg": torch.neg,
    "abs": torch.abs, "gelu": torch.nn.functional.gelu, "square": torch.square,
}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "maximum": torch.maximum}
REDUCE = {"sum": torch.sum, "mean": torch.mean, "amax": torch.amax}


@dataclass(frozen=True)
class Step:
    """One op of a random graph; operands are indices of earlier values."""

    kind: str  # unary, binary, weight_binary, matmul, reduce, transpose, reshape
    op: str
    operands: tuple[int, ...]
    weight_shape: tuple[int, ...] = ()
    dims: tuple[int, ...] = ()
    keepdim: bool = False
    shape: tuple[int, ...] = ()


def _apply(step: Step, values: list[torch.Tensor], weight: torch.Tensor | None) -> torch.Tensor:
    args = [values[i] for i in step.operands]
    if step.kind == "unary":
        return UNARY[step.op](args[0])
    if step.kind == "binary":
        return BINARY[step.op](args[0], args[1])
    if step.kind == "weight_binary":
        return BINARY[step.op](args[0], weight)
    if step.kind == "matmul":
        return torch.matmul(args[0], weight)
    if step.kind == "reduce":
        return REDUCE[step.op](args[0], dim=list(step.dims), keepdim=step.keepdim)
    if step.kind == "transpose":
        return args[0].transpose(*step.dims)
    assert step.kind == "reshape"
    return args[0].reshape(step.shape)


class RandomGraph(torch.nn.Module):
    """Runs `steps` over the inputs; returns the last value and one earlier one."""

    def __init__(self, steps: list[Step], dtype: torch.dtype, seed: int):
        super().__init__()
        self.steps = steps
        generator = torch.Generator().manual_seed(seed)
        self.weights = torch.nn.ParameterList(
            torch.nn.Parameter(torch.randn(s.weight_shape, generator=generator).to(dtype) * 0.5,
                               requires_grad=False)
            if s.weight_shape else torch.nn.Parameter(torch.zeros(()), requires_grad=False)
            for s in steps
        )

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values = list(inputs)
        for step, weight in zip(self.steps, self.weights):
            values.append(_apply(step, values, weight if step.weight_shape else None))
        return values[-1], values[len(inputs) + len(self.steps) // 2]


def _broadcast_variant(draw, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts against `shape`: some dims 1, some leading dims dropped."""
    drop = draw(st.integers(0, max(0, len(shape) - 1)))
    return tuple(1 if draw(st.booleans()) else d for d in shape[drop:])


@st.composite
def random_graphs(draw) -> tuple[list[tuple[int, ...]], list[Step]]:
    """Input shapes and steps: chains, and diamonds (an operand picked from any earlier value)."""
    dims = st.integers(1, 6)
    rank = draw(st.integers(1, 3))
    first = tuple(draw(dims) for _ in range(rank))
    shapes = [first]
    if draw(st.booleans()):
        shapes.append(_broadcast_variant(draw, first))
    values = list(shapes)
    steps: list[Step] = []
    for _ in range(draw(st.integers(2, 6))):
        index = draw(st.integers(0, len(values) - 1))
        shape = values[index]
        kind = draw(st.sampled_from(["unary", "binary", "weight_binary", "matmul", "reduce", "transpose", "reshape"]))
        step: Step | None = None
        if kind == "unary":
            step = Step(kind, draw(st.sampled_from(sorted(UNARY))), (index,))
        elif kind == "binary":
            other = draw(st.integers(0, len(values) - 1))
            try:
                result = tuple(torch.broadcast_shapes(shape, values[other]))
            except RuntimeError:
                result = None
            if result is not None:
                step = Step(kind, draw(st.sampled_from(sorted(BINARY))), (index, other))
        elif kind == "weight_binary":
            step = Step(kind, draw(st.sampled_from(sorted(BINARY))), (index,),
                        weight_shape=_broadcast_variant(draw, shape))
        elif kind == "matmul" and len(shape) >= 1:
            step = Step(kind, "matmul", (index,), weight_shape=(shape[-1], draw(dims)))
        elif kind == "reduce" and len(shape) >= 2:
            dim = draw(st.integers(0, len(shape) - 1))
            step = Step(kind, draw(st.sampled_from(sorted(REDUCE))), (index,), dims=(dim,), keepdim=draw(st.booleans()))
        elif kind == "transpose" and len(shape) >= 2:
            a, b = draw(st.lists(st.integers(0, len(shape) - 1), min_size=2, max_size=2, unique=True))
            step = Step(kind, "transpose", (index,), dims=(a, b))
        elif kind == "reshape" and len(shape) >= 2:
            merged = shape[:-2] + (shape[-2] * shape[-1],)
            step = Step(kind, "reshape", (index,), shape=merged)
        if step is None:
            step = Step("unary", draw(st.sampled_from(sorted(UNARY))), (index,))
        steps.append(step)
        values.append(_output_shape(step, values))
    return shapes, steps


def _output_shape(step: Step, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The shape `step` gives, worked out by torch on the meta device."""
    values = [torch.empty(s, device="meta") for s in shapes]
    weight = torch.empty(step.weight_shape, device="meta") if step.weight_shape else None
    return tuple(_apply(step, values, weight).shape)


TOLERANCE = {torch.float32: {"rtol": 1e-4, "atol": 1e-5}, torch.bfloat16: {"rtol": 3e-2, "atol": 3e-2}}


@examples(ci=6)
@given(graph=random_graphs(), dtype=st.sampled_from([torch.float32, torch.bfloat16]), seed=st.integers(0, 2**16))
def test_random_graph_matches_eager(graph, dtype, seed):
    import rducc

    shapes, steps = graph
    model = RandomGraph(steps, dtype, seed).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    inputs = tuple(torch.randn(s, generator=generator).to(dtype) for s in shapes)
    with torch.no_grad():
        expected = model(*inputs)
        program = torch.export.export(model, inputs)
    for level in (0, 2):
        got = rducc.compile(program, opt_level=level)(*inputs)
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e, **TOLERANCE[dtype], msg=lambda m: f"-O{level}: {m}")


# --------------------------------------------------------------------------
# (b) random SRAM allocation problems against the independent checker
# --------------------------------------------------------------------------


@st.composite
def allocation_problems(draw) -> list[tuple[tuple[int, ...], int, int | None]]:
    """Buffers as (shape, copies, index of the alloc after which it is freed or None)."""
    count = draw(st.integers(1, 24))
    problem = []
    for index in range(count):
        shape = tuple(draw(st.lists(st.integers(1, 48), min_size=1, max_size=3)))
        copies = draw(st.sampled_from([1, 1, 2]))
        free_after = draw(st.one_of(st.none(), st.integers(index, count - 1)))
        problem.append((shape, copies, free_after))
    return problem


def _allocation_module(problem):
    """@forward allocating each SRAM buffer in turn, freeing each after its chosen alloc."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp, f32

    from rducc.dialects.tier import AllocOp, BufferType, DeallocOp, Tier

    function = func.FuncOp("forward", ((), ()))
    allocs: list[AllocOp] = []
    for index, (shape, copies, _) in enumerate(problem):
        allocs.append(AllocOp(BufferType(Tier.SRAM, shape, f32), buffers=copies))
        function.body.block.add_op(allocs[-1])
        for alloc, (_, _, free_after) in zip(allocs, problem):
            if free_after == index:
                function.body.block.add_op(DeallocOp(alloc.result))
    function.body.block.add_op(func.ReturnOp())
    return ModuleOp([function])


@pytest.fixture(scope="module")
def small_sram_target(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("target") / "sram-16k.toml"
    path.write_text('inherits = "sn40l"\nname = "sram-16k"\nsram_bytes = 16000\npmu_bytes = 1000\n')
    return str(path)


@examples(ci=150)
@given(problem=allocation_problems())
def test_random_allocation_passes_the_checker(problem, small_sram_target):
    from xdsl.context import Context

    from rducc.errors import RduccError
    from rducc.passes.rdu_sram_alloc import RduSramAlloc

    module = _allocation_module(problem)
    module.verify()
    try:
        RduSramAlloc(target=small_sram_target).apply(Context(), module)
    except RduccError as error:
        assert "SRAM exhausted" in str(error)
        assert "over by" in str(error)
        return
    module.verify()  # the tier verifiers agree: no live overlap, within capacity
    function = module.body.block.first_op
    peak, bound = check_placed(module, 16000)
    recorded_peak = function.attributes["tier.sram_peak"].value.data  # of 64-byte aligned sizes
    assert peak <= recorded_peak < peak + 64
    assert bound <= function.attributes["tier.sram_lower_bound"].value.data <= recorded_peak
    raw_total = sum(int(np.prod(shape)) * 4 * copies for shape, copies, _ in problem)
    assert peak <= raw_total + 64 * len(problem)  # never worse than no reuse at all


# --------------------------------------------------------------------------
# (c) random and mutated IR: only diagnostics
# --------------------------------------------------------------------------

def _code(path: Path) -> str:
    """A lit test's MLIR without its `//` comment lines (RUN and CHECK lines)."""
    return "".join(line for line in path.read_text().splitlines(keepends=True)
                   if not line.lstrip().startswith("//"))


SEEDS = [_code(ROOT / "test" / name) for name in
         ("dialects/rdu-roundtrip.mlir", "dialects/tier-roundtrip.mlir", "passes/pipeline.mlir")]
PIPELINE = "rdu-canonicalize,cse,rdu-fuse{level=2},rdu-merge-maps,rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc"
"""The -O2 pipeline, run on half of the mutated inputs."""

TOKENS = ["%", "%0", "{", "}", "(", ")", "<", ">", ":", ",", "=", "x", "0", "-1", "999999999999",
          "tensor<", "!tier.buffer<sram, ", "rdu.map", "rdu.yield", "tier.alloc", "\"", "loc(",
          "^bb0", "f32", "i64", "->", "[", "]", "dense<", "#tier<tier sram>", "offset ", "\n", "@"]


@st.composite
def mutated_ir(draw) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 40)))
        action = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "truncate"]))
        if action == "delete":
            text = text[:start] + text[end:]
        elif action == "insert":
            text = text[:start] + draw(st.sampled_from(TOKENS)) + text[start:]
        elif action == "replace":
            text = text[:start] + draw(st.sampled_from(TOKENS)) + text[end:]
        elif action == "duplicate":
            text = text[:end] + text[start:end] + text[end:]
        else:
            text = text[:start]
    return text


def _opt(path: Path, *flags: str) -> tuple[int, str]:
    """rducc-opt in this process: its exit status and what it printed to stderr."""
    from rducc.tools.opt import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([*flags, str(path)])
    return status, err.getvalue()


@examples(ci=150)
@given(text=st.one_of(mutated_ir(), st.text(max_size=200)), flags=st.sampled_from([(), ("-p", PIPELINE)]))
def test_mutated_ir_gives_only_diagnostics(text, flags, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz", numbered=True) / "input.mlir"
    path.write_text(text)
    status, err = _opt(path, *flags)
    assert status in (0, 1), err
    if status == 1:
        assert err.startswith("rducc-opt: error:"), err
    assert "rducc-opt: internal error" not in err and "Traceback (most recent call last)" not in err, err


def test_the_seeds_parse(tmp_path):
    """Guard: unmutated seeds are valid, so mutations start from real IR."""
    for index, text in enumerate(SEEDS):
        path = tmp_path / f"seed{index}.mlir"
        path.write_text(text)
        status, err = _opt(path)
        assert status == 0, err
