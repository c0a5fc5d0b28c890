"""The runtime reads a weight where the caller keeps it (issue 32): a
whole-buffer DMA of a weight into an SRAM buffer that nothing else writes or
shares binds the buffer to the caller's array instead of copying it into the
arena on every call. The result must never be stale: a weight changed in
place, or replaced in `Program.weights`, is what the next call reads."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

import rducc
from rducc.runtime.interpreter import PlacedProgram


@pytest.fixture(scope="module")
def gpt2() -> tuple[torch.nn.Module, torch.Tensor, rducc.Program]:
    """A two-layer GPT-2 (transformers' code, a small config), compiled at -O2."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=64, n_positions=16)
    model = transformers.GPT2LMHeadModel(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lm = model

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.lm(input_ids=ids).logits

    wrapper = Logits().eval()
    ids = torch.randint(0, 64, (1, 8))
    with torch.no_grad():
        program = rducc.compile(torch.export.export(wrapper, (ids,)), opt_level=2)
    return wrapper, ids, program


def _eager(model: torch.nn.Module, ids: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        return model(ids).numpy()


def _layer_weight(program: rducc.Program) -> str:
    """The name of a layer's MLP weight (read by the outlined layer, once per layer)."""
    return next(name for name in program.weights if name.endswith("h.1.mlp.c_fc.weight"))


def test_weight_dmas_bind_the_callers_array(gpt2) -> None:
    """Most weight DMAs of a transformer bind instead of copying."""
    _, _, program = gpt2
    runner = PlacedProgram(program.module)
    assert runner.weight_dmas, "no whole-buffer DMA into an SRAM buffer"
    runner.run([np.zeros((1, 8), np.int64)], program.weights)  # resolved when prepared; run once anyway
    bound = sum(alias.allowed for alias in runner.weight_dmas)
    assert bound >= len(runner.weight_dmas) // 2, (bound, len(runner.weight_dmas))


def test_a_weight_changed_in_place_is_read_by_the_next_call(gpt2) -> None:
    model, ids, program = gpt2
    np.testing.assert_allclose(program(ids).numpy(), _eager(model, ids), rtol=1e-4, atol=1e-5)
    name = _layer_weight(program)
    parameter = model.get_parameter(name)
    with torch.no_grad():
        parameter.mul_(3.0)
    try:
        program.weights[name][...] *= 3.0  # the Program's own array, changed in place
        changed = _eager(model, ids)
        np.testing.assert_allclose(program(ids).numpy(), changed, rtol=1e-4, atol=1e-5)
    finally:
        with torch.no_grad():
            parameter.div_(3.0)
        program.weights[name][...] /= 3.0
    np.testing.assert_allclose(program(ids).numpy(), _eager(model, ids), rtol=1e-4, atol=1e-5)


def test_a_weight_replaced_in_program_weights_is_read_by_the_next_call(gpt2) -> None:
    model, ids, program = gpt2
    name = _layer_weight(program)
    before = program.weights[name]
    program(ids)
    replacement = np.random.default_rng(1).standard_normal(before.shape).astype(before.dtype)
    parameter = model.get_parameter(name)
    saved = parameter.detach().clone()
    with torch.no_grad():
        parameter.copy_(torch.from_numpy(replacement))
    try:
        program.weights[name] = replacement
        np.testing.assert_allclose(program(ids).numpy(), _eager(model, ids), rtol=1e-4, atol=1e-5)
    finally:
        with torch.no_grad():
            parameter.copy_(saved)
        program.weights[name] = before
    np.testing.assert_allclose(program(ids).numpy(), _eager(model, ids), rtol=1e-4, atol=1e-5)


def test_a_non_contiguous_weight_is_copied_not_bound(gpt2) -> None:
    """A caller's array that is not C-contiguous (a transposed view) is copied
    into the arena as before; the result is the same."""
    model, ids, program = gpt2
    name = _layer_weight(program)
    before = program.weights[name]
    strided = np.asfortranarray(before)
    assert not strided.flags.c_contiguous
    try:
        program.weights[name] = strided
        np.testing.assert_allclose(program(ids).numpy(), _eager(model, ids), rtol=1e-4, atol=1e-5)
    finally:
        program.weights[name] = before
