"""Sequence parallelism (issue 27, item 4; Megatron's): under
`rdu-partition{tp=N sequence_parallel=true}` the norms, residual adds and the
rest of a layer between its tensor-parallel regions run split along the
tokens; each activation all-reduce becomes a reduce-scatter and the next
region's input an all-gather, forward and backward. Trained with AdamW on
sn40l-8 against eager: a tiny Llama (outlined layers, tp=2) and GPT-2 (inline,
tp=4, its tied wte / lm_head weight updated by AdamW) from transformers. The
configs are the smallest that keep every check (hidden 16, vocab 64, 8 tokens
divisible by tp): each test compiles once and runs two steps."""

from __future__ import annotations

import copy
from collections import Counter

import torch
from training_cases import LOSS_ATOL, LOSS_RTOL, PARAM_ATOL, PARAM_RTOL, language_model_loss
from xdsl.dialects import func

import rducc
from rducc.dialects.contracts import is_outlined, partition_of
from rducc.dialects.program import functions
from rducc.pipeline import pipeline_text

COLLECTIVES = ("rdu.all_reduce", "rdu.reduce_scatter", "rdu.all_gather")
HIDDEN = 16
"""The models' hidden size: the width of the activations the collectives move."""
OPTIMIZERS = {"sgd": (torch.optim.SGD, {"lr": 0.5}), "adamw": (torch.optim.AdamW, {"lr": 1e-3, "weight_decay": 0.1})}


def _tiny_llama(layers: int) -> torch.nn.Module:
    from models import LogitsOnly
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16)
    return LogitsOnly(LlamaForCausalLM(config)).train()


def _tiny_gpt2() -> torch.nn.Module:
    from models import LogitsOnly
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=HIDDEN, n_layer=1, n_head=4, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0)
    return LogitsOnly(GPT2LMHeadModel(config)).train()


def _pipeline(tp: int, outline: bool) -> str:
    text = pipeline_text(0, sockets=8, split=(tp, 1, 0, 0, 0, 1))
    return text.replace("rdu-outline-layers", "rdu-outline-layers{training=always}") if outline else text


def _trains_as_eager(model: torch.nn.Module, tp: int, outline: bool, optimizer: str,
                     steps: int = 2) -> rducc.TrainingProgram:
    """Train `model` `steps` steps through rducc at tp with sequence parallelism and a
    copy eagerly; the losses at each step and the parameters after the last agree."""
    reference = copy.deepcopy(model)
    ids, labels = torch.randint(0, 64, (2, 8)), torch.randint(0, 64, (2, 8))
    cls, options = OPTIMIZERS[optimizer]
    program = rducc.compile_training(model, (ids, labels), optimizer=optimizer, loss_fn=language_model_loss,
                                     target="sn40l-8", passes=_pipeline(tp, outline), **options)
    assert partition_of(program.module) == (tp, 1)
    eager = cls(reference.parameters(), **options)
    for _ in range(steps):
        eager.zero_grad()
        expected = language_model_loss(reference(ids), labels)
        expected.backward()
        eager.step()
        torch.testing.assert_close(torch.as_tensor(program.step(ids, labels)).float(), expected.detach(),
                                   rtol=LOSS_RTOL, atol=LOSS_ATOL)
    ours = program.parameters()
    for name, parameter in reference.named_parameters():
        torch.testing.assert_close(ours[name], parameter.detach(), rtol=PARAM_RTOL, atol=PARAM_ATOL, msg=name)
    return program


def _activation_collectives(function: func.FuncOp, hidden: int, whole_group: int | None = None) -> Counter:
    """The collectives of `function` over activations of `hidden` features (not a norm weight's gradient);
    with `whole_group`, only those over that many sockets (not a partial sum over rank subgroups, such as
    the position embedding's gradient summed over the batch's ranks)."""
    return Counter(op.name for op in function.body.walk() if op.name in COLLECTIVES
                   and len(op.operands[0].type.get_shape()) >= 2  # type: ignore[attr-defined]
                   and op.operands[0].type.get_shape()[-1] == hidden  # type: ignore[attr-defined]
                   and (whole_group is None or op.properties["group"].value.data == whole_group))


def test_outlined_llama_layers_reduce_scatter_and_gather_by_tokens() -> None:
    """A 2-layer Llama with its layers outlined, at tp=2: each forward and backward
    layer runs Megatron's two reduce-scatters and two all-gathers of the hidden
    states (no all-reduce of them: only the norms' weight gradients, 16 floats,
    are all-reduced), the residual stream crosses from call to call split along
    the tokens (nothing gathered between the calls), and two SGD steps give
    eager's losses and parameters (under AdamW the split step equals the step
    without sequence parallelism bit for bit, whose elements of near-zero
    gradient differ from eager's by Adam's rounding noise)."""
    program = _trains_as_eager(_tiny_llama(2), tp=2, outline=True, optimizer="sgd")
    layers = {f.sym_name.data: f for f in functions(program.module) if is_outlined(f)}
    for name in ("layer_forward", "layer_backward"):
        counts = _activation_collectives(layers[name], HIDDEN)
        assert counts == {"rdu.reduce_scatter": 2, "rdu.all_gather": 2}, (name, counts)
    entry = next(f for f in functions(program.module) if not is_outlined(f))
    carried = {v for op in entry.body.walk() if isinstance(op, func.CallOp) for v in op.results}
    assert not [op for op in entry.body.walk() if op.name in COLLECTIVES and op.operands[0] in carried]


def test_gpt2_at_tp4_trains_its_tied_weight_with_reduce_scatters() -> None:
    """GPT-2 (biases after the row-split projections, layer norms, the step inline,
    wte tied to lm_head) at tp=4: partial sums of its hidden states are
    reduce-scattered by tokens (the loss's and its backward's wide all-reduces
    remain, see docs/training-parallel.md); two AdamW steps give eager's losses
    and parameters, the tied weight's included (its one copy of AdamW's state is
    placed and updated under both names)."""
    program = _trains_as_eager(_tiny_gpt2(), tp=4, outline=False, optimizer="adamw")
    counts = sum((_activation_collectives(f, HIDDEN, whole_group=4) for f in functions(program.module)), Counter())
    assert counts["rdu.reduce_scatter"] >= 3 and counts["rdu.all_reduce"] <= 3, counts
    tied = [name for name in program.weights if name.endswith(("wte.weight", "lm_head.weight"))]
    assert any(name.startswith("optimizer.") for name in tied), tied
