"""Tensor parallelism on transformers' decoder families at batch 1, 2 and 4 (issue 17, item 3).

Every family of examples/decoders.py (tiny configs, random init) is exported
once per batch and compiled at -O0 with `rdu-partition{tp=N pp=M}` for
tp = 2, 4, 8 on sn40l-8 and tp x pp = 4 x 2 (sn40l-8) and 8 x 2 (sn40l-16),
run on every socket and compared with eager. Figures: the families for which
every split at every batch matches eager (goal >= 10), and per family the
splits that fail (with the first line of the error) and the all-gathers left
(values some op needs whole: correct, slower). --quick runs 3 families at
batch 2 only. CI runs a subset (test/python/test_tp_families.py).

Run: python bench/tp_families.py [--quick]
"""

from __future__ import annotations

import time

from common import Section, standalone

import decoders  # noqa: E402

SPLITS = ((2, 1, "sn40l-8"), (4, 1, "sn40l-8"), (8, 1, "sn40l-8"), (4, 2, "sn40l-8"), (8, 2, "sn40l-16"))
QUICK_FAMILIES = ("llama", "qwen2", "gpt_neox")


def check(family: str, batch: int, splits=SPLITS) -> list[tuple[str, str, int]]:
    """Per split, (split, 'ok' or the error, all-gathers in the program) for one family and batch."""
    import torch

    import rducc
    from rducc.api import after
    from rducc.dialects.rdu.collectives import AllGatherOp
    from rducc.passes.rdu_partition import RduPartition

    model, inputs = decoders.decoder(family, batch)
    with torch.no_grad():
        expected = model(*inputs)
    exported = torch.export.export(model, inputs)
    rows = []
    for tp, pp, target in splits:
        name = f"tp={tp}" + (f" pp={pp}" if pp > 1 else "")
        try:
            program = rducc.compile(exported, inputs, target=target, opt_level=0,
                                    passes=[after("rdu-canonicalize", RduPartition(tp=tp, pp=pp))])
            error = (program(*inputs) - expected).abs().max().item()
            gathers = sum(isinstance(op, AllGatherOp) for op in program.module.walk())
            rows.append((name, "ok" if error <= 1e-4 else f"max error {error:.1e}", gathers))
        except Exception as failure:  # noqa: BLE001 - reported in the table
            rows.append((name, f"{type(failure).__name__}: {str(failure).splitlines()[0][:160]}", -1))
    return rows


def run(quick: bool) -> Section:
    families = QUICK_FAMILIES if quick else decoders.FAMILIES
    batches = (2,) if quick else (1, 2, 4)
    section = Section("Tensor parallelism on decoder families", "python bench/tp_families.py" + " --quick" * quick)
    section.details += ["| family | batch | splits matching eager | failures | all-gathers |", "| --- | --- | --- | --- | --- |"]
    passing = []
    for family in families:
        family_ok = True
        for batch in batches:
            start = time.perf_counter()
            rows = check(family, batch)
            good = [name for name, status, _ in rows if status == "ok"]
            bad = "; ".join(f"{name}: {status}" for name, status, _ in rows if status != "ok") or "-"
            gathers = ", ".join(f"{name}: {count}" for name, status, count in rows if count > 0) or "0"
            family_ok = family_ok and len(good) == len(rows)
            section.details.append(f"| {family} | {batch} | {', '.join(good) or '-'} | {bad} | {gathers} |")
            print(f"{family} b={batch}: {len(good)}/{len(rows)} ({time.perf_counter() - start:.0f} s)", flush=True)
        if family_ok:
            passing.append(family)
    goal = 3 if quick else 10
    section.add("families whose every split matches eager", f"{len(passing)} of {len(families)} ({', '.join(passing)})",
                f">= {goal}", len(passing) >= goal)
    return section


def main() -> None:
    standalone(run, __doc__ or "")


if __name__ == "__main__":
    main()
