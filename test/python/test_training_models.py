"""Training the transformers models of issue 27's bar through rducc: 20 steps
against eager and torch.optim (tolerances: training_cases.py), 6 steps here (the
bar's 20 in bench/train_matrix.py, every model, optimizer, precision, -O and split). One optimizer
and -O level per model here, to keep the suite fast; bench/training_numerics.py
runs every model with SGD and AdamW at -O0 and -O2 (docs/training.md)."""

from __future__ import annotations

import pytest
from training_cases import assert_matches, train_both


@pytest.mark.parametrize(("model", "optimizer", "opt_level"), [
    ("tiny_llama", "sgd", 0),
    ("tiny_gpt2", "adamw", 2),
    ("vit", "sgd", 2),
])
def test_transformers_model_trains_as_eager(model: str, optimizer: str, opt_level: int) -> None:
    assert_matches(train_both(model, optimizer, steps=6, opt_level=opt_level))
