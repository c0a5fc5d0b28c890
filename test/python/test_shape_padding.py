"""Padding a call up to a larger shape bucket (docs/shapes.md, "Padding"):
`padding_plan` decides per dynamic dim from the program whether padding it can
change a real result, and a padded run matches eager at the real size. The
GPT-2 (CLI, --pad-dims seq) and MLP (Python, batch found safe) padded runs are
in test_shapes.py, on the programs compiled there."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from torch.export import Dim

import rducc
from rducc.errors import RduccError
from rducc.frontend.dynamic_dims import dynamic_dims
from rducc.shapes.padding import padding_plan
from rducc.tools.run import main as run_main


class RowWise(nn.Module):
    """Rows never meet: a linear, a layer norm over features, a softmax over features, a conv per sample."""

    def __init__(self):
        super().__init__()
        self.proj, self.norm, self.conv = nn.Linear(8, 8), nn.LayerNorm(8), nn.Conv1d(4, 4, 3, padding=1)

    def forward(self, x):
        y = self.norm(self.proj(x))
        return torch.softmax(self.conv(y), -1), y.flatten(1)


class Centered(nn.Module):
    """x - x.std(0): every row reads every other (a spread over the real rows: masked)."""

    def forward(self, x):
        return x - x.std(0)


class ScaledBySize(nn.Module):
    """Reads its batch size as a number: a padded call would divide by the padded size."""

    def forward(self, x):
        return x.sum(-1) / x.shape[0]


class Gram(nn.Module):
    """x.T @ x contracts over the rows (their pads masked to zeros)."""

    def forward(self, x):
        return x.transpose(0, 1) @ x


class UnpackedHeads(nn.Module):
    """q, k, v unpacked from a stacked projection (an unbind along its leading, unpadded dim of 3)."""

    def forward(self, x):
        q, k, v = x.view(x.shape[0], 5, 3, 4).permute(2, 0, 1, 3)
        return q * k + v


class Flattened(nn.Module):
    """x.t().reshape(-1): the rows end up interleaved in the one output dim."""

    def forward(self, x):
        return x.t().reshape(-1)


class FlattenedAndBack(nn.Module):
    """The same, viewed back to [4, batch] and transposed: rows are whole again."""

    def forward(self, x):
        return x.t().reshape(-1).reshape(4, -1).t() * 2


class MaskedAttention(nn.Module):
    """Self-attention with a key mask whose projection runs over `seq*batch` rows laid
    out seq-first (as torch's batch-first MultiheadAttention does): a padded key the
    mask does not hide changes every real position, so a leaked pad fails the comparison."""

    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(8, 24), nn.Linear(8, 8)

    def forward(self, x, mask):
        batch, seq, width = x.shape
        rows = self.qkv(x.transpose(0, 1).reshape(seq * batch, width))  # the batch inside seq*batch rows
        q, k, v = rows.reshape(seq, batch, 24).transpose(0, 1).chunk(3, -1)
        scores = (q @ k.transpose(-1, -2) / 8**0.5).masked_fill(mask[:, None, :] == 0, float("-inf"))
        return self.out(torch.softmax(scores, -1) @ v)


def _plan(model, example, dynamic_shapes, vouched=()):
    with torch.no_grad():
        program = torch.export.export(model.eval(), example, dynamic_shapes=dynamic_shapes)
    return padding_plan(program, dynamic_dims(program), vouched)


def test_the_plan_pads_rows_that_never_meet_and_names_the_op_that_mixes_them():
    batch = Dim("batch", min=1, max=16)
    plan = _plan(RowWise(), (torch.randn(3, 4, 8),), ({0: batch},))
    assert plan.dims == ["batch"] and plan.inputs == [["batch", "", ""]]
    assert plan.outputs == [["batch", "", ""], ["batch", ""]]
    plan = _plan(ScaledBySize(), (torch.randn(3, 8),), ({0: batch},))
    assert plan.dims == [] and "reads the padded size as a value" in plan.refused["batch"], plan.refused
    for model, op in ((Centered, "std"), (Gram, "matmul")):  # read through the hidden validity input
        plan = _plan(model(), (torch.randn(3, 8),), ({0: batch},))
        assert plan.dims == ["batch"] and plan.fills == ["", "valid"], (model.__name__, plan)
        assert [site.node for site in plan.masks["batch"]] == [op] * (1 + (op == "matmul")), plan.masks
    plan = _plan(UnpackedHeads(), (torch.randn(3, 5, 12),), ({0: batch},))  # unbind's default dim is 0
    assert plan.dims == ["batch"], plan.refused
    plan = _plan(Flattened(), (torch.randn(3, 4),), ({0: batch},))
    assert "output 0's dim 0 holds the padded dim inside another" in plan.refused["batch"]
    assert _plan(FlattenedAndBack(), (torch.randn(3, 4),), ({0: batch},)).dims == ["batch"]


def test_a_masked_attention_pads_its_sequence_and_batch_and_matches_eager():
    """seq is found safe without vouching: the softmax over keys reads its scores through the
    validity mask (-inf at padded keys) and the product with the values contracts them as zeros.
    batch is found safe too (its rows meet nowhere, though the projection merges them into
    `seq*batch` rows; torch's MultiheadAttention too); a [1, 5] call runs the batch=2 seq=8 bucket."""
    torch.manual_seed(0)
    model = MaskedAttention().eval()
    example = (torch.randn(2, 6, 8), torch.ones(2, 6, dtype=torch.long))
    dims = {0: Dim("batch", max=8), 1: Dim("seq", min=2, max=16)}
    shapes = (dims, dims)
    plan = _plan(model, example, shapes)  # torch's MultiheadAttention: bench/heldout_sweep.py's TorchMhaPaddedBatch
    assert plan.dims == ["batch", "seq"] and not plan.refused, plan.refused
    assert {site.node for site in plan.masks["seq"]} == {"softmax", "matmul_1"}, plan.masks
    compiled = rducc.compile(model, example, dynamic_shapes=shapes, shapes={"batch": [2], "seq": [8]}, opt_level=0)
    assert compiled.padding is not None and compiled.padding.dims == ["batch", "seq"]
    x, mask = torch.randn(1, 5, 8), torch.ones(1, 5, dtype=torch.long)
    mask[0, 3:] = 0  # the caller's own padding stays masked too
    with torch.no_grad():
        expected = model(x, mask)
        torch.testing.assert_close(compiled(x, mask), expected, rtol=1e-5, atol=1e-5)
        # a pad the mask did not hide would change the real positions: the check above can fail
        leaked = model(torch.cat([x, torch.ones(1, 3, 8)], 1), torch.cat([mask, torch.ones(1, 3, dtype=torch.long)], 1))
        assert not torch.allclose(leaked[:, :5], expected, atol=1e-3)
    with pytest.raises(RduccError, match=r"no compiled shape takes inputs of shape \[1, 9, 8\], \[1, 9\]"):
        compiled(torch.randn(1, 9, 8), torch.ones(1, 9, dtype=torch.long))


def test_a_vouched_dim_must_still_be_a_whole_dim_of_each_output():
    class Doubled(nn.Module):
        def forward(self, x):
            return torch.cat([x, x], 1)

    plan = _plan(Doubled(), (torch.randn(2, 4),), ({1: Dim("seq", min=2, max=8)},))
    assert "aten.cat" in plan.refused["seq"] and "reads across its dim 1" in plan.refused["seq"]
    with pytest.raises(RduccError, match=r"--pad-dims seq: output 0's dim 1 is 2\*seq"):
        _plan(Doubled(), (torch.randn(2, 4),), ({1: Dim("seq", min=2, max=8)},), vouched=["seq"])


class MaxOfMoved(nn.Module):
    """max, softmax, logsumexp, argmax and a running max along seq of an input reached through
    a transpose and a view (fill -inf: argmax never picks a pad, a running max never reads one)."""

    def forward(self, x):
        moved = x.transpose(1, 2).reshape(-1, x.shape[1])
        running = x.cummax(1)
        return (moved.amax(1), torch.softmax(x, 1), torch.logsumexp(x, 1), x.transpose(1, 2).argmax(2),
                running.values, running.indices)


class MinOfSliced(nn.Module):
    """min, argmin and a running min along seq of a slice along another dim (fill +inf)."""

    def forward(self, x):
        return x[:, :, 1:].amin(1), x.argmin(1, keepdim=True), x[:, :, 1:].cummin(1).values


class ProdOfCopy(nn.Module):
    """prod along seq of a copy (fill 1)."""

    def forward(self, x):
        return x.clone().prod(1)


@pytest.mark.parametrize("model, fill, shift, opt_level", [(MaxOfMoved, "-inf", -5.0, 0),
                                                           (MinOfSliced, "inf", 5.0, 2), (ProdOfCopy, "1", 1.0, 0)])
def test_a_reduction_along_a_padded_dim_pads_its_input_with_its_neutral_value(model, fill, shift, opt_level,
                                                                              tmp_path):
    """seq 5 runs the seq=8 bucket, the input padded with the reduction's neutral
    value, through `Program` and through rducc-run on the saved program; a planted
    zero fill (the values are shifted away from 0, so a zero pad would win a max,
    argmax or min, and zero a product) makes the same comparison fail."""
    torch.manual_seed(0)
    seq = Dim("seq", min=2, max=16)
    compiled = rducc.compile(model().eval(), (torch.randn(2, 6, 3),), dynamic_shapes=({1: seq},),
                             shapes={"seq": [8]}, opt_level=opt_level)
    assert compiled.padding is not None and compiled.padding.dims == ["seq"] and compiled.padding.fills == [fill]
    assert f'["{fill}"]>' in compiled.mlir
    x = torch.rand(2, 5, 3) * 0.5 + shift
    with torch.no_grad():
        expected = model()(x)
        torch.testing.assert_close(compiled(x), expected, rtol=1e-5, atol=1e-5)
    compiled.save(tmp_path / "out.mlir")
    np.save(tmp_path / "x.npy", x.numpy())
    assert run_main([str(tmp_path / "out.mlir"), "--input", str(tmp_path / "x.npy"), "--output",
                     str(tmp_path / "y.npz"), "-q"]) == 0
    saved = np.load(tmp_path / "y.npz")
    for index, want in enumerate(expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_allclose(saved[f"output_{index}"], want.numpy(), rtol=1e-5, atol=1e-5)
    compiled.padding.fills = [""]  # planted: zeros where the neutral value belongs
    planted = compiled(x)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(planted, expected, rtol=1e-5, atol=1e-5)


def test_argmax_over_every_dim_of_an_input_is_masked_not_padded_with_its_neutral_value():
    """argmax without a dim indexes the flattened input: a -inf pad would shift every index, so the
    input keeps zero pads and the argmax reads it through the validity mask (renumbered)."""

    class FlatArgmax(nn.Module):
        def forward(self, x):
            return x.argmax()

    plan = _plan(FlatArgmax(), (torch.randn(2, 6),), ({1: Dim("seq", min=2, max=16)},))
    assert plan.dims == ["seq"] and plan.fills == ["", "valid"] and plan.masks["seq"][0].node == "argmax", plan


class ReducesComputed(nn.Module):
    """Reductions along batch and seq (both padded) of computed values and of a parameter's slice,
    which read their operand through the hidden validity masks: a sum and a mean of a linear's output
    (its bias makes a zero pad nonzero), a max of an input plus a positional parameter, a softmax and
    an argmax of a scaled value, a product, logsumexp and norm, an int max, any/all, a sum over
    `seq*3` merged positions, a max and a min of the same input (two fills), a running sum (its pads
    reach no real position); var/std (corrections, keepdim; var_mean and std_mean over both dims), a
    flat argmax and argmin (an index into the real positions), a mean and a sum over both padded
    dims, contractions over seq (a matmul, an einsum, and one with `...` for batch), and a sum and a
    var over seq laid inside another dim by a view ([b, 3, s] -> [b, 3*s])."""

    def __init__(self):
        super().__init__()
        self.proj, self.pos = nn.Linear(3, 3), nn.Parameter(torch.randn(16, 3))

    def forward(self, x, ids):
        y = self.proj(x)
        merged = y.reshape(y.shape[0], -1)
        spread, centre = torch.std_mean(y, (0, 1), correction=0)
        return (y.sum(1), y.mean(1), (x + self.pos[: x.shape[1]]).amax(1), torch.softmax(y * 2, 1),
                (y * 2).argmax(1), (y + 2).prod(1), torch.logsumexp(y - 3, 1), y.norm(dim=1),
                (ids * 2).amax(1), (ids > 3).any(1), (ids > -1).all(1), merged.sum(1),
                x.amax(1) - x.amin(1), y.cumsum(1),
                y.var(1), y.std(1, correction=2, keepdim=True), *torch.var_mean(y * 2, 1), spread, centre,
                (x * 2).argmax(), (x + 4).argmin(keepdim=True), y.mean((0, 1)), y.sum((0, 1)),
                y.transpose(1, 2) @ y, torch.einsum("bsh,bsk->hk", y, x.exp()), x.var(1, unbiased=False),
                torch.einsum("...sh,...sk->...hk", y, x.exp()), y.transpose(1, 2).reshape(y.shape[0], -1).sum(-1),
                x.transpose(1, 2).reshape(x.shape[0], -1).var(-1))


_SPREADS = range(14, 30)
"""ReducesComputed's outputs from var(1) on: spreads, flat indices, means over both dims, contractions."""
_FLAT_INDICES = {20, 21}
_BOTH = {0: Dim("batch", max=8), 1: Dim("seq", min=2, max=16)}
_BUCKET = {"batch": 4, "seq": 8}


def _reduces_computed_inputs(seq: int, batch: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    # pads of zeros would win the maxima and the flat argmax; x + 4 > 0: one would win the argmin
    return torch.rand(batch, seq, 3) - 2.0, torch.randint(-9, 0, (batch, seq))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_a_reduction_of_a_computed_value_along_a_padded_dim_reads_it_through_a_validity_mask(
        opt_level, tmp_path, monkeypatch, capsys):
    """batch 3, seq 5 and batch 2, seq 8 through the batch=4 seq=8 bucket (Program by position and by
    keyword; rducc-run on the saved program, whose errors never list the hidden inputs) against eager;
    with the validity inputs planted all true (no mask) the outputs below differ."""
    from rducc.shapes import padding

    torch.manual_seed(0)
    model = ReducesComputed().eval()
    compiled = rducc.compile(model, _reduces_computed_inputs(6), dynamic_shapes=(_BOTH, _BOTH),
                             shapes={name: [size] for name, size in _BUCKET.items()}, opt_level=opt_level)
    assert compiled.padding is not None and compiled.padding.dims == ["batch", "seq"]
    assert compiled.padding.fills[-2:] == ["valid", "valid"] and compiled.padding.inputs[-2:] == [["batch"], ["seq"]]
    for batch, size in ((2, 8), (3, 5)):
        x, ids = _reduces_computed_inputs(size, batch)
        with torch.no_grad():
            expected = model(x, ids)
        for index, (have, want) in enumerate(zip(compiled(x, ids), expected)):
            torch.testing.assert_close(have, want, rtol=1e-5, atol=1e-5, msg=f"seq {size}: output {index}")
    for have, want in zip(compiled(ids=ids, x=x), expected):  # by keyword: the validity inputs stay hidden
        torch.testing.assert_close(have, want, rtol=1e-5, atol=1e-5)
    compiled.save(tmp_path / "out.mlir")
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "ids.npy", ids.numpy())
    assert run_main([str(tmp_path / "out.mlir"), "--input", str(tmp_path / "x.npy"), "--input",
                     str(tmp_path / "ids.npy"), "--output", str(tmp_path / "y.npz"), "-q"]) == 0
    saved = np.load(tmp_path / "y.npz")
    for index, want in enumerate(expected):
        np.testing.assert_allclose(saved[f"output_{index}"], want.numpy(), rtol=1e-5, atol=1e-5)
    assert run_main([str(tmp_path / "out.mlir"), "--input", str(tmp_path / "x.npy")]) == 1
    assert "compiled for batch=4 seq=8 (inputs [4, 8, 3], [4, 8]);" in capsys.readouterr().err
    monkeypatch.setattr(padding, "validity_inputs",  # planted: every padded position said valid
                        lambda plan, real: [np.ones(_BUCKET[d], dtype=np.bool_) for d in plan.validity_dims()])
    wrong = {i for i, (have, want) in enumerate(zip(compiled(x, ids), expected))
             if have.shape != want.shape or not torch.allclose(have.double(), want.double(), rtol=1e-5, atol=1e-5)}
    # x pads with -inf (x.amax's fill): its max, min and flat argmax (20) stay right without the mask
    assert {0, 1, 5, 6, 8, *_SPREADS} - {20} <= wrong, wrong


def test_a_planted_wrong_mask_fill_fails_against_eager(monkeypatch):
    """The bucket's program (`specialize_masked`, run by torch) matches eager at a padded call, and with
    every fill planted as zero the max of x + pos, the product, logsumexp, the int max and the flat
    argmax and argmin (they pick a pad) do not."""
    from rducc.frontend.dynamic_dims import dynamic_dims
    from rducc.shapes import padding

    torch.manual_seed(0)
    model = ReducesComputed().eval()
    with torch.no_grad():
        source = torch.export.export(model, _reduces_computed_inputs(6), dynamic_shapes=(_BOTH, _BOTH))
    dims = dynamic_dims(source)
    plan = padding.padding_plan(source, dims)
    x, ids = _reduces_computed_inputs(5, 3)
    padded_x, padded_ids = padding.pad_arrays([x, ids], [(4, 8, 3), (4, 8)], plan.fills)
    valid = [torch.arange(4) < 3, torch.arange(8) < 5]

    def outputs_differing() -> set[int]:
        bucket = padding.specialize_masked(source, dims, _BUCKET, plan).module()
        with torch.no_grad():
            got, expected = bucket(padded_x, padded_ids, *valid), model(x, ids)
        return {i for i, (have, want) in enumerate(zip(got, expected))
                if not torch.allclose(have[tuple(slice(0, n) for n in want.shape)].double(), want.double(),
                                      atol=1e-5)}

    assert outputs_differing() == set()
    monkeypatch.setattr(padding, "_fill_value", lambda dtype, fill: torch.tensor(0, dtype=dtype))
    assert {2, 5, 6, 8, *_FLAT_INDICES} <= outputs_differing()


def test_what_a_validity_mask_cannot_make_exact_still_refuses_the_dim():
    class DiagonalOfScaled(nn.Module):  # an einsum's diagonal along the padded dim: its Core ATen graph
        def forward(self, x):
            return torch.einsum("bss->bs", x * 2)

    class MaxOfInts(nn.Module):
        def forward(self, x):
            return x.amax(1)

    dim = Dim("seq", min=2, max=16)
    seq = ({1: dim},)
    for model, example, why in [(DiagonalOfScaled, torch.randn(2, 6, 6), "aten.einsum (at test_shape_padding.py:")]:
        plan = _plan(model(), (example,), ({1: dim, 2: dim},) if example.shape[1] == example.shape[2] else seq)
        assert plan.dims == [] and why in plan.refused["seq"] and plan.fills == [""], (model.__name__, plan)
    plan = _plan(MaxOfInts(), (torch.ones(2, 6, dtype=torch.long),), seq)
    assert plan.dims == ["seq"] and plan.fills == ["", "valid"] and len(plan.masks["seq"]) == 1, plan

    both = {0: Dim("batch", min=1, max=8), 1: Dim("seq", min=2, max=16)}
    plan = _plan(MaxOfInts(), (torch.randn(2, 6),), (both,), vouched=["batch"])  # a vouched dim pads with zeros
    assert plan.dims == ["batch"] and "but --pad-dims batch pads it with zeros" in plan.refused["seq"], plan


class RunningInside(nn.Module):
    """Running ops along `[batch, 3*seq]` (seq laid inside the 3, so the pads sit between real positions):
    cummax/cummin values and indices, cumsum, cumprod, logcumsumexp, each viewed back to `[batch, seq, 3]`."""

    def forward(self, x):
        b = x.shape[0]
        flat = x.transpose(1, 2).reshape(b, -1) * 2

        def back(t):
            return t.reshape(b, 3, -1).transpose(1, 2)

        top, low = flat.cummax(-1), torch.cummin(flat, 1)
        return (back(top.values), back(top.indices), back(low.indices), back(flat.cumsum(1)),
                back((flat * 0.5).cumprod(-1)), back(flat.logcumsumexp(1)))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_running_ops_along_a_dim_seq_is_laid_inside_read_neutral_pads(opt_level, monkeypatch):
    """seq 5 and 3 through the seq=8 bucket equal eager (a tie included: cummax moves to the later one);
    planted (the bucket's masked program run by torch): pads read as zeros make the running max of
    negative values and the running product differ."""
    from rducc.shapes import padding

    seq = Dim("seq", min=2, max=16)
    compiled = rducc.compile(RunningInside(), (torch.randn(2, 6, 3),), dynamic_shapes=({1: seq},),
                             shapes={"seq": [8]}, opt_level=opt_level)
    assert compiled.padding is not None and compiled.padding.dims == ["seq"], compiled.padding
    for size in (5, 3):
        x = -torch.rand(2, size, 3, generator=torch.Generator().manual_seed(size)) - 0.5  # below a zero pad
        x[0, 1, 1] = x[0, 0, 1]
        for index, (have, want) in enumerate(zip(compiled(x), RunningInside()(x), strict=True)):
            torch.testing.assert_close(have, want, rtol=1e-5, atol=1e-6, msg=f"seq {size}, output {index}")
    if opt_level == 0:
        monkeypatch.setattr(padding, "_PREFIX_FILL", dict.fromkeys(padding._PREFIX_FILL, "0"))
        source = torch.export.export(RunningInside(), (torch.randn(2, 6, 3),), dynamic_shapes=({1: seq},))
        dims = dynamic_dims(source)
        plan = padding_plan(source, dims)
        bucket = padding.specialize_masked(source, dims, {"seq": 8}, plan).module()
        padded = padding.pad_arrays([x], [(2, 8, 3)], plan.fills)
        planted = bucket(*padded, torch.arange(8) < x.shape[1])
        want = RunningInside()(x)
        assert not torch.allclose(planted[0][:, :3], want[0]) and not torch.allclose(planted[4][:, :3], want[4])


class IndicesInside(nn.Module):
    """Positions along `[batch, 3*seq]` (seq laid inside the 3): argmax, max's indices, a flat argmin, and
    an argmax of an input reshaped alike (which a neutral fill could not make exact)."""

    def forward(self, x):
        flat = (x * 2).reshape(x.shape[0], -1)
        top = flat.max(1)
        return (flat.argmax(1), top.values, top.indices, (x + 1).reshape(-1).argmin(),
                x.reshape(x.shape[0], -1).argmax(1, keepdim=True))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_indices_along_a_dim_seq_is_laid_inside_are_renumbered_among_the_real_positions(opt_level):
    """seq 5 and 3 through the seq=8 bucket: each index counts the real positions only (equal to eager)."""
    seq = Dim("seq", min=2, max=16)
    compiled = rducc.compile(IndicesInside(), (torch.randn(2, 3, 6),), dynamic_shapes=({2: seq},), shapes={"seq": [8]},
                             opt_level=opt_level)
    assert compiled.padding is not None and compiled.padding.dims == ["seq"], compiled.padding
    for size in (5, 3):
        x = torch.randn(2, 3, size, generator=torch.Generator().manual_seed(size))
        for index, (have, want) in enumerate(zip(compiled(x), IndicesInside()(x), strict=True)):
            assert torch.equal(have, want), (size, index, have, want)


class PaddedKeysAttention(nn.Module):
    """Fused attention over a padded seq (and batch): a boolean and an additive mask of padded keys,
    causal, no mask with grouped key/value heads, and torch's MultiheadAttention with a key padding
    mask (its mask made by an in-place masked_fill_); a sum over the queries."""

    def __init__(self):
        super().__init__()
        self.qkv, self.mha = nn.Linear(8, 24), nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x, keep):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, 2, 4).permute(2, 0, 3, 1, 4)
        sdpa = nn.functional.scaled_dot_product_attention
        additive = (1.0 - keep[:, None, None, :].float()) * -1e9
        return (sdpa(q, k, v, attn_mask=keep[:, None, None, :].bool()), sdpa(q, k, v, attn_mask=additive),
                sdpa(q, k, v, is_causal=True), sdpa(q, k[:, :1], v[:, :1], enable_gqa=True).sum(2),
                self.mha(x, x, x, key_padding_mask=keep == 0, need_weights=False)[0])


def _keys_inputs(batch: int, seq: int, real: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    keep = (torch.arange(seq)[None, :] < torch.tensor(real)[:, None]).long()
    return torch.randn(batch, seq, 8, generator=torch.Generator().manual_seed(seq)), keep


@pytest.mark.parametrize("opt_level", [0, 2])
def test_attention_over_a_padded_seq_hides_the_padded_keys(opt_level):
    """batch 3, seq 5 through the batch=4 seq=8 bucket against eager: each attention gets -inf at the
    padded keys (`_attention_of_real_keys`)."""
    torch.manual_seed(0)
    model = PaddedKeysAttention().eval()
    both = {0: Dim("batch", max=8), 1: Dim("seq", min=2, max=16)}
    compiled = rducc.compile(model, _keys_inputs(2, 6, [6, 4]), dynamic_shapes=(both, both),
                             shapes={"batch": [4], "seq": [8]}, opt_level=opt_level)
    assert compiled.padding is not None and compiled.padding.dims == ["batch", "seq"], compiled.padding
    x, keep = _keys_inputs(3, 5, [5, 3, 4])
    with torch.no_grad():
        expected = model(x, keep)
    for index, (have, want) in enumerate(zip(compiled(x, keep), expected, strict=True)):
        torch.testing.assert_close(have, want, rtol=1e-4, atol=1e-4, msg=f"output {index}")


def test_a_planted_attention_that_sees_the_padded_keys_fails_against_eager(monkeypatch):
    """The bucket's program (run by torch) matches eager at a padded call, also with the model's own
    key mask padded with ones (so only the validity mask hides the padded keys); with the seq validity
    mask planted all true, every attention but the causal one (its pads come after every real query)
    differs. A padded dim in the attention's features is refused."""
    from rducc.shapes import padding

    torch.manual_seed(0)
    model = PaddedKeysAttention().eval()
    both = {0: Dim("batch", max=8), 1: Dim("seq", min=2, max=16)}
    with torch.no_grad():
        source = torch.export.export(model, _keys_inputs(2, 6, [6, 4]), dynamic_shapes=(both, both))
    dims = dynamic_dims(source)
    plan = padding_plan(source, dims)
    x, keep = _keys_inputs(3, 5, [5, 3, 4])
    padded_x, padded_keep = padding.pad_arrays([x, keep], [(4, 8, 8), (4, 8)], plan.fills)
    bucket = padding.specialize_masked(source, dims, {"batch": 4, "seq": 8}, plan).module()

    def differing(keep_pads: int, valid: torch.Tensor) -> set[int]:
        kept = padded_keep.clone()
        kept[:, 5:] = keep_pads
        with torch.no_grad():
            got, expected = bucket(padded_x, kept, valid), model(x, keep)
        return {i for i, (have, want) in enumerate(zip(got, expected))
                if not torch.allclose(have[tuple(slice(0, n) for n in want.shape)], want, atol=1e-5)}

    assert plan.validity_dims() == ["seq"], plan  # batch: no op reads across it
    real, every = torch.arange(8) < 5, torch.ones(8, dtype=torch.bool)
    assert differing(0, real) == differing(1, real) == set()
    assert differing(1, every) == {0, 1, 3, 4}

    class FeaturesAttention(nn.Module):  # seq is the attention's feature dim: no mask can hide it
        def forward(self, x):
            t = x.transpose(1, 2)[:, None]
            return nn.functional.scaled_dot_product_attention(t, t, t)

    plan = _plan(FeaturesAttention(), (torch.randn(2, 6, 8),), ({1: Dim("seq", min=2, max=16)},))
    assert plan.dims == [] and "contracts its dim 3 (features)" in plan.refused["seq"], plan.refused


class FlatTokensLoss(nn.Module):
    """A language-model loss over tokens flattened with a padded seq laid inside the batch
    (`[b, s, V] -> [b*s, V]`): cross entropy's mean, with ignore_index and label smoothing, and a
    spatial cross entropy's sum; and a mean of the flattened logits."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 7)

    def forward(self, x, labels):
        logits = self.head(x)
        ce = nn.functional.cross_entropy
        return (ce(logits.view(-1, 7), labels.view(-1)), ce(logits.transpose(1, 2), labels, reduction="sum"),
                ce(logits.reshape(-1, 7), labels.reshape(-1), ignore_index=3, label_smoothing=0.1),
                logits.reshape(-1).mean())


def _tokens(seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seq)
    return torch.randn(2, seq, 4, generator=generator), torch.randint(0, 7, (2, seq), generator=generator)


def _seq5_through_the_seq8_bucket_as_eager(model: nn.Module, opt_level: int) -> tuple:
    """`model` compiled for tokens of a dynamic seq (bucket seq=8, seq padded) runs seq 5 as
    eager does; the inputs and eager's outputs."""
    seq = {1: Dim("seq", min=2, max=16)}
    compiled = rducc.compile(model, _tokens(6), dynamic_shapes=(seq, seq), shapes={"seq": [8]}, opt_level=opt_level)
    assert compiled.padding is not None and compiled.padding.dims == ["seq"], compiled.padding
    x, labels = _tokens(5)
    with torch.no_grad():
        expected = model(x, labels)
    for index, (have, want) in enumerate(zip(compiled(x, labels), expected, strict=True)):
        torch.testing.assert_close(have, want, rtol=1e-5, atol=1e-5, msg=f"output {index}")
    return x, labels, expected


@pytest.mark.parametrize("opt_level", [0, 2])
def test_a_loss_over_flattened_tokens_masks_the_padded_seq(opt_level):
    """seq 5 through the seq=8 bucket against eager: a padded target is ignore_index (the mean counts only
    real tokens), a padded row of the flattened logits is masked though seq sits inside `b*s`."""
    from rducc.shapes import padding

    torch.manual_seed(0)
    model = FlatTokensLoss().eval()
    x, labels, expected = _seq5_through_the_seq8_bucket_as_eager(model, opt_level)
    if opt_level == 0:  # planted: every padded position said valid (no mask): every output differs
        seq = {1: Dim("seq", min=2, max=16)}
        with torch.no_grad():
            source = torch.export.export(model, _tokens(6), dynamic_shapes=(seq, seq))
        dims = dynamic_dims(source)
        plan = padding_plan(source, dims)
        bucket = padding.specialize_masked(source, dims, {"seq": 8}, plan).module()
        padded = padding.pad_arrays([x, labels], [(2, 8, 4), (2, 8)], plan.fills)
        with torch.no_grad():
            planted = bucket(*padded, torch.ones(8, dtype=torch.bool))
        assert all(not torch.allclose(have, want) for have, want in zip(planted, expected))


class PerTokenLoss(nn.Module):
    """Per-token losses (reduction none) over flattened tokens, weighted and averaged by a mask the
    model makes (as a masked-LM or RL loss is written), and over `[batch, classes, seq]`."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 7)

    def forward(self, x, labels):
        logits = self.head(x)
        ce = nn.functional.cross_entropy
        per = ce(logits.reshape(-1, 7), labels.reshape(-1), reduction="none").view(labels.shape[0], -1)
        keep = (labels != 3).float()
        return per, (per * keep).sum() / keep.sum(), ce(logits.transpose(1, 2), labels, reduction="none") * 2


@pytest.mark.parametrize("opt_level", [0, 2])
def test_a_per_token_loss_over_a_padded_seq_is_cut_as_its_targets(opt_level):
    """reduction='none' over a padded seq: a padded target is ignore_index (its loss 0), the loss is
    laid out as its targets (seq inside `b*s` until the view), so seq is padded; seq 5 runs seq=8."""
    torch.manual_seed(0)
    model = PerTokenLoss().eval()
    _seq5_through_the_seq8_bucket_as_eager(model, opt_level)


class SoftTargetsLoss(nn.Module):
    """Cross entropy with probability targets (distillation, mixup, label distributions) over flattened
    tokens and over `[batch, classes, seq]`: mean, sum, class weights with label smoothing, and none."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 7)

    def forward(self, x, probs):
        logits = self.head(x)
        ce = nn.functional.cross_entropy
        return (ce(logits.reshape(-1, 7), probs.reshape(-1, 7)),
                ce(logits.transpose(1, 2), probs.transpose(1, 2), reduction="sum"),
                ce(logits.reshape(-1, 7), probs.reshape(-1, 7), weight=torch.linspace(0.5, 1.5, 7), label_smoothing=0.1),
                ce(logits.transpose(1, 2), probs.transpose(1, 2), reduction="none") * 2)


def _soft_tokens(seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seq)
    return torch.randn(2, seq, 4, generator=generator), torch.randn(2, seq, 7, generator=generator).softmax(-1)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_a_loss_with_probability_targets_over_a_padded_seq_counts_the_real_tokens(opt_level):
    """seq 5 and 3 through the seq=8 bucket equal eager: each padded position's loss is dropped and the
    mean divides by the real count (label smoothing would give a zero target a loss); planted (the
    bucket's masked program with every position said valid): the mean and the smoothed mean differ."""
    from rducc.shapes import padding

    torch.manual_seed(0)
    model, seq = SoftTargetsLoss().eval(), {1: Dim("seq", min=2, max=16)}
    compiled = rducc.compile(model, _soft_tokens(6), dynamic_shapes=(seq, seq), shapes={"seq": [8]},
                             opt_level=opt_level)
    assert compiled.padding is not None and compiled.padding.dims == ["seq"], compiled.padding
    for size in (5, 3):
        x, probs = _soft_tokens(size)
        with torch.no_grad():
            expected = model(x, probs)
        for index, (have, want) in enumerate(zip(compiled(x, probs), expected, strict=True)):
            torch.testing.assert_close(have, want, rtol=1e-5, atol=1e-5, msg=f"seq {size}, output {index}")
    if opt_level == 0:
        with torch.no_grad():
            source = torch.export.export(model, _soft_tokens(6), dynamic_shapes=(seq, seq))
        dims = dynamic_dims(source)
        plan = padding_plan(source, dims)
        bucket = padding.specialize_masked(source, dims, {"seq": 8}, plan).module()
        padded = padding.pad_arrays([x, probs], [(2, 8, 4), (2, 8, 7)], plan.fills)
        with torch.no_grad():
            planted = bucket(*padded, torch.ones(8, dtype=torch.bool))
        assert not torch.allclose(planted[0], expected[0]) and not torch.allclose(planted[2], expected[2])


def test_a_causal_mask_made_by_triu_over_a_padded_seq_is_positional():
    """triu/tril read each position's own indices only (`_BY_INDEX`): a causal mask built over the
    padded seq keeps seq paddable (read before as an unknown op, which sent the plan to the Core ATen
    graph, whose softmax is not masked)."""

    class CausalScores(nn.Module):
        def forward(self, x):
            s = x.shape[1]
            scores = x @ x.transpose(1, 2) + torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
            return scores.softmax(-1) @ x, torch.tril(x @ x.transpose(1, 2))

    plan = _plan(CausalScores(), (torch.randn(2, 6, 4),), ({1: Dim("seq", min=2, max=16)},))
    assert plan.dims == ["seq"] and plan.validity_dims() == ["seq"], plan
