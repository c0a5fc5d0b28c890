"""Beam search on rducc's programs, with transformers' own beam bookkeeping.

`beam_search` is transformers' `GenerationMixin._beam_search` loop with the
model call replaced by the compiled programs: it calls the model's own
helpers (`_get_top_k_continuations`, `_get_running_beams_for_next_iteration`,
`_update_finished_beams`, `_check_early_stop_heuristic`,
`_beam_search_has_unfinished_sequences`), so `num_beams`, `length_penalty` and
`early_stopping` mean what they mean in `model.generate`. The static KV cache
is reordered by the surviving beams' indices **on the host**: `reorder` gathers
the cache arrays the programs share along their batch axis between steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

Step = Callable[[torch.Tensor, int], torch.Tensor]
"""(tokens [rows, n], cache position of the first) -> logits [rows, n, vocab]."""


@dataclass(frozen=True)
class BeamSearch:
    """The settings of one beam search, as `model.generate` names them."""

    num_beams: int
    length_penalty: float = 1.0
    early_stopping: bool | str = False
    do_sample: bool = False
    """Beam sampling: the continuations are drawn (torch.multinomial, torch's global generator) from the
    warped accumulated log-probabilities instead of taken by top-k."""
    warpers: Any = None
    """transformers' LogitsProcessorList applied to each step's log-probabilities (sampling's warpers)."""
    num_return_sequences: int = 1


def beam_search(model: Any, prefill: Step, decode: Step, reorder: Callable[[torch.Tensor], None],
                ids: torch.Tensor, max_new_tokens: int, search: BeamSearch,
                progress: Callable[[str], None]) -> torch.Tensor:
    """The `num_return_sequences` best beams of each prompt, [batch * n, prompt + new]
    as `model.generate(num_beams=...)` returns them; `ids` are the prompts already
    repeated per beam ([batch * num_beams, P])."""
    from transformers import EosTokenCriteria, MaxLengthCriteria, StoppingCriteriaList

    num_beams, length_penalty, early_stopping = search.num_beams, search.length_penalty, search.early_stopping

    eos = model.generation_config.eos_token_id
    eos_ids = None if eos is None else torch.tensor(eos if isinstance(eos, list) else [eos], dtype=torch.long)
    pad = model.generation_config.pad_token_id
    rows, prompt_length = ids.shape
    batch = rows // num_beams
    max_length = prompt_length + max_new_tokens
    criteria = StoppingCriteriaList([MaxLengthCriteria(max_length)])
    if eos_ids is not None:
        criteria.append(EosTokenCriteria(eos_ids))
    beams_to_keep = max(2, 1 + (0 if eos_ids is None else eos_ids.shape[0])) * num_beams
    top_num_beam_mask = torch.cat((torch.ones(num_beams, dtype=torch.bool),
                                   torch.zeros(beams_to_keep - num_beams, dtype=torch.bool)))
    pad_value = pad if pad is not None else (int(eos_ids[0]) if eos_ids is not None else None)
    fill = (pad_value or int(eos_ids[0])) if eos_ids is not None else -1  # transformers' own precedence
    running = torch.full((batch, num_beams, max_length), fill_value=int(fill), dtype=torch.int64)
    running[:, :, :prompt_length] = ids.view(batch, num_beams, prompt_length)
    sequences = running.clone()
    running_scores = torch.zeros(batch, num_beams)
    running_scores[:, 1:] = -1e9
    beam_scores = torch.full((batch, num_beams), -1e9)
    finished = torch.zeros(batch, num_beams, dtype=torch.bool)
    unsatisfied = torch.ones(batch, 1, dtype=torch.bool)
    hits = torch.zeros(batch, num_beams, dtype=torch.bool)
    running_indices = torch.full((batch, num_beams, max_new_tokens), -1, dtype=torch.int32)
    beam_indices = running_indices.clone()
    length = prompt_length
    logits = prefill(ids, 0)
    while True:
        progress(f"token {length - prompt_length + 1}/{max_new_tokens}")
        log_probs = torch.log_softmax(logits[:, -1, :].to(torch.float32), dim=-1)
        if search.warpers:
            log_probs = search.warpers(running[:, :, :length].reshape(batch * num_beams, length), log_probs)
        log_probs = (log_probs.view(batch, num_beams, -1) + running_scores[:, :, None]).reshape(batch, -1)
        topk_log_probs, topk_running, topk_indices = model._get_top_k_continuations(
            accumulated_log_probs=log_probs, running_sequences=running, running_beam_indices=running_indices,
            cur_len=length, decoder_prompt_len=prompt_length, do_sample=search.do_sample, beams_to_keep=beams_to_keep,
            num_beams=num_beams, batch_size=batch)
        hits = criteria(topk_running[:, :, :length + 1].reshape(batch * beams_to_keep, -1), None)
        hits = hits.view(batch, beams_to_keep)
        running, running_scores, running_indices = model._get_running_beams_for_next_iteration(
            topk_log_probs=topk_log_probs, topk_running_sequences=topk_running,
            topk_running_beam_indices=topk_indices, next_token_hits_stopping_criteria=hits, num_beams=num_beams)
        sequences, beam_scores, beam_indices, finished = model._update_finished_beams(
            sequences=sequences, topk_running_sequences=topk_running, beam_scores=beam_scores,
            topk_log_probs=topk_log_probs, beam_indices=beam_indices, topk_running_beam_indices=topk_indices,
            is_early_stop_heuristic_unsatisfied=unsatisfied, is_sent_finished=finished,
            next_token_hits_stopping_criteria=hits, top_num_beam_mask=top_num_beam_mask, num_beams=num_beams,
            cur_len=length, decoder_prompt_len=prompt_length, length_penalty=length_penalty,
            early_stopping=early_stopping)
        reorder(running_indices[..., length - prompt_length].reshape(-1).long())
        length += 1
        unsatisfied = model._check_early_stop_heuristic(
            is_early_stop_heuristic_unsatisfied=unsatisfied, running_beam_scores=running_scores,
            beam_scores=beam_scores, is_sent_finished=finished, cur_len=length, max_length=max_length,
            decoder_prompt_len=prompt_length, early_stopping=early_stopping, length_penalty=length_penalty)
        if not model._beam_search_has_unfinished_sequences(unsatisfied, finished, hits, early_stopping):
            break
        logits = decode(running[:, :, length - 1].reshape(-1, 1), length - 1)
    count = search.num_return_sequences
    best = sequences[:, :count, :].reshape(batch * count, -1)
    generated = ((beam_indices[:, :count, :].reshape(batch * count, -1) + 1).bool()).sum(dim=1).max()
    return best[:, :prompt_length + int(generated)]
