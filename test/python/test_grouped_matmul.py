"""`rdu.grouped_matmul`: a mixture of experts' rows each multiplied by its own
expert only (transformers' `grouped_mm_fallback`, issue 32), against the loop
transformers runs in eager.

The compiled program takes the offsets as an input, so one program runs routings
other than the example's; every expert's matrix differs, so a row multiplied
by a neighbouring expert (an off-by-one start, a skipped empty expert) gives
another result.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rducc
from rducc.runtime import kernels

transformers_moe = pytest.importorskip("transformers.integrations.moe")

ROWS, K, N, EXPERTS = 12, 16, 8, 4


def _eager(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    return torch.ops.transformers.grouped_mm_fallback(x, w, offs)


class Experts(torch.nn.Module):
    """Rows sorted by expert through an expert table stored [E, N, K] (as
    transformers' MixtralExperts keeps it), then a second grouped product."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Parameter(torch.randn(EXPERTS, N, K))
        self.down = torch.nn.Parameter(torch.randn(EXPERTS, N, K))

    def forward(self, x: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(_eager(x, self.up.transpose(-2, -1), offs))
        return _eager(hidden, self.down, offs)


ROUTINGS = [
    [3, 6, 9, 12],  # the example: three rows each
    [0, 5, 5, 12],  # experts 0 and 2 take no row
    [12, 12, 12, 12],  # every row to expert 0
    [1, 2, 3, 7],  # rows 7.. are taken by no expert: zero
    [0, 0, 0, 12],  # every row to the last expert
]


@pytest.fixture(scope="module")
def compiled() -> tuple[Experts, rducc.Program]:
    torch.manual_seed(0)
    model = Experts().eval()
    example = (torch.randn(ROWS, K), torch.tensor(ROUTINGS[0], dtype=torch.int32))
    with torch.no_grad():
        exported = torch.export.export(model, example)
    return model, rducc.compile(exported, opt_level=2)


@pytest.mark.parametrize("offsets", ROUTINGS, ids=["even", "empty-experts", "all-first", "rows-untaken", "all-last"])
def test_each_row_meets_its_own_expert(compiled: tuple[Experts, rducc.Program], offsets: list[int]) -> None:
    model, program = compiled
    x, offs = torch.randn(ROWS, K), torch.tensor(offsets, dtype=torch.int32)
    with torch.no_grad():
        expected = model(x, offs)
    torch.testing.assert_close(torch.as_tensor(program(x, offs)), expected, rtol=1e-5, atol=1e-5)


def test_the_program_multiplies_each_row_once(compiled: tuple[Experts, rducc.Program]) -> None:
    """The IR holds grouped products with the expert tables read as stored (no
    transpose, no all-experts product): the FLOPs are one expert per row."""
    text = str(compiled[1].module)
    assert text.count("rdu.grouped_matmul") == 2 and "transpose_rhs" in text
    assert f"{EXPERTS}x{ROWS}x{N}" not in text  # no product of every row by every expert


def test_kernel_follows_the_fallback_loop_on_any_offsets() -> None:
    """Offsets that do not rise, run past the rows or are negative follow Python's
    slices exactly as transformers' loop does."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, K)).astype(np.float32)
    w = rng.standard_normal((EXPERTS, K, N)).astype(np.float32)
    for offsets in ([3, 6, 9, 12], [5, 2, 9, 20], [0, -4, 3, 3], [7, 7, 7, 7]):
        offs = np.array(offsets, dtype=np.int64)
        expected = _eager(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(offs)).numpy()
        out = np.full((ROWS, N), np.nan, np.float32)
        kernels.grouped_matmul(x, w, offs, out=out)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
        transposed = kernels.grouped_matmul(x, np.ascontiguousarray(w.swapaxes(1, 2)), offs, transpose_rhs=True)
        np.testing.assert_allclose(transposed, expected, rtol=1e-5, atol=1e-5)


def test_kernel_gives_eagers_grouped_mm_bits() -> None:
    """f32 experts give eager's `torch._grouped_mm` bit for bit (ATen's CPU
    loop of `mm_out`), a group of one row (0.5M multiply-adds: numpy's BLAS
    ran it before, other bits) and rows no expert takes (zero) included."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((48, 1024)).astype(np.float32)
    w = rng.standard_normal((4, 512, 1024)).astype(np.float32)  # [E, N, K], as MixtralExperts stores it
    offs = np.array([1, 3, 3, 40], dtype=np.int32)
    expected = torch._grouped_mm(torch.from_numpy(x), torch.from_numpy(w).transpose(-2, -1),
                                 offs=torch.from_numpy(offs)).numpy()
    out = np.full((48, 512), np.nan, np.float32)
    kernels.grouped_matmul(x, w, offs, transpose_rhs=True, out=out)
    assert np.array_equal(out[:40], expected[:40]) and not out[40:].any()


class TorchExperts(torch.nn.Module):
    """The same experts by torch's own grouped matmul (`torch._grouped_mm`, transformers'
    default experts on bf16): `aten._grouped_mm` is imported as `rdu.grouped_matmul`,
    not run on the host."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Parameter(torch.randn(EXPERTS, N, K, dtype=torch.bfloat16))
        self.down = torch.nn.Parameter(torch.randn(EXPERTS, N, K, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(torch._grouped_mm(x, self.up.transpose(-2, -1), offs=offs))
        return torch._grouped_mm(hidden, self.down, offs=offs)


def test_torch_grouped_mm_runs_on_the_chip_as_eager() -> None:
    torch.manual_seed(0)
    model = TorchExperts().eval()
    example = (torch.randn(ROWS, K, dtype=torch.bfloat16), torch.tensor(ROUTINGS[0], dtype=torch.int32))
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, example), opt_level=2)
    text = str(program.module)
    assert text.count("rdu.grouped_matmul") == 2 and "rdu.host_call" not in text
    for offsets in ROUTINGS[:3]:
        x, offs = torch.randn(ROWS, K, dtype=torch.bfloat16), torch.tensor(offsets, dtype=torch.int32)
        with torch.no_grad():
            expected = model(x, offs)
        torch.testing.assert_close(torch.as_tensor(program(x, offs)).float(), expected.float(), rtol=2e-2, atol=2e-2)


def test_torch_grouped_mm_along_k_decomposes_as_eager() -> None:
    """The gradient form (rank 2 by rank 2, grouped along K: one product a group) and
    the batched form (rank 3 by rank 3) are decomposed, not refused or run on the host."""
    torch.manual_seed(0)

    class AlongK(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor, offs: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
            return torch._grouped_mm(a, b, offs=offs) + torch._grouped_mm(c, b.unsqueeze(0).expand(EXPERTS, K, N))

    a, b = torch.randn(ROWS, K, dtype=torch.bfloat16), torch.randn(K, N, dtype=torch.bfloat16)
    c, offs = torch.randn(EXPERTS, ROWS, K, dtype=torch.bfloat16), torch.tensor([4, 4, 12, 16], dtype=torch.int32)
    program = rducc.compile(torch.export.export(AlongK(), (a, b, offs, c)), opt_level=2)
    assert "rdu.host_call" not in str(program.module)
    torch.testing.assert_close(torch.as_tensor(program(a, b, offs, c)).float(), AlongK()(a, b, offs, c).float(),
                               rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("tp", [2])
def test_tiny_mixtral_splits_every_experts_ffn_across_sockets_as_eager(tp: int) -> None:
    """transformers' Mixtral on its default experts path (`rdu.grouped_matmul`) at tp
    sockets: each socket holds a 1/tp slice of every expert's ffn dim (the gate/up table
    by its output columns per block, the down table by its input columns), the down
    product's partial sums are all-reduced, and the logits are eager's."""
    from test_deepseek_v3 import Logits
    from transformers import MixtralConfig, MixtralForCausalLM

    from rducc.api import after
    from rducc.dialects.rdu.collectives import AllGatherOp, AllReduceOp
    from rducc.dialects.rdu.dataflow import GroupedMatmulOp
    from rducc.dialects.tier import GlobalOp
    from rducc.passes.rdu_partition import RduPartition

    config = MixtralConfig(num_hidden_layers=1, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                           num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, vocab_size=96,
                           max_position_embeddings=64, use_cache=False)
    torch.manual_seed(0)
    model, ids = Logits(MixtralForCausalLM(config).eval()).eval(), torch.randint(0, 96, (1, 3))
    program = rducc.compile(torch.export.export(model, (ids,)), (ids,), target="sn40l-8", opt_level=0,
                            passes=[after("rdu-canonicalize", RduPartition(tp=tp))])
    tables = {g.sym_name.data: g.global_type.get_shape() for g in program.module.walk()
              if isinstance(g, GlobalOp) and ".experts." in g.sym_name.data}
    assert tables == {"model.model.layers.0.mlp.experts.gate_up_proj": (4, 96 // tp, 32),
                      "model.model.layers.0.mlp.experts.down_proj": (4, 32, 48 // tp)}, tables
    ops = list(program.module.walk())
    assert sum(isinstance(op, GroupedMatmulOp) for op in ops) == 2
    reduced = [op.results[0].type.get_shape() for op in ops if isinstance(op, AllReduceOp)]
    gathered = [op.results[0].type.get_shape() for op in ops if isinstance(op, AllGatherOp)]
    assert (6, 32) in reduced, reduced  # the down product's partial sums, a row a token-expert pair
    assert not any(shape[-1] in (48, 96) for shape in gathered), gathered  # no ffn slice gathered
    with torch.no_grad():
        expected = model(ids).numpy()
    np.testing.assert_allclose(np.asarray(program(ids)), expected, rtol=1e-5, atol=1e-5)
