"""Issue 30: mixture-of-experts routing compiled with a per-expert capacity
(`rducc.frontend.capacity`): each expert's rows padded to the bound torch.export
recorded (every token to one expert) or to the user's `capacity`, the pad
masked where it would reach a result, the counts checked at run time.

Each model is compiled once on an example and then run on inputs whose routing
differs from the example's (other per-expert counts), against eager at -O0 and
-O2; a count above a user's capacity is one RduccError naming the op and the
source line, never a wrong result.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from xdsl.dialects.builtin import TensorType

import rducc
from rducc.errors import RduccError


class TopTwo(nn.Module):
    """A hand-written top-2 MoE: `torch.where` per expert, `index_add_` back."""

    def __init__(self, experts: int = 4, width: int = 8) -> None:
        super().__init__()
        self.gate = nn.Linear(width, experts, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(width, 16), nn.SiLU(), nn.Linear(16, width))
                                     for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, chosen = self.gate(x).softmax(-1).topk(2, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token, slot = torch.where(chosen == e)  # marker: routing
            rows = x[token] if e % 2 else x.index_select(0, token)
            out.index_add_(0, token, expert(rows) * weights[token, slot].unsqueeze(-1))
        return out


class SortedSplit(nn.Module):
    """Tokens sorted by expert, split by the per-expert counts, scattered back (`index_copy`)."""

    def __init__(self, experts: int = 3, width: int = 4) -> None:
        super().__init__()
        self.experts = nn.ModuleList(nn.Linear(width, width) for _ in range(experts))

    def forward(self, tokens: torch.Tensor, choice: torch.Tensor) -> torch.Tensor:
        order = torch.argsort(choice, stable=True)
        counts = (choice[:, None] == torch.arange(len(self.experts))).sum(0)
        groups = tokens[order].split(counts.tolist())  # marker: split
        out = torch.cat([expert(group) for expert, group in zip(self.experts, groups)])
        return torch.zeros_like(out).index_copy(0, order, out)


class MaskedScatter(nn.Module):
    """Top-1 routing written back with `index_put` (non-accumulating): even experts' rows
    by `nonzero`, odd experts' by a boolean mask (`out[mask] = expert(x[mask])`), with a
    per-expert row total (`sum` over the padded rows)."""

    def __init__(self, experts: int = 3, width: int = 6) -> None:
        super().__init__()
        self.router = nn.Linear(width, experts)
        self.experts = nn.ModuleList(nn.Linear(width, width) for _ in range(experts))

    def forward(self, x: torch.Tensor):
        choice = self.router(x).argmax(-1)
        out, totals = x.clone(), []
        for e, expert in enumerate(self.experts):
            rows = (choice == e).nonzero().squeeze(1) if e % 2 == 0 else choice == e
            y = expert(x[rows])
            out[rows] = y
            totals.append(y.sum(0))
        return out, torch.stack(totals)


def _line_of(marker: str) -> int:
    """The line of this file that ends with `marker` (the source line an error must name)."""
    lines = Path(__file__).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.endswith(marker))


def _randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _assert_close(got: object, want: object) -> None:
    for g, w in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want), strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


class AllForms(nn.Module):
    """The three hand-written forms in one program (one compile for all)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.top_two, self.split, self.scatter = TopTwo(), SortedSplit(), MaskedScatter()

    def forward(self, x: torch.Tensor, tokens: torch.Tensor, choice: torch.Tensor, y: torch.Tensor):
        return self.top_two(x), self.split(tokens, choice), self.scatter(y)


def _inputs(seed: int) -> tuple[torch.Tensor, ...]:
    choice = torch.randint(0, 3, (6,), generator=torch.Generator().manual_seed(seed))
    return _randn(6, 8, seed=seed), _randn(6, 4, seed=seed + 1), choice, _randn(7, 6, seed=seed + 2)


def _routing(module: AllForms, inputs: tuple[torch.Tensor, ...]) -> tuple:
    x, _, choice, y = inputs
    return (module.top_two.gate(x).topk(2, dim=-1).indices.flatten().bincount(minlength=4).tolist(),
            choice.bincount(minlength=3).tolist(), module.scatter.router(y).argmax(-1).bincount(minlength=3).tolist())


@pytest.fixture(scope="module")
def all_forms() -> tuple[AllForms, torch.export.ExportedProgram]:
    """AllForms and its export for the example `_inputs(0)`, once for both opt levels."""
    from rducc.frontend.loader import export_model

    module = AllForms().eval()
    return module, export_model(module, _inputs(0))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_routing_other_than_the_example_matches_eager(all_forms, opt_level: int) -> None:
    """-O0 with the recorded bound (every token to one expert runs); -O2 with `capacity=5`
    (a count of 6 is one error naming the op and its source line)."""
    module, exported = all_forms
    example = _inputs(0)
    capacity = 5 if opt_level == 2 else None
    program = rducc.compile(exported, opt_level=opt_level, capacity=capacity)
    seen = {tuple(map(tuple, _routing(module, example)))}
    for seed in (1, 3):  # (routings of at most 5 tokens an expert)
        inputs = _inputs(seed)
        seen.add(tuple(map(tuple, _routing(module, inputs))))
        assert max(max(loads) for loads in _routing(module, inputs)) <= 5
        with torch.no_grad():
            _assert_close(program(*inputs), module(*inputs))
    assert len(seen) == 3, "every input must route other than the others"
    x, tokens, choice, y = example
    if capacity is None:
        everything_to_one = torch.full((6,), 2)  # all tokens to one expert: the bound torch.export recorded
        with torch.no_grad():
            _assert_close(program(x, tokens, everything_to_one, y), module(x, tokens, everything_to_one, y))
        with pytest.raises(RduccError) as error:  # a token routed to no expert: the split's sizes sum to 5 of 6
            program(x, tokens, torch.tensor([2, 0, 1, 5, 2, 0]), y)
        message = str(error.value)
        assert "'split_with_sizes': a split size exceeds the capacity of 6 compiled for (or the sizes do not sum " \
            "to 6)" in message
        assert f"test_capacity.py:{_line_of('# marker: split')}:" in message and len(message.splitlines()) == 1
        return
    crowded = x[:1].expand(6, 8).contiguous()  # every token routes as token 0 does: 6 rows to two experts
    with pytest.raises(RduccError) as error:
        program(crowded, tokens, choice, y)
    message = str(error.value)
    assert len(message.splitlines()) == 1
    assert "'nonzero': more elements are selected than the capacity of 5 compiled for" in message
    assert f"test_capacity.py:{_line_of('# marker: routing')}:" in message


class ReducedRows(nn.Module):
    """Two experts' rows (by `nonzero`, by a boolean mask) reduced along the padded rows:
    their mean and attention of a learned query over them as keys and values
    (scaled_dot_product_attention), a softmax over them, the same attention written out
    and their Gram matrix (a matmul contracting the padded rows)."""

    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.router = nn.Linear(width, 2)
        self.query = nn.Parameter(torch.randn(2, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        choice = self.router(x).argmax(-1)
        picked = x[(choice == 0).nonzero().squeeze(1)]  # marker: rows
        masked = x[choice == 1]
        attended = F.scaled_dot_product_attention(self.query[None], picked[None], picked[None])[0]
        scores = (self.query @ masked.T / 2).softmax(-1)
        return torch.cat([picked.mean(0, keepdim=True), attended, (masked.softmax(0) * masked).sum(0, keepdim=True),
                          scores @ masked, masked.T @ masked,  # a contraction over the rows alone
                          masked.amax(0, keepdim=True), masked.amin(0, keepdim=True)])  # marker: extremes


@pytest.fixture(scope="module")
def reduced_rows() -> tuple[ReducedRows, torch.Tensor, torch.Tensor, torch.export.ExportedProgram]:
    """ReducedRows, a pool of rows by the expert it routes to, and the export for 3 of
    each, once for both opt levels."""
    from rducc.frontend.loader import export_model

    torch.manual_seed(0)
    module = ReducedRows().eval()
    pool = _randn(64, 4, seed=9)
    routed = module.router(pool).argmax(-1)
    first, second = pool[routed == 0], pool[routed == 1]
    return module, first, second, export_model(module, (torch.cat([first[:3], second[:3]]),))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_reductions_along_padded_rows_match_eager(reduced_rows, opt_level: int) -> None:
    """mean, softmax, attention, amax and amin along the padded rows mask the pad: -O0
    with the recorded bound (an expert with no rows included; no rows for the amax is
    one error, as eager's), -O2 with `capacity=4` (a count of 5 is one error naming
    the line that makes the rows)."""
    module, first, second, exported = reduced_rows
    capacity = 4 if opt_level == 2 else None
    program = rducc.compile(exported, opt_level=opt_level, capacity=capacity)
    routings = [torch.cat([first[:2], second[:4]]), torch.cat([second[4:5], first[2:6], second[:1]])]
    if capacity is None:
        routings.append(second[:6])  # no row for expert 0
    for x in routings:
        with torch.no_grad():
            torch.testing.assert_close(program(x), module(x), rtol=1e-5, atol=1e-5, equal_nan=True)  # an empty mean
    if capacity is None:
        with pytest.raises(RduccError) as error:  # no row for expert 1: eager's amax refuses too
            program(first[:6])
        message = str(error.value)
        assert len(message.splitlines()) == 1 and "'amax': a data-dependent count is 0" in message
        assert f"test_capacity.py:{_line_of('# marker: extremes')}:" in message
    else:
        with pytest.raises(RduccError) as error:
            program(torch.cat([first[:5], second[:1]]))
        message = str(error.value)
        assert len(message.splitlines()) == 1 and "than the capacity of 4 compiled for" in message
        assert f"test_capacity.py:{_line_of('# marker: rows')}:" in message


# --------------------------------------------------------------------------
# transformers' Mixtral and Qwen2-MoE with the experts loop of transformers 4
# --------------------------------------------------------------------------


def _experts_loop(self: nn.Module, hidden_states: torch.Tensor, top_k_index: torch.Tensor,
                  top_k_weights: torch.Tensor) -> torch.Tensor:
    """transformers 4's experts loop over the stacked expert weights of transformers 5."""
    final = torch.zeros_like(hidden_states)
    mask = F.one_hot(top_k_index, num_classes=self.num_experts).permute(2, 1, 0)
    for e in range(self.num_experts):
        slot, token = torch.where(mask[e])
        state = hidden_states[None, token].reshape(-1, hidden_states.shape[-1])
        gate, up = F.linear(state, self.gate_up_proj[e]).chunk(2, dim=-1)
        out = F.linear(self.act_fn(gate) * up, self.down_proj[e]) * top_k_weights[token, slot, None]
        final.index_add_(0, token, out.to(final.dtype))
    return final


@pytest.fixture(scope="module")
def transformers_module():
    sys.modules.setdefault("torchvision", None)  # type: ignore[arg-type]  (transformers' image utilities are not needed)
    transformers = pytest.importorskip("transformers")
    from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

    ALL_EXPERTS_FUNCTIONS["rducc_test_loop"] = _experts_loop
    return transformers


def _tiny(t, name: str) -> nn.Module:
    common = dict(num_hidden_layers=1, hidden_size=32, num_attention_heads=4, num_key_value_heads=2,
                  vocab_size=100, max_position_embeddings=64, use_cache=False)
    torch.manual_seed(0)
    if name == "mixtral":
        config = t.MixtralConfig(intermediate_size=64, num_local_experts=4, num_experts_per_tok=2, **common)
        model_class = t.MixtralForCausalLM
    else:
        config = t.Qwen2MoeConfig(intermediate_size=64, moe_intermediate_size=16, shared_expert_intermediate_size=32,
                                  num_experts=4, num_experts_per_tok=2, **common)
        model_class = t.Qwen2MoeForCausalLM
    config._experts_implementation = "rducc_test_loop"
    return model_class(config).eval()


@pytest.mark.parametrize("name,opt_level", [("mixtral", 0), ("qwen2_moe", 2)])
def test_transformers_experts_loop_matches_eager_on_other_routing(transformers_module, name: str,
                                                                  opt_level: int) -> None:
    model = _tiny(transformers_module, name)
    ids = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        exported = torch.export.export(model, (ids,))
    targets = {str(n.target) for n in exported.graph.nodes}
    assert {"aten.nonzero.default", "aten.nonzero_numpy.default", "aten.where.default"} & targets
    program = rducc.compile(exported, opt_level=opt_level)
    for seed in (1, 2):
        other = torch.randint(0, 100, (2, 8), generator=torch.Generator().manual_seed(seed))
        with torch.no_grad():
            want = model(other).logits
        got = program(other)
        torch.testing.assert_close(got["logits"] if isinstance(got, dict) else got[0], want, rtol=1e-4, atol=1e-4)


def test_the_cli_compiles_with_a_capacity_and_rducc_run_checks_it(tmp_path: Path, capsys) -> None:
    """`rducc --capacity 5`, then `rducc-run` on routing that fits and on routing that does not."""
    import numpy as np

    from rducc.tools.cli import main as rducc_main
    from rducc.tools.run import main as run_main

    torch.manual_seed(0)
    module = TopTwo().eval()
    x = _randn(6, 8, seed=0)
    archive, program = tmp_path / "moe.pt2", tmp_path / "moe.mlir"
    torch.export.save(torch.export.export(module, (x,)), archive)
    assert rducc_main([str(archive), "--capacity", "5", "-O0", "-o", str(program)]) == 0
    fits, crowded = tmp_path / "fits.npy", tmp_path / "crowded.npy"
    np.save(fits, _randn(6, 8, seed=1).numpy())
    np.save(crowded, x[:1].expand(6, 8).contiguous().numpy())
    assert module.gate(_randn(6, 8, seed=1)).topk(2, dim=-1).indices.flatten().bincount().max() <= 5
    capsys.readouterr()
    assert run_main([str(program), "--input", str(fits), "--output", str(tmp_path / "y.npz")]) == 0
    capsys.readouterr()
    with torch.no_grad():
        want = module(_randn(6, 8, seed=1)).numpy()
    got = np.load(tmp_path / "y.npz")
    np.testing.assert_allclose(got[got.files[0]], want, rtol=1e-5, atol=1e-5)
    assert run_main([str(program), "--input", str(crowded), "--output", str(tmp_path / "z.npz")]) == 1
    error = capsys.readouterr().err.strip()
    assert error.splitlines() == [error] and "more elements are selected than the capacity of 5" in error
    assert not (tmp_path / "z.npz").exists()


# --------------------------------------------------------------------------
# masked_select, repeat_interleave by a tensor, index_put through a mask of two dims
# --------------------------------------------------------------------------


class CountedSelections(nn.Module):
    """The other data-dependent counts padded to capacity: values picked by `masked_select` (reduced),
    tokens picked by a [batch, seq] mask through a linear layer written back by `index_put` (plain and
    accumulating), and rows repeated by a tensor of counts whose total `torch._check` bounds (pooled)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, m: torch.Tensor, r: torch.Tensor, rows: torch.Tensor):
        picked = x[..., 0].masked_select(m)  # marker: masked_select
        y = self.lin(x[m])
        out = torch.zeros_like(x)
        out[m] = y
        added = x.clone().index_put_((m,), y.relu(), accumulate=True)
        repeated = rows.repeat_interleave(r, dim=0)  # marker: repeats
        torch._check(repeated.shape[0] <= 9)
        return picked.sum(), picked.amax(), out, added, repeated.mean(0)


def _selection_inputs(tokens: int, repeats: list[int], seed: int = 0) -> tuple[torch.Tensor, ...]:
    """`tokens` of the 10 positions selected (a mask in no order of the example's), rows repeated by `repeats`."""
    m = torch.zeros(10, dtype=torch.bool)
    m[torch.randperm(10, generator=torch.Generator().manual_seed(seed))[:tokens]] = True
    return _randn(2, 5, 4, seed=seed), m.view(2, 5), torch.tensor(repeats), _randn(3, 4, seed=seed + 1)


@pytest.fixture(scope="module")
def counted_selections() -> tuple[CountedSelections, torch.export.ExportedProgram]:
    from rducc.frontend.loader import export_model

    module = CountedSelections().eval()
    return module, export_model(module, _selection_inputs(5, [1, 2, 1]))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_counted_selections_match_eager_for_counts_up_to_the_capacity(counted_selections, opt_level: int) -> None:
    """-O0 with the recorded bounds (10 tokens, 9 repeated rows), -O2 with `capacity=8`: counts smaller
    than, equal to and larger than the example's match eager; one over the capacity is one error naming
    the op and its source line."""
    module, exported = counted_selections
    capacity = 8 if opt_level == 2 else None
    program = rducc.compile(exported, opt_level=opt_level, capacity=capacity)
    runs = [(3, [0, 2, 0]), (5, [1, 2, 1]), (7, [3, 2, 3]), (0, [0, 0, 1])]
    runs += [(10, [3, 3, 3])] if capacity is None else [(8, [4, 4, 0])]
    for seed, (tokens, repeats) in enumerate(runs):
        inputs = _selection_inputs(tokens, repeats, seed)
        if not tokens:  # eager's amax of no element is its error; the program's is one line
            with pytest.raises(RduccError, match="'amax': a data-dependent count is 0"):
                program(*inputs)
            continue
        with torch.no_grad():
            _assert_close(program(*inputs), module(*inputs))
    over = _selection_inputs(5, [4, 3, 3]) if capacity is None else _selection_inputs(9, [1, 2, 1])
    with pytest.raises(RduccError) as error:
        program(*over)
    message = str(error.value)
    marker = "# marker: repeats" if capacity is None else "# marker: masked_select"
    op = "'repeat_interleave': the repeats sum to more" if capacity is None else "'masked_select': the mask selects more"
    assert len(message.splitlines()) == 1 and op in message and f"capacity of {capacity or 9} compiled for" in message
    assert f"test_capacity.py:{_line_of(marker)}:" in message


def test_counted_selections_through_the_cli(tmp_path: Path, capsys, counted_selections) -> None:
    """`rducc --capacity 8`, then `rducc-run` on fewer and more tokens than the example's and on more than 8."""
    import numpy as np

    from rducc.tools.cli import main as rducc_main
    from rducc.tools.run import main as run_main

    module, exported = counted_selections
    archive, program = tmp_path / "selections.pt2", tmp_path / "selections.mlir"
    torch.export.save(exported, archive)
    assert rducc_main([str(archive), "--capacity", "8", "-O2", "-o", str(program)]) == 0
    for name, (tokens, repeats) in {"fewer": (3, [0, 2, 0]), "more": (7, [3, 2, 3]), "over": (9, [1, 2, 1])}.items():
        inputs = _selection_inputs(tokens, repeats, seed=tokens)
        files = []
        for k, tensor in enumerate(inputs):
            files += ["--input", str(tmp_path / f"{name}-{k}.npy")]
            np.save(files[-1], tensor.numpy())
        capsys.readouterr()
        status = run_main([str(program), *files, "--output", str(tmp_path / f"{name}.npz")])
        if name == "over":
            error = capsys.readouterr().err.strip()
            assert status == 1 and error.splitlines() == [error] and "capacity of 8 compiled for" in error
            assert not (tmp_path / f"{name}.npz").exists()
            continue
        assert status == 0
        saved = np.load(tmp_path / f"{name}.npz")
        with torch.no_grad():
            want = module(*inputs)
        got = [saved[n] for n in saved.files if n.startswith("output_") and "." not in n]
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-5)


class ManyRepeats(nn.Module):
    """Each of 64 rows repeated by its count, the total bounded by 256 (`torch._check`)."""

    def forward(self, rows: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        repeated = rows.repeat_interleave(counts, dim=0)
        torch._check(repeated.shape[0] <= 256)
        return repeated.sum(0)


def test_repeats_padded_to_a_capacity_take_memory_linear_in_it() -> None:
    """`repeat_interleave`'s padded index is counted from one mark per running sum, not a
    [capacity, repeats] comparison: no value of the program has 256 x 64 elements, and counts
    that sum to 0, to fewer and to exactly the capacity match eager."""
    from rducc.frontend.loader import export_model

    def counts(total: int, seed: int) -> torch.Tensor:
        picked = torch.randint(0, 64, (total,), generator=torch.Generator().manual_seed(seed))
        return torch.bincount(picked, minlength=64)

    rows = _randn(64, 3, seed=0)
    program = rducc.compile(export_model(ManyRepeats(), (rows, counts(100, 0))), opt_level=0)
    sizes = [math.prod(r.type.get_shape()) for op in program.module.walk() for r in op.results
             if isinstance(r.type, TensorType)]
    assert 256 <= max(sizes) < 256 * 64
    for seed, total in enumerate((100, 256, 37, 0)):
        given = counts(total, seed + 1)
        _assert_close(program(rows, given), ManyRepeats()(rows, given))


class ReadCounts(nn.Module):
    """Sizes read with `.item()` that pad to a capacity: a slice `x[1:n]` (its own count, as
    torch.export makes it without a check), a prefix to a checked end, and `topk` with k read
    from a tensor (the k largest per row, reduced; their indices averaged)."""

    def forward(self, x: torch.Tensor, n: torch.Tensor, m: torch.Tensor, k: torch.Tensor):
        head = x[1:n.item()]  # marker: prefix
        end = m.item()
        torch._check(end >= 2)
        torch._check(end <= 5)
        values, where = torch.topk(x, k.item(), dim=-1)  # marker: topk
        return (head.sum(0), torch.softmax(head, 0).sum(0), (x[:end] * 2).mean(0), values.sum(-1),
                where.float().mean(-1))


def _read_inputs(n: int, m: int, k: int) -> tuple[torch.Tensor, ...]:
    return _randn(6, 4, seed=n + 7 * k), torch.tensor(n), torch.tensor(m), torch.tensor(k)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_sizes_read_with_item_pad_to_a_capacity_and_match_eager(opt_level: int) -> None:
    """Compiled on n=3, end=4, k=2; other values (negative and past the end for the slice, as Python's
    slicing takes them; 0 and all of a row for topk) match eager; an end below its `torch._check` and a
    k past the row are one error naming the op and its line."""
    from rducc.frontend.loader import export_model

    module = ReadCounts()
    program = rducc.compile(export_model(module, _read_inputs(3, 4, 2)), opt_level=opt_level)
    for n, m, k in [(3, 4, 2), (5, 2, 4), (1, 5, 0), (-2, 3, 1), (9, 5, 4), (6, 2, 3), (0, 4, 1)]:
        got, want = program(*_read_inputs(n, m, k)), module(*_read_inputs(n, m, k))
        for g, w in zip(got, want, strict=True):  # (k = 0: the mean of no index is NaN, as in eager)
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, equal_nan=True)
    for inputs, op, marker in [(_read_inputs(3, 1, 2), "the condition m.item() >= 2 does not hold", None),
                               (_read_inputs(3, 4, 5), "the condition k.item() <= 4 does not hold", "topk")]:
        with pytest.raises(RduccError) as error:
            program(*inputs)
        message = str(error.value)
        assert len(message.splitlines()) == 1 and op in message, message
        line = "" if marker is None else f"{_line_of('# marker: ' + marker)}:"
        assert f"test_capacity.py:{line}" in message, message


class AffineCounts(nn.Module):
    """Sizes that are affine functions of one number read with `.item()`: a slice with a start (`x[1:e]`,
    `e - 1` rows once `e` is checked), a slice with both bounds read, `narrow` (whose length torch.export
    checks against the width), a split whose second size is computed (`[e, 6 - e]`), and a prefix
    whose count carries other `torch._check` conditions (`m > 0`, `m % 2 == 0`)."""

    def forward(self, x: torch.Tensor, n: torch.Tensor, a: torch.Tensor, b: torch.Tensor, k: torch.Tensor,
                m: torch.Tensor):
        e = n.item()  # marker: affine read
        torch._check(e >= 1)
        torch._check(e <= x.shape[0])
        first, rest = x.split([e, x.shape[0] - e])
        even = m.item()  # marker: even read
        torch._check(even > 0)
        torch._check(even % 2 == 0)
        return (x[1:e].sum(0), torch.softmax(x[1:e], 0).sum(0), x[a.item():b.item()].sum(0),
                x.narrow(1, 1, k.item()).sum(1), first.amax(0), rest.sum(0), x[:even].mean(0))


def _affine_inputs(n: int, a: int, b: int, k: int, m: int = 2) -> tuple[torch.Tensor, ...]:
    return (_randn(6, 4, seed=n + 3 * a + 5 * b + 7 * k), *(torch.tensor(v) for v in (n, a, b, k, m)))


@pytest.fixture(scope="module")
def affine_program() -> rducc.Program:
    from rducc.frontend.loader import export_model

    return rducc.compile(export_model(AffineCounts(), _affine_inputs(3, 1, 4, 2)), opt_level=0)


def test_affine_counts_of_a_read_pad_to_a_capacity_and_match_eager(affine_program: rducc.Program) -> None:
    """Compiled on e=3, x[1:4], k=2, m=2; other values match eager: the capacity's edge (e=6: five rows of
    x[1:e] and a split of [6, 0]; the whole width for narrow; m=6), the least (e=1: no row; k=0), bounds
    negative and past the end. Each value eager refuses is one error naming its condition and
    the line that read the count (`torch._check(e >= 1)`, narrow's `k <= 3`, `m % 2 == 0`), never a result."""
    module = AffineCounts()
    for n, a, b, k, m in [(6, 0, 6, 3, 6), (1, -3, -1, 0, 4), (5, 4, 9, 1, 2)]:
        got, want = affine_program(*_affine_inputs(n, a, b, k, m)), module(*_affine_inputs(n, a, b, k, m))
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5, equal_nan=True)
    for values, condition, marker in [((0, 1, 4, 2, 2), "n.item() >= 1", "affine read"),
                                      ((7, 1, 4, 2, 2), "n.item() <= 6", "affine read"),
                                      ((3, 1, 4, 4, 2), "k.item() <= 3", None),
                                      ((3, 1, 4, 2, 3), "m.item() % 2 == 0", "even read")]:
        with pytest.raises(RduccError) as error:
            affine_program(*_affine_inputs(*values))
        message = str(error.value)
        assert len(message.splitlines()) == 1 and f"the condition {condition} does not hold" in message, message
        line = "" if marker is None else f"{_line_of('# marker: ' + marker)}:"
        assert f"test_capacity.py:{line}" in message, message


def test_a_capacity_below_a_checked_least_count_is_one_compile_error() -> None:
    """`torch._check(e >= 1)` and a capacity of 0 rows past the start: no input could run."""
    from rducc.frontend.loader import export_model

    class AtLeastTwo(nn.Module):
        def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
            e = n.item()
            torch._check(e >= 2)
            torch._check(e <= x.shape[0])
            return x[:e].sum(0)

    exported = export_model(AtLeastTwo(), (_randn(6, 4, seed=0), torch.tensor(3)))
    with pytest.raises(RduccError, match="the capacity of 1 is below the 2 rows torch.export requires"):
        rducc.compile(exported, opt_level=0, capacity=1)


class CountAsDivisor(nn.Module):
    """The positive elements' sum over their count, read from the nonzero positions' shape through
    Python's max (a number computed from a padded count, taken as a value)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        idx = (x > 0).nonzero()
        return x.clamp(min=0).sum() / max(idx.shape[0], 1)


def test_a_number_computed_from_a_padded_count_reads_it_at_run_time() -> None:
    """It was the example's count, unchecked: other counts gave wrong results."""
    program = rducc.compile(torch.export.export(CountAsDivisor(), (_randn(4, 6, seed=0),)), opt_level=0)
    for x in (_randn(4, 6, seed=1), _randn(4, 6, seed=2).abs(), -_randn(4, 6, seed=3).abs()):
        torch.testing.assert_close(program(x), CountAsDivisor()(x))
