"""Training numerics: 20 steps of SGD and AdamW through rducc against eager
PyTorch (torch.optim), per model and -O level, on one socket.

    .venv/bin/python bench/training_numerics.py [MODEL ...] [--levels 0,2] [--optimizers sgd,adamw]

Prints, per run, the largest relative difference of the losses over the 20
steps, the largest parameter difference after the last step, and whether
test/python/training_cases.assert_matches accepts it (the tolerances and why
are documented there and in docs/training.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))

from training_cases import CASES, assert_matches, train_both  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(CASES))
    parser.add_argument("--levels", default="0,2")
    parser.add_argument("--optimizers", default="sgd,adamw")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    print(f"{'model':<11} {'optimizer':<9} {'-O':>2} {'loss max rel diff':>18} {'param max abs diff':>19} "
          f"{'compile+train s':>15}  verdict", flush=True)
    for model in args.models:
        for optimizer in args.optimizers.split(","):
            for level in (int(x) for x in args.levels.split(",")):
                start = time.perf_counter()
                history = train_both(model, optimizer, steps=args.steps, opt_level=level)
                seconds = time.perf_counter() - start
                loss = max(abs(a - b) / abs(b) for a, b in zip(history.rducc_losses, history.eager_losses))
                param = max((history.rducc_parameters[n] - p).abs().max().item()
                            for n, p in history.eager_parameters.items())
                try:
                    assert_matches(history)
                    verdict = "ok"
                except AssertionError as error:
                    verdict = f"FAIL {str(error).splitlines()[0][:80]}"
                print(f"{model:<11} {optimizer:<9} {level:>2} {loss:>18.3g} {param:>19.3g} {seconds:>15.1f}  {verdict}",
                      flush=True)


if __name__ == "__main__":
    main()
