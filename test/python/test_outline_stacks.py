"""Outlining never changes what a model computes (issue 31): stacks of blocks
whose widths or channel counts change along the stack compile at -O0 and -O2
through `rducc.compile`, `rducc` and `rducc deploy` and match eager; the
blocks that do repeat (same op, type and attribute in every call) are still
outlined; and a hypothesis property builds random stacks (linear, conv, norm,
attention blocks, random widths, some repeated) and checks them against eager.

CI runs a few random stacks plus the explicit examples; `RDUCC_FUZZ_EXAMPLES`
runs more, as in test_properties.py.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from torch import nn

import rducc
from rducc.tools import cli, deploy, run

WIDTHS = (4, 8)
"""Few widths, so that random stacks repeat some blocks and change others."""


def examples(ci: int) -> settings:
    """`ci` examples, or RDUCC_FUZZ_EXAMPLES of them; no deadline (compiles vary)."""
    count = int(os.environ.get("RDUCC_FUZZ_EXAMPLES", ci))
    return settings(max_examples=count, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# -- the blocks ------------------------------------------------------------------


class LinearBlock(nn.Module):
    """`Linear(width_in, width_out)` and a GELU."""

    def __init__(self, width_in: int, width_out: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width_in, width_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(self.proj(x))


class NormBlock(nn.Module):
    """A pre-norm residual MLP of one width."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 2 * width)
        self.down = nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.relu(self.up(self.norm(x))))


class AttentionBlock(nn.Module):
    """Causal self-attention of one width, written out (heads split by reshape)."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, width = x.shape
        q, k, v = self.qkv(x).split(width, dim=-1)
        q, k, v = (t.reshape(batch, tokens, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(width // self.heads)
        mask = torch.ones(tokens, tokens, dtype=torch.bool).tril()
        attended = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        return x + self.out(attended.transpose(1, 2).reshape(batch, tokens, width))


class ConvBlock(nn.Module):
    """`Conv2d(channels_in, channels_out)`, a GroupNorm and a ReLU."""

    def __init__(self, channels_in: int, channels_out: int, kernel: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels_in, channels_out, kernel, padding=kernel // 2)
        self.norm = nn.GroupNorm(2, channels_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.conv(x)))


class Stack(nn.Module):
    """Blocks applied in turn, held in an `nn.ModuleList` or an `nn.Sequential`."""

    def __init__(self, blocks: list[nn.Module], sequential: bool) -> None:
        super().__init__()
        self.layers = nn.Sequential(*blocks) if sequential else nn.ModuleList(blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.layers:
            x = block(x)
        return x


# -- a stack from a recipe ---------------------------------------------------------

Recipe = tuple[str, int, tuple[tuple[str, int, int], ...], bool]
"""(domain `sequence` or `image`, input width, blocks (kind, width out, option), sequential)."""


def build(recipe: Recipe, seed: int) -> tuple[nn.Module, torch.Tensor]:
    """The stack a recipe describes, with seeded weights, and an input for it."""
    domain, width, blocks, sequential = recipe
    shape = (2, width, 5, 5) if domain == "image" else (2, 3, width)
    torch.manual_seed(seed)
    modules: list[nn.Module] = []
    for kind, width_out, option in blocks:
        if kind == "linear":
            modules.append(LinearBlock(width, width_out))
            width = width_out
        elif kind == "norm":
            modules.append(NormBlock(width))
        elif kind == "attention":
            modules.append(AttentionBlock(width, option))
        else:
            modules.append(ConvBlock(width, width_out, option))
            width = width_out
    return Stack(modules, sequential).eval(), torch.randn(shape)


@st.composite
def recipes(draw) -> Recipe:
    """A random stack: 2-5 blocks, each width drawn from WIDTHS (some repeat, some change)."""
    domain = draw(st.sampled_from(["sequence", "image"]))
    width = draw(st.sampled_from(WIDTHS))
    kinds = ["linear", "norm", "attention"] if domain == "sequence" else ["conv"]
    blocks = []
    for _ in range(draw(st.integers(2, 5))):
        kind = draw(st.sampled_from(kinds))
        option = draw(st.sampled_from([1, 3])) if kind == "conv" else draw(st.sampled_from([1, 2]))
        blocks.append((kind, draw(st.sampled_from(WIDTHS)), option))
    return domain, width, tuple(blocks), draw(st.booleans())


def check_against_eager(model: nn.Module, x: torch.Tensor) -> dict[int, rducc.Program]:
    """Compile at -O0 and -O2 and compare each program's result with eager's."""
    with torch.no_grad():
        expected = model(x)
    exported = torch.export.export(model, (x,))
    programs = {}
    for level in (0, 2):
        programs[level] = rducc.compile(exported, opt_level=level)
        got = programs[level](x)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5, msg=lambda m, level=level: f"-O{level}: {m}")
    return programs


WIDENING: Recipe = ("sequence", 4, (("linear", 8, 0), ("linear", 8, 0), ("linear", 4, 0)), True)
CHANNELS: Recipe = ("image", 4, (("conv", 8, 3), ("conv", 8, 3), ("conv", 4, 1)), False)


@examples(ci=6)
@given(recipe=recipes(), seed=st.integers(0, 2**16))
@example(recipe=WIDENING, seed=0)
@example(recipe=CHANNELS, seed=1)
@example(recipe=("sequence", 8, (("attention", 8, 2), ("linear", 4, 0), ("attention", 4, 2),
                                 ("norm", 4, 0), ("norm", 4, 0)), False), seed=2)
def test_random_stack_matches_eager(recipe, seed):
    model, x = build(recipe, seed)
    check_against_eager(model, x)


# -- the models, through every entry point --------------------------------------


class Widening(nn.Module):
    """The issue's plain Sequential: widths 16 -> 64 -> 64 -> 8."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _layer_calls(program: rducc.Program) -> tuple[int, str | None]:
    """How many calls of @layer the program makes, and the layer it was outlined from."""
    text = program.mlir
    start = text.find("rdu.outlined_from = ")
    origin = text[start:].split('"')[1] if start >= 0 else None
    return text.count("func.call @layer("), origin


def test_widening_sequential_compiles_and_matches_eager():
    programs = check_against_eager(Widening().eval(), torch.randn(4, 16))
    for program in programs.values():  # only the two ReLUs of one shape are alike
        assert _layer_calls(program) == (2, "net.1")


def test_repeated_middle_of_a_changing_stack_is_still_outlined():
    """Widths 16 -> 8 -> 8 -> 8 -> 4: the three 8 -> 8 blocks are one @layer."""
    torch.manual_seed(0)
    blocks: list[nn.Module] = [LinearBlock(16, 8), LinearBlock(8, 8), LinearBlock(8, 8), LinearBlock(8, 8),
                               LinearBlock(8, 4)]
    programs = check_against_eager(Stack(blocks, sequential=False).eval(), torch.randn(2, 3, 16))
    for program in programs.values():
        assert _layer_calls(program) == (3, "layers.1")


def test_conv_stack_whose_channels_change_matches_eager():
    model, x = build(CHANNELS, 3)
    programs = check_against_eager(model, x)
    assert all(_layer_calls(p) == (0, None) for p in programs.values())  # no two blocks alike


class Pool(nn.Module):
    """A block whose result has one shape whatever its input's width: (B, T, W) -> (B, T, 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(-1, keepdim=True) * self.scale


def test_blocks_alike_but_for_their_inputs_width_are_not_one_layer():
    """Every op and result of the two blocks agree; only the input differs (width
    8, then 1): neither the importer's layer reuse nor the pass may merge them."""
    torch.manual_seed(0)
    programs = check_against_eager(Stack([Pool(), Pool()], sequential=False).eval(), torch.randn(2, 3, 8))
    assert all(_layer_calls(p) == (0, None) for p in programs.values())
    torch.manual_seed(0)
    programs = check_against_eager(Stack([Pool(), Pool(), Pool()], sequential=False).eval(), torch.randn(2, 3, 8))
    assert all(_layer_calls(p) == (2, "layers.1") for p in programs.values())  # the two 1-wide ones are


@pytest.fixture(scope="module")
def widening_files(tmp_path_factory) -> tuple[Path, Path, np.ndarray]:
    """The issue's model saved as an archive, an input as .npy and eager's output."""
    folder = tmp_path_factory.mktemp("widening")
    model, x = Widening().eval(), torch.randn(4, 16)
    torch.export.save(torch.export.export(model, (x,)), folder / "widening.pt2")
    np.save(folder / "x.npy", x.numpy())
    with torch.no_grad():
        return folder / "widening.pt2", folder / "x.npy", model(x).numpy()


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_widening_through_the_cli_matches_eager(widening_files, level, tmp_path):
    archive, x, expected = widening_files
    out = tmp_path / "out.mlir"
    assert cli.main([str(archive), level, "-o", str(out)]) == 0
    assert run.main([str(out), "--input", str(x), "--output", str(tmp_path / "y.npz")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npz")["output_0"], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("level", ["0", "2"])
def test_widening_through_deploy_matches_eager(widening_files, level, tmp_path):
    archive, x, expected = widening_files
    out = tmp_path / "deployment"
    assert deploy.main([str(archive), "-O", level, "--target", "sn40l", "-o", str(out)]) == 0
    argv = [str(out), "--model", "widening", "--input", str(x), "--output", str(tmp_path / "y.npz")]
    assert run.main(argv) == 0
    np.testing.assert_allclose(np.load(tmp_path / "y.npz")["output_0"], expected, rtol=1e-4, atol=1e-5)
