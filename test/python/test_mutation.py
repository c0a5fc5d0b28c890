"""Programs that update their buffers and inputs in place (issue 17, item 4):
`index_copy_`, `add_`, `copy_` (torch.export's BUFFER_MUTATION and
USER_INPUT_MUTATION). The importer returns the new values after the user
outputs (`rdu.result_updates`); `rducc.Program` writes them back as
`ExportedProgram.module()` does (buffers for the next call, inputs into the
caller's tensors), `rducc-run` writes them as `buffer:NAME` / `input:LABEL`.
transformers' own static-cache decode, exported by torch.export, matches eager
step after step, on one socket and split over two (the cache and its update
split by kv_heads, nothing gathered). An update that replaces rows of its
buffer is written back in place, those rows only (`tier.scatter`)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import rducc
from rducc.api import after
from rducc.dialects.contracts import Update, result_updates
from rducc.dialects.split import Split
from rducc.dialects.program import entry_function
from rducc.dialects.rdu.collectives import AllGatherOp
from rducc.dialects.tier import GetGlobalOp, ScatterDmaOp
from rducc.model.program_walk import transfer_bytes
from rducc.passes.rdu_partition import RduPartition
from rducc.runtime.interpreter import PlacedProgram
from rducc.runtime.sockets import shard_specs


class CacheUpdate(torch.nn.Module):
    """Writes a row of a cache buffer, counts its calls, doubles a user input in place."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(2, 4, 8))
        self.register_buffer("count", torch.zeros(1))

    def forward(self, x: torch.Tensor, position: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        self.cache.index_copy_(1, position, x)
        self.count.add_(1)
        state.copy_(state * 2)
        return self.cache.sum(1) + self.count


def _step_inputs(step: int) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(step)
    return torch.randn(2, 1, 8, generator=generator), torch.tensor([step]), torch.randn(3, generator=generator)


@pytest.fixture(scope="module")
def cache_update() -> torch.export.ExportedProgram:
    return torch.export.export(CacheUpdate(), _step_inputs(0))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_buffers_and_inputs_are_written_back_as_torch_does(cache_update, opt_level):
    program = rducc.compile(cache_update, _step_inputs(0), opt_level=opt_level)
    assert result_updates(entry_function(program.module)) == [
        None, Update("buffer", "cache"), Update("buffer", "count"), Update("input", "state")]
    reference = copy.deepcopy(cache_update).module()
    for step in range(3):
        ours, theirs = _step_inputs(step), _step_inputs(step)
        torch.testing.assert_close(program(*ours), reference(*theirs))
        torch.testing.assert_close(ours[2], theirs[2])  # the input, doubled in place by both
        torch.testing.assert_close(torch.from_numpy(program.weights["cache"]), reference.cache)
        assert program.weights["count"][0] == step + 1


def test_rducc_run_writes_the_updated_buffers_and_inputs(cache_update, tmp_path):
    from rducc.tools.run import main

    program = rducc.compile(cache_update, _step_inputs(0), opt_level=0)
    program.save(tmp_path / "p.mlir")
    x, position, state = _step_inputs(1)
    for name, value in (("x", x), ("position", position), ("state", state)):
        np.save(tmp_path / f"{name}.npy", value.numpy())
    arguments = [flag for name in ("x", "position", "state") for flag in ("--input", str(tmp_path / f"{name}.npy"))]
    assert main([str(tmp_path / "p.mlir"), *arguments, "--output", str(tmp_path / "out.npz")]) == 0
    got = np.load(tmp_path / "out.npz")
    assert sorted(got.keys()) == ["buffer:cache", "buffer:count", "input:state", "output_0"]
    np.testing.assert_allclose(got["input:state"], state.numpy() * 2)
    np.testing.assert_allclose(got["buffer:cache"][:, 1], x[:, 0].numpy())
    np.testing.assert_allclose(got["output_0"], x[:, 0].numpy() + 1)


@pytest.fixture(scope="module")
def static_cache_decode():
    """transformers' tiny Llama (8 query heads, 4 KV heads) with its StaticCache, batch 2, exported."""
    from transformers import LlamaConfig, LlamaForCausalLM
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=64)
    model = LlamaForCausalLM(config).eval()
    model.generation_config.use_cache = True
    model.generation_config.cache_implementation = "static"
    wrapper = TorchExportableModuleWithStaticCache(model, batch_size=2, max_cache_len=16)
    eager = copy.deepcopy(wrapper)
    example = {"input_ids": torch.zeros(2, 1, dtype=torch.long), "cache_position": torch.tensor([0])}
    return eager, torch.export.export(wrapper, (), example, strict=True)


@pytest.mark.parametrize(("tp", "opt_level"), [(1, 2), (2, 0), (2, 2)])
def test_transformers_static_cache_decode_matches_eager_step_after_step(static_cache_decode, tp, opt_level):
    eager, exported = static_cache_decode
    eager = copy.deepcopy(eager)
    options = {"target": "sn40l-8", "passes": [after("rdu-canonicalize", RduPartition(tp=tp))]} if tp > 1 else {}
    program = rducc.compile(exported, (), opt_level=opt_level, **options)
    updates = [u for u in result_updates(entry_function(program.module)) if u is not None]
    assert Update("buffer", "key_cache_0") in updates and Update("buffer", "value_cache_1") in updates
    if tp > 1:  # the cache and its written-back update split by kv_heads: nothing gathered
        _, weight_splits, result_splits = shard_specs(program.module)
        heads = Split.whole(1, tp)
        assert all(weight_splits[f"{kind}_cache_{layer}"] == heads for kind in ("key", "value") for layer in (0, 1))
        assert result_splits[-4:] == [heads] * 4
        assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    scatters = [op for op in program.module.walk() if isinstance(op, ScatterDmaOp)]
    if opt_level == 2:  # the layer writes one position of each cache in place (2 caches, one @layer)
        assert len(scatters) == 2 and all(op.rows() == 1 for op in scatters)
        assert all(transfer_bytes(op) == 2 * (4 // tp) * 8 * 4 for op in scatters)
    else:  # -O0: the index is another kernel's output, not provably one row everywhere
        assert not scatters
    generator = torch.Generator().manual_seed(1)
    for step in range(4):
        ids = torch.randint(0, 128, (2, 1), generator=generator)
        with torch.no_grad():
            expected = eager(input_ids=ids, cache_position=torch.tensor([step]))
        got = program(input_ids=ids, cache_position=torch.tensor([step]))
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(program.weights["key_cache_0"], eager.key_cache_0.numpy(), rtol=1e-4, atol=1e-5)


def test_static_cache_in_ddr_is_written_one_position_and_matches_eager(static_cache_decode):
    """With HBM for the activations and 1 KiB more, the caches (4 KiB each, written a
    step, so never split between tiers) are in DDR, and each update is still one
    position written in place into the DDR buffer (not the whole cache written back),
    step after step as eager."""
    import dataclasses

    from rducc.dialects.tier import GlobalOp, Tier
    from rducc.targets import load_target

    eager, exported = static_cache_decode
    eager = copy.deepcopy(eager)
    base = load_target("sn40l")
    whole = rducc.compile(exported, (), opt_level=2, target=base).module.attributes
    room = whole["tier.activation_bytes"].value.data + 1024
    program = rducc.compile(exported, (), opt_level=2, target=dataclasses.replace(base, name="no-hbm", hbm_bytes=room))
    caches = [g for g in program.module.walk() if isinstance(g, GlobalOp) and "_cache_" in g.sym_name.data]
    assert len(caches) == 4 and all(g.tier is not None and g.tier.data == Tier.DDR and g.resident_bytes()[0] == 0
                                    for g in caches), caches
    scatters = [op for op in program.module.walk() if isinstance(op, ScatterDmaOp)]
    assert len(scatters) == 2 and all(op.rows() == 1 and op.dest.type.tier.data == Tier.DDR for op in scatters)
    generator = torch.Generator().manual_seed(1)
    for step in range(3):
        ids = torch.randint(0, 128, (2, 1), generator=generator)
        with torch.no_grad():
            expected = eager(input_ids=ids, cache_position=torch.tensor([step]))
        torch.testing.assert_close(program(input_ids=ids, cache_position=torch.tensor([step])), expected,
                                   rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(program.weights["value_cache_1"], eager.value_cache_1.numpy(), rtol=1e-4, atol=1e-5)


class RowUpdates(torch.nn.Module):
    """Buffers and an input updated in every form: rows at an input position
    (index_copy_, index_put_), a constant slice (copy_), a scatter whose rows
    differ along another dim, and a whole-buffer change."""

    def __init__(self):
        super().__init__()
        for name in ("copied", "put", "sliced", "spread", "doubled"):
            self.register_buffer(name, torch.zeros(2, 6, 8))

    def forward(self, x: torch.Tensor, position: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        self.copied.index_copy_(1, position, x)
        self.put[:, position] = x
        self.sliced[:, 2:3].copy_(x)
        self.spread.scatter_(1, (torch.arange(8) % 2).expand(2, 1, 8), x)
        self.doubled.mul_(2).add_(1)
        state.index_copy_(0, position, x[0])
        return sum(getattr(self, n).sum(1) for n in ("copied", "put", "sliced", "spread", "doubled"))


def _row_inputs(step: int) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(step)
    return torch.randn(2, 1, 8, generator=generator), torch.tensor([step % 6]), torch.randn(6, 8, generator=generator)


@pytest.fixture(scope="module")
def row_updates() -> torch.export.ExportedProgram:
    return torch.export.export(RowUpdates(), _row_inputs(0))


def _written_in_place(module) -> dict[str, int]:
    """Per buffer or input a `tier.scatter` writes, the bytes it moves."""
    written = {}
    for op in module.walk():
        if isinstance(op, ScatterDmaOp):
            owner = op.dest.owner
            name = owner.global_name.root_reference.data if isinstance(owner, GetGlobalOp) else op.dest.name_hint
            written[name] = transfer_bytes(op)
    return written


def test_row_updates_are_written_back_in_place_and_match_eager(row_updates):
    program = rducc.compile(row_updates, _row_inputs(0), opt_level=2)
    row = 2 * 8 * 4  # one position of a [2, 6, 8] f32 buffer
    assert _written_in_place(program.module) == {"copied": row, "put": row, "sliced": row, "state": 8 * 4}
    reference = copy.deepcopy(row_updates).module()
    for step in range(3):
        ours, theirs = _row_inputs(step), _row_inputs(step)
        torch.testing.assert_close(program(*ours), reference(*theirs))
        torch.testing.assert_close(ours[2], theirs[2])  # the caller's input, updated as torch does
        for name in ("copied", "put", "sliced", "spread", "doubled"):
            torch.testing.assert_close(torch.from_numpy(program.weights[name]), getattr(reference, name))


def test_the_program_never_writes_the_callers_arrays(row_updates):
    """The in-place write lands in the program's copy: the arrays passed to the
    runner stay as they were, and the result carries the update."""
    program = rducc.compile(row_updates, _row_inputs(0), opt_level=2)
    x, position, state = (t.numpy() for t in _row_inputs(1))
    weights = {name: np.zeros((2, 6, 8), np.float32) for name in ("copied", "put", "sliced", "spread", "doubled")}
    before = {name: value.copy() for name, value in weights.items()}
    given = state.copy()
    results = PlacedProgram(program.module).run([x, position, given], weights)
    assert all(np.array_equal(weights[name], before[name]) for name in weights)
    np.testing.assert_array_equal(given, state)
    updates = result_updates(entry_function(program.module))
    copied = results[updates.index(Update("buffer", "copied"))]
    np.testing.assert_array_equal(copied[:, 1], x[:, 0])
    np.testing.assert_array_equal(np.delete(copied, 1, axis=1), 0)
