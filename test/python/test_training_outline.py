"""A training step's repeated layers are outlined by structure, phase by phase
(`rdu_outline_layers.outline_training_step`): torch's joint graph has no module paths, so
the forward, backward and optimizer layers are found by the period of each
phase's ops. A 3-layer Llama step has one function per phase, each called
once per layer, and it trains as eager does."""

from __future__ import annotations

import copy

import torch
from training_cases import LOSS_ATOL, LOSS_RTOL, PARAM_ATOL, PARAM_RTOL, language_model_loss
from xdsl.dialects import func

import rducc
from rducc.dialects.contracts import calls_of, is_outlined, phase_of
from rducc.dialects.program import find_entry


def _tiny_llama(layers: int) -> torch.nn.Module:
    from models import LogitsOnly
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    return LogitsOnly(LlamaForCausalLM(config)).train()


def test_three_layer_step_is_outlined_per_phase_and_trains_as_eager() -> None:
    model = _tiny_llama(3)
    reference = copy.deepcopy(model)
    ids, labels = torch.randint(0, 64, (1, 6)), torch.randint(0, 64, (1, 6))
    program = rducc.compile_training(model, (ids, labels), optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
                                     loss_fn=language_model_loss, opt_level=0)
    outlined = {f.sym_name.data: f for f in program.module.ops if isinstance(f, func.FuncOp) and is_outlined(f)}
    assert {name: calls_of(f) for name, f in outlined.items()} == {
        "layer_forward": 3, "layer_backward": 3, "layer_optimizer": 3}
    entry = find_entry(program.module)
    assert entry is not None
    calls = [op for op in entry.body.block.ops if isinstance(op, func.CallOp)]
    assert [(op.callee.string_value(), phase_of(op)) for op in calls] == [
        *[("layer_forward", "forward")] * 3, *[("layer_backward", "backward")] * 3,
        *[("layer_optimizer", "optimizer")] * 3]
    eager = torch.optim.SGD(reference.parameters(), lr=0.5)
    for _ in range(3):
        loss = program.step(ids, labels)
        eager.zero_grad()
        expected = language_model_loss(reference(ids), labels)
        expected.backward()
        eager.step()
        torch.testing.assert_close(loss.float(), expected.detach(), rtol=LOSS_RTOL, atol=LOSS_ATOL)
    ours = program.parameters()
    for name, parameter in reference.named_parameters():
        torch.testing.assert_close(ours[name], parameter.detach(), rtol=PARAM_RTOL, atol=PARAM_ATOL)
