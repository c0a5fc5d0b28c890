"""`rducc.generate` against transformers' `generate` on every decoder family (issue 32).

Each family of examples/decoders.py (tiny configs, random init) generates 6
tokens after a batch-2 prompt with rducc (prefill and decode compiled with a
static cache) and with transformers, greedy and sampled (temperature 0.7,
top-k 20, top-p 0.9, the same seed), with prompts of one length and with
prompts of 5 and 3 tokens (left-padded, attention mask); a family counts when
all four match token for token. --quick runs 3 families. CI runs Llama (tp=2), Qwen2 and GPT-2
(test/python/test_generate.py).

Run: python bench/generate_families.py [--quick] [--tp 2]
"""

from __future__ import annotations

import sys
import time

import torch
from common import Section, standalone

import decoders  # noqa: E402

QUICK_FAMILIES = ("llama", "phi3", "gpt_neox")
NEW = 6
TP = int(sys.argv[sys.argv.index("--tp") + 1]) if "--tp" in sys.argv else 0


def _transformers(model, ids: torch.Tensor, mask: torch.Tensor, seed: int, **settings) -> torch.Tensor:
    torch.manual_seed(seed)
    with torch.no_grad():
        return model.generate(ids, attention_mask=mask, max_new_tokens=NEW, **settings)


def check(family: str) -> str:
    """'ok', or what differs, or the first line of the error."""
    import rducc
    from rducc.generation import Sampling

    config, _ = decoders._config(family)
    model = rducc.generation.load_causal_lm(config, seed=0)
    ids = torch.randint(3, decoders.VOCAB, (2, 5), generator=torch.Generator().manual_seed(1))
    padded_mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    sampled_settings = dict(do_sample=True, temperature=0.7, top_k=20, top_p=0.9)
    problems = []
    try:
        generator = rducc.Generator(model, target="sn40l-8" if TP else "sn40l", tp=TP)
        for what, mask in (("", torch.ones_like(ids)), ("padded ", padded_mask)):
            padded = ids.masked_fill(mask == 0, int(model.generation_config.pad_token_id or 0))
            greedy = generator.generate(padded, attention_mask=mask, max_new_tokens=NEW).sequences
            sampling = Sampling(True, 0.7, 20, 0.9, seed=3)
            sampled = generator.generate(padded, attention_mask=mask, max_new_tokens=NEW, sampling=sampling).sequences
            if not torch.equal(greedy, _transformers(model, padded, mask, 0, do_sample=False)):
                problems.append(f"{what}greedy differs")
            if not torch.equal(sampled, _transformers(model, padded, mask, 3, **sampled_settings)):
                problems.append(f"{what}sampled differs")
    except Exception as error:  # noqa: BLE001 - a family's failure is a figure, not a crash
        return f"error: {str(error).splitlines()[0][:120]}"
    return ", ".join(problems) or "ok"


def run(quick: bool) -> Section:
    families = QUICK_FAMILIES if quick else decoders.FAMILIES
    section = Section("Text generation: rducc.generate vs transformers' generate",
                      f"python bench/generate_families.py{' --quick' if quick else ''}{f' --tp {TP}' if TP else ''}")
    results = {}
    for family in families:
        start = time.perf_counter()
        results[family] = check(family)
        section.details.append(f"{family:<10} {results[family]}  ({time.perf_counter() - start:.1f} s)")
    matched = sum(r == "ok" for r in results.values())
    section.add("families matching token for token (greedy and sampled, batch 2, one length and left-padded)", f"{matched} of {len(results)}",
                f"all {len(results)}", matched == len(results))
    return section


def main() -> None:
    standalone(run, __doc__ or "")


if __name__ == "__main__":
    if "--tp" in sys.argv:
        at = sys.argv.index("--tp")
        del sys.argv[at:at + 2]
    main()
