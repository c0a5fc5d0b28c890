"""torch.compile(backend="rducc") training breadth: one forward and backward
of each model through the backend against eager on a copy (loss and every
parameter's gradient), and whether rducc ran both graphs or a graph fell back
to eager (the backend's one warning).

Models (small configs): transformers' GPT-2 and Llama with 2 layers, a ViT
(transformers' ViTForImageClassification; timm is not installed), the
examples' MLP and CNN (batch norm in train mode: its running statistics, which
the forward updates, are compared with eager's too), an MLP with its first
layer frozen, and a model with a graph break (a `print` and a data-dependent
Python branch between two halves).

Run: python bench/dynamo_training.py
"""

from __future__ import annotations

import copy
import sys
import time
import warnings
from pathlib import Path

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


class _Classifier(nn.Module):
    """An examples/models.py classifier in train mode, its cross entropy as the loss."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model.train()

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict:
        return {"loss": nn.functional.cross_entropy(self.model(x), labels)}


def _example(name: str) -> tuple[nn.Module, dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import models

    model, (x,) = getattr(models, name)()
    labels = torch.randint(0, 10, x.shape[:1], generator=torch.Generator().manual_seed(1))
    return _Classifier(model), {"x": x, "labels": labels}


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
          "mlp": lambda: _example("mlp"), "cnn (batch norm, train mode)": lambda: _example("cnn"),
          "frozen first layer": _frozen, "graph breaks": _graph_break}


def check(make) -> tuple[float, float, float, int, float]:
    """(loss difference, largest gradient difference over the largest gradient element of
    the whole model (model-wide: a gradient that is zero in exact arithmetic, a key bias
    under softmax or a convolution's bias before batch norm, is rounding noise on both
    sides and is judged on the model's scale, not its own), largest floating buffer
    difference relative to that buffer's largest element (0 where none), rducc
    warnings, seconds)."""
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
        if want.grad is not None:
            worst = max(worst, float((got.grad - want.grad).abs().max()) / largest)
    buffers = 0.0
    for got, want in zip(model.buffers(), eager.buffers(), strict=True):
        if want.is_floating_point():
            scale = float(want.abs().max()) or 1.0
            buffers = max(buffers, float((got - want).abs().max()) / scale)
    fallbacks = sum("rducc:" in str(w.message) for w in caught)
    return abs(float(loss) - float(expected)), worst, buffers, fallbacks, seconds


def run(quick: bool) -> Section:
    section = Section("torch.compile training breadth (rducc backend, -O0)", "python bench/dynamo_training.py")
    rows = ["| model | loss diff | max grad diff / model's max grad | max buffer diff (relative) "
            "| graphs in eager | time |",
            "| --- | --- | --- | --- | --- | --- |"]
    for name, make in MODELS.items():
        try:
            loss, grad, buffers, fallbacks, seconds = check(make)
        except Exception as error:  # noqa: BLE001 - a failure is a row
            rows.append(f"| {name} | failed: {str(error).splitlines()[0][:200]} | | | | |")
            print(rows[-1], flush=True)
            continue
        rows.append(f"| {name} | {loss:.2e} | {grad:.2e} | {buffers:.2e} | {fallbacks} | {seconds:.1f} s |")
        print(rows[-1], flush=True)
        section.add(f"{name}: gradients vs eager", f"{max(grad, buffers):.2e}",
                    "< 1e-5 (gradients and buffers) and no graph in eager",
                    max(grad, buffers) < 1e-5 and fallbacks == 0)
    section.details += rows
    return section


def main() -> None:
    standalone(run, __doc__)


if __name__ == "__main__":
    main()
