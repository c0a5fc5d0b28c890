"""Text generation (issue 32): a transformers decoder's prefill and decode,
exported with a static KV cache, compiled by rducc (one set of weights), and
run greedily or sampled on rducc's runtime, with the modeled time to first
token and per output token on the target.

    result = rducc.generate("ckpt/", prompt_ids=[[1, 2, 3]], max_new_tokens=8)
    result.tokens, result.text, result.time_to_first_token, result.time_per_output_token

`Generator` keeps the compiled programs for more calls; `rducc generate` is
the command line (docs/generate.md).
"""

from __future__ import annotations

from rducc.generation.generator import Generation, Generator, Sampling, generate
from rducc.generation.source import load_causal_lm

__all__ = ["Generation", "Generator", "Sampling", "generate", "load_causal_lm"]
