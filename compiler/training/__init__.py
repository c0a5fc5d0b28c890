"""Training (issue 27): a whole training step, forward, backward and the
optimizer's update, compiled as one placed program.

`compile_training(model, example_inputs, optimizer=...)` returns a
`TrainingProgram` (`step()`, `state_dict()`, `load_state_dict()`); the
`rducc --train` and `rducc-run --train` tools use the same pieces. See
docs/training.md.
"""

from __future__ import annotations

from rducc.training.program import BucketedTrainingProgram, TrainingProgram, compile_training

__all__ = ["BucketedTrainingProgram", "TrainingProgram", "compile_training"]
