"""rducc: a PyTorch 2 compiler for SN40L-class dataflow accelerators.

    import rducc
    program = rducc.compile(model, (x,))   # -> rducc.Program
    y = program(x)
    result = rducc.generate("ckpt/", prompt_ids=[[1, 2, 3]], max_new_tokens=8)   # text generation
    with rducc.empty_weights(): model = Big(config)   # full size: weights on meta, index tensors real

`compile`, `Program` and `api` (the pass-authoring helpers, as in
`rducc.api.after(...)`) load lazily, so the command-line tools start fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from rducc import api
    from rducc.frontend.empty_weights import empty_weights
    from rducc.generation import Generation, Generator, generate
    from rducc.program import BucketedProgram, Program, compile
    from rducc.training import BucketedTrainingProgram, TrainingProgram, compile_training

__all__ = ["BucketedProgram", "BucketedTrainingProgram", "Generation", "Generator", "Program", "TrainingProgram",
           "api", "compile", "compile_training", "empty_weights", "generate", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("compile", "Program", "BucketedProgram"):
        from rducc import program

        return getattr(program, name)
    if name in ("compile_training", "TrainingProgram", "BucketedTrainingProgram"):
        from rducc import training

        return getattr(training, name)
    if name in ("generate", "Generator", "Generation"):
        from rducc import generation

        return getattr(generation, name)
    if name == "empty_weights":
        from rducc.frontend.empty_weights import empty_weights

        return empty_weights
    if name == "api":
        import importlib

        return importlib.import_module("rducc.api")
    raise AttributeError(f"module 'rducc' has no attribute {name!r}")
