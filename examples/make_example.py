"""Regenerate the bundled example: `python examples/make_example.py` writes examples/mlp.pt2.

The model is `models.MLP` with seed 0 and input shape (4, 32); its weights
are random, so the archive is small (about 30 KB) and needs no download.
The source locations torch records (each node's stack trace, which rducc
prints as `loc(...)`) name files relative to the repository
(`examples/models.py`) and to site-packages (`torch/nn/modules/linear.py`),
not the machine that built it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402


def relative_sources(program: torch.export.ExportedProgram, root: Path = HERE.parent) -> None:
    """Each node's recorded stack trace with its files relative to `root` (the
    repository), and installed packages under a neutral `<python>/site-packages/`
    (rducc still recognises torch's own frames there and skips them), in place."""
    for node in program.graph.nodes:
        trace = node.meta.get("stack_trace")
        if trace:
            trace = trace.replace(f'File "{root}/', 'File "')
            node.meta["stack_trace"] = re.sub(r'File "[^"]*/(?:site|dist)-packages/', 'File "<python>/site-packages/', trace)


def main(output: Path = HERE / "mlp.pt2") -> None:
    model, inputs = models.mlp(seed=0)
    program = models.export(model, inputs)
    relative_sources(program)
    torch.export.save(program, str(output))
    print(f"wrote {output} ({output.stat().st_size} bytes)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "mlp.pt2")
