"""Which backward ops the joint graphs of real models keep, and which rducc
cannot import: the probe behind docs/training-ops.md's list.

For each model of the zoo (bench/zoo/models.py; transformers' language,
speech and vision families, small configs) in training mode, a loss (the mean
square of its output) is exported and turned into a joint graph with torch's
`_export_forward_backward`; rducc decomposes it as it would compile it and
lists the `*_backward`, dropout and random ops the joint graph keeps, and
every op left that rducc neither converts nor decomposes (an empty list: the
model's training step imports). A model whose export fails says why (an
unused parameter, a data-dependent branch: the training importer's concern).

    .venv/bin/python bench/probe_backward_ops.py [--models resnet,whisper_encoder]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections import Counter
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from zoo.models import ZOO  # noqa: E402

KEPT = ("backward", "dropout", "rand", "bernoulli")


class MeanSquare(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return (self.model(*inputs).float() ** 2).mean()


def probe(name: str) -> str:
    """One line: the ops of interest the joint graph keeps, and those rducc cannot import."""
    import rducc.frontend.importer  # noqa: F401  (registers the converters)
    from rducc.frontend.decompositions import _unconverted, decompose
    from torch.export.experimental import _export_forward_backward

    model, inputs = ZOO[name].build(batch=2)
    try:
        joint = _export_forward_backward(torch.export.export(MeanSquare(model.train()), inputs))
    except Exception as error:  # torch raises many kinds from export
        return f"{name}: no joint graph ({type(error).__name__}: {str(error).splitlines()[0][:120]})"
    kept = sorted({str(n.target) for n in joint.graph.nodes
                   if n.op == "call_function" and any(k in str(n.target) for k in KEPT)})
    try:
        left = Counter(str(op) for op in _unconverted(decompose(joint)))
    except Exception as error:  # rducc's or torch's decomposition refused the joint graph
        return f"{name}: keeps {', '.join(kept)}; decomposition failed: {str(error).splitlines()[0][:160]}"
    return f"{name}: keeps {', '.join(kept) or 'nothing of interest'}; not imported: {dict(left) or 'none'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(ZOO), help="comma-separated zoo names (default: all)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    for name in args.models.split(","):
        print(probe(name), flush=True)


if __name__ == "__main__":
    main()
