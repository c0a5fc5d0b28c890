"""torch.compile(backend="rducc") training breadth: one forward and backward
of each model through the backend against eager on a copy (loss and every
parameter's gradient), and whether rducc ran both graphs or a graph fell back
to eager (the backend's one warning).

Models (small configs): transformers' GPT-2 and Llama with 2 layers, a ViT
(transformers' ViTForImageClassification; timm is not installed), an MLP
with its first layer frozen, and a model with a graph break (a `print` and a
data-dependent Python branch between two halves).

Run: python bench/dynamo_training.py
"""

from __future__ import annotations

import copy
import time
import warnings

import torch  # noqa: E402
from common import Section, standalone
from torch import nn  # noqa: E402


def _gpt2() -> tuple[nn.Module, dict]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
                        embd_pdrop=0.0, attn_pdrop=0.0)
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(1))
    return GPT2LMHeadModel(config).train(), {"input_ids": ids, "labels": ids}


def _llama() -> tuple[nn.Module, dict]:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16)
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(1))
    return LlamaForCausalLM(config).train(), {"input_ids": ids, "labels": ids}


def _vit() -> tuple[nn.Module, dict]:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=64, num_labels=5, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)
    pixels = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    return ViTForImageClassification(config).train(), {"pixel_values": pixels, "labels": torch.tensor([1, 3])}


class _Frozen(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(8, 16).requires_grad_(False)
        self.head = nn.Sequential(nn.GELU(), nn.Linear(16, 4))

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict:
        return {"loss": nn.functional.cross_entropy(self.head(self.embed(x)), labels)}


class _GraphBreak(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(8, 16)
        self.second = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict:
        hidden = torch.tanh(self.first(x))
        print("", end="")  # a graph break
        if hidden.sum() > 0:  # a branch on a value: another
            hidden = hidden * 2
        return {"loss": nn.functional.cross_entropy(self.second(hidden), labels)}


def _frozen() -> tuple[nn.Module, dict]:
    generator = torch.Generator().manual_seed(1)
    return _Frozen(), {"x": torch.randn(4, 8, generator=generator), "labels": torch.tensor([0, 1, 2, 3])}


def _graph_break() -> tuple[nn.Module, dict]:
    generator = torch.Generator().manual_seed(1)
    return _GraphBreak(), {"x": torch.randn(4, 8, generator=generator), "labels": torch.tensor([0, 1, 2, 3])}


MODELS = {"gpt2 (2 layers)": _gpt2, "llama (2 layers)": _llama, "vit (2 layers)": _vit,
          "frozen first layer": _frozen, "graph breaks": _graph_break}


def check(make) -> tuple[float, float, int, float]:
    """(loss difference, largest gradient difference relative to the parameter's
    largest gradient (at least 1e-4 of the model's largest), rducc warnings, seconds)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model, inputs = make()
    eager = copy.deepcopy(model)
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = torch.compile(model, backend="rducc", options={"opt_level": 0})
        loss = compiled(**inputs)["loss"]
        loss.backward()
    seconds = time.perf_counter() - start
    expected = eager(**inputs)["loss"]
    expected.backward()
    worst = 0.0
    pairs = list(zip(model.named_parameters(), eager.parameters()))
    largest = max(float(want.grad.abs().max()) for _, want in pairs if want.grad is not None)
    for (name, got), want in pairs:
        if (got.grad is None) != (want.grad is None):
            raise AssertionError(f"{name}: a gradient on one side only")
        if want.grad is not None:  # a gradient that is zero exactly (a key bias, under softmax) is noise in both
            scale = max(float(want.grad.abs().max()), 1e-4 * largest)
            worst = max(worst, float((got.grad - want.grad).abs().max()) / scale)
    fallbacks = sum("rducc:" in str(w.message) for w in caught)
    return abs(float(loss) - float(expected)), worst, fallbacks, seconds


def run(quick: bool) -> Section:
    section = Section("torch.compile training breadth (rducc backend, -O0)", "python bench/dynamo_training.py")
    rows = ["| model | loss diff | max grad diff (relative) | graphs in eager | time |",
            "| --- | --- | --- | --- | --- |"]
    for name, make in MODELS.items():
        try:
            loss, grad, fallbacks, seconds = check(make)
        except Exception as error:  # noqa: BLE001 - a failure is a row
            rows.append(f"| {name} | failed: {str(error).splitlines()[0][:200]} | | | |")
            print(rows[-1], flush=True)
            continue
        rows.append(f"| {name} | {loss:.2e} | {grad:.2e} | {fallbacks} | {seconds:.1f} s |")
        print(rows[-1], flush=True)
        section.add(f"{name}: gradients vs eager", f"{grad:.2e}", "< 1e-4 and no graph in eager",
                    grad < 1e-4 and fallbacks == 0)
    section.details += rows
    return section


def main() -> None:
    standalone(run, __doc__)


if __name__ == "__main__":
    main()
