"""Regenerate the bundled example: `python examples/make_example.py` writes examples/mlp.pt2.

The model is `models.MLP` with seed 0 and input shape (4, 32); its weights
are random, so the archive is small (about 30 KB) and needs no download.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402


def main(output: Path = HERE / "mlp.pt2") -> None:
    model, inputs = models.mlp(seed=0)
    torch.export.save(models.export(model, inputs), str(output))
    print(f"wrote {output} ({output.stat().st_size} bytes)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "mlp.pt2")
