"""Generating tokens with rducc: prefill and decode compiled with a static cache.

A `Generator` wraps a transformers decoder in transformers' own export recipe
(`TorchExportableModuleWithStaticCache`: the KV cache as buffers the program
updates in place), exports it twice with `strict=True` (prefill: the prompt's
length at positions 0..P-1; decode: one token at a position given as input),
compiles both with `rducc.compile` and gives both Programs one weights dict:
the parameters, and the cache that prefill fills and each decode step extends.
Token selection is transformers' (its temperature, top-k and top-p warpers,
then `argmax` or `torch.multinomial` on a generator seeded with `seed`), so a
run equals `torch.manual_seed(seed); model.generate(...)` for the same settings,
end-of-sequence handling included.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rducc.errors import RduccError
from rducc.generation.beam import BeamSearch, beam_search
from rducc.generation.source import load_causal_lm, load_tokenizer
from rducc.generation.static_cache import masked_static_cache, prompt_positions, takes_position_ids
from rducc.program import Program, compile
from rducc.targets import DEFAULT_TARGET, Target, load_target

WEIGHTS_FILE = "weights.safetensors"
"""The one weights file `Generator.save` writes beside prefill.mlir and decode.mlir."""
Progress = Callable[[str], None]
"""Told what the generator is doing: 'compiling decode', 'token 3/16'."""


@dataclass(frozen=True)
class Sampling:
    """How the next token is picked: greedy (`do_sample=False`), else sampled
    after transformers' warpers (temperature, then top_k, then top_p)."""

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    """0: no top-k filter."""
    top_p: float = 1.0
    seed: int = 0
    num_beams: int = 1
    """Beam search over this many beams when > 1 (greedy beams: not with `do_sample`)."""
    length_penalty: float = 1.0
    """Beam search: a finished beam scores its log-probability / generated length ** length_penalty."""
    early_stopping: bool | str = False
    """Beam search: True, False or "never", as transformers' `early_stopping`."""
    num_return_sequences: int = 1
    """Sequences returned per prompt: the best beams (<= num_beams), or independent samples."""

    def check(self) -> None:
        if not isinstance(self.num_beams, int) or self.num_beams < 1:
            raise RduccError(f"num_beams must be an integer >= 1, got {self.num_beams}")
        count = self.num_return_sequences
        if not isinstance(count, int) or count < 1:
            raise RduccError(f"num_return_sequences must be an integer >= 1, got {count}")
        if count > 1 and self.num_beams == 1 and not self.do_sample:
            raise RduccError(f"num_return_sequences={count} needs sampling (do_sample) or beam search "
                             "(num_beams >= it): greedy search gives one sequence per prompt")
        if self.num_beams > 1 and count > self.num_beams:
            raise RduccError(f"num_return_sequences ({count}) must be at most num_beams ({self.num_beams}): "
                             "beam search returns its best beams")
        if self.early_stopping not in (True, False, "never"):
            raise RduccError(f"early_stopping must be true, false or never, got {self.early_stopping}")
        if self.temperature <= 0:
            raise RduccError(f"temperature must be > 0, got {self.temperature:g}")
        if self.top_k < 0:
            raise RduccError(f"top_k must be >= 0 (0: off), got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise RduccError(f"top_p must be in (0, 1], got {self.top_p:g}")

    @property
    def rows_per_prompt(self) -> int:
        """Rows the programs run for each prompt (transformers' expand size)."""
        return max(self.num_beams, self.num_return_sequences)

    def warpers(self, eos_count: int | None = None) -> Any:
        """transformers' LogitsProcessorList for these settings, as `generate` builds it
        (`_get_logits_processor`: beam sampling keeps at least one token past the
        `eos_count` end tokens, 2 when there is none)."""
        from transformers import LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

        keep = 1 if self.num_beams == 1 else (2 if eos_count is None else eos_count + 1)
        chosen = LogitsProcessorList()
        if self.do_sample and self.temperature != 1.0:
            chosen.append(TemperatureLogitsWarper(self.temperature))
        if self.do_sample and self.top_k != 0:
            chosen.append(TopKLogitsWarper(top_k=self.top_k, min_tokens_to_keep=keep))
        if self.do_sample and self.top_p < 1.0:
            chosen.append(TopPLogitsWarper(top_p=self.top_p, min_tokens_to_keep=keep))
        return chosen


@dataclass(frozen=True)
class ModeledTime:
    """A modeled time in seconds at the target's figures, and its range over the target's assumptions."""

    value: float
    low: float
    high: float

    def text(self) -> str:
        return f"{_us(self.value)} ({_us(self.low)}..{_us(self.high)})"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.2f} us" if seconds < 1e-3 else f"{seconds * 1e3:,.3f} ms"


@dataclass
class Generation:
    """What one `generate` call produced, and the modeled times on its target
    (computed when first asked for: the ranges cost each program 2 x the ranged figures)."""

    sequences: torch.Tensor
    """[batch, prompt + new] token ids, as transformers' `generate` returns them."""
    prompt_length: int
    cache_length: int
    """Positions of the static KV cache the programs hold."""
    target: str
    prefill: Program
    decode: Program
    modeled: Callable[[Program], ModeledTime]
    text: list[str] | None = None
    """Each sequence decoded (prompt and continuation), when there is a tokenizer."""
    split: str = ""
    """The multi-socket split the programs run with (`tp=2`), empty on one socket."""
    prefill_length: int = 0
    """The prompt length the prefill program runs (a prompt bucket's, when the prompt was padded up to one)."""

    @property
    def time_to_first_token(self) -> ModeledTime:
        """The prefill program's modeled time (it yields the first token)."""
        return self.modeled(self.prefill)

    @property
    def time_per_output_token(self) -> ModeledTime:
        """The decode program's modeled time (one token for every sequence of the batch)."""
        return self.modeled(self.decode)

    @property
    def tokens(self) -> torch.Tensor:
        """[batch, new] the generated token ids."""
        return self.sequences[:, self.prompt_length:]

    def summary(self) -> str:
        """One line: the target, the modeled times and the decode tokens/s."""
        batch = self.sequences.shape[0]
        rate = batch / self.time_per_output_token.value if self.time_per_output_token.value > 0 else 0.0
        on = f"{self.target}{f' ({self.split})' if self.split else ''}"
        return (f"modeled on {on}, batch {batch}, prompt {self.prompt_length} tokens: "
                f"time to first token {self.time_to_first_token.text()}, "
                f"time per output token {self.time_per_output_token.text()}, {rate:,.0f} tokens/s")


@dataclass
class _Cached:
    """The programs of one batch size and cache length: one weights dict for all."""

    wrapper: torch.nn.Module
    weights: dict[str, np.ndarray]
    empty_cache: dict[str, np.ndarray]
    decode: Program | None = None
    prefills: dict[int, Program] = field(default_factory=dict)


class Generator:
    """A decoder compiled for text generation; its programs are kept for later calls.

    `source` is what `load_causal_lm` takes (a checkpoint directory, a config
    file or model-type name with `overrides`, a config, a model). `tp` splits
    the model over a multi-socket target's sockets (tensor parallel)."""

    def __init__(self, source: Any, *, target: str | Target = DEFAULT_TARGET, tp: int = 0, opt_level: int = 2,
                 overrides: dict[str, Any] | None = None, seed: int = 0, progress: Progress | None = None):
        self.target = load_target(target)
        if tp > 1 and self.target.sockets < tp:
            raise RduccError(f"tp={tp} needs {tp} sockets; target {self.target.name} has {self.target.sockets}")
        if tp < 0:
            raise RduccError(f"tp must be >= 1, got {tp}")
        self.tp = tp
        self.opt_level = opt_level
        self.model = load_causal_lm(source, overrides, seed)
        self.tokenizer = load_tokenizer(source)
        self._progress = progress or (lambda _message: None)
        self._cached: dict[tuple[int, int], _Cached] = {}
        self._modeled: dict[int, ModeledTime] = {}
        """Each kept program's modeled time and range (by id: the programs live in `_cached`)."""

    # -- the programs -------------------------------------------------------------

    def _split(self) -> tuple[int, ...]:
        return (self.tp, 1) if self.tp >= 1 else (0, 0)  # 0: the cost model picks the split

    def _cache_of(self, batch: int, cache_length: int) -> _Cached:
        key = (batch, cache_length)
        if key not in self._cached:
            wrapper = masked_static_cache(self.model, batch, cache_length)
            self._cached[key] = _Cached(wrapper, {}, {})
        return self._cached[key]

    def _inputs(self, ids: torch.Tensor, start: int, mask: torch.Tensor,
                positions: torch.Tensor) -> dict[str, torch.Tensor]:
        """The programs' inputs: tokens at cache positions start.., the mask over the
        cache, and each token's position (when the model takes position ids)."""
        inputs = {"input_ids": ids.contiguous(), "cache_position": torch.arange(start, start + ids.shape[1]),
                  "attention_mask": mask.clone()}
        if takes_position_ids(self.model):
            inputs["position_ids"] = positions.contiguous()
        return inputs

    def _compile(self, cached: _Cached, ids: torch.Tensor, start: int, cache_length: int, what: str) -> Program:
        self._progress(f"exporting {what}")
        batch, length = ids.shape
        mask = torch.zeros(batch, cache_length, dtype=torch.long)
        mask[:, :start + length] = 1
        positions = torch.arange(start, start + length).expand(batch, length)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # dynamo's notes on transformers' globals
            exported = torch.export.export(cached.wrapper, (), self._inputs(ids, start, mask, positions), strict=True)
        self._progress(f"compiling {what}")
        program = compile(exported, (), target=self.target, opt_level=self.opt_level, split=self._split())
        if not cached.weights:
            cached.weights.update(program.weights)
            cached.empty_cache.update({name: value.copy() for name, value in program.weights.items()
                                       if _is_cache(name)})
        program.weights = cached.weights  # one set of weights: the cache prefill fills, decode extends
        return program

    def programs(self, batch: int, prompt_length: int, cache_length: int) -> tuple[Program, Program]:
        """The (prefill, decode) Programs for this batch, prompt length and cache length."""
        cached = self._cache_of(batch, cache_length)
        if prompt_length not in cached.prefills:
            ids = torch.zeros(batch, prompt_length, dtype=torch.long)
            cached.prefills[prompt_length] = self._compile(cached, ids, 0, cache_length,
                                                           f"prefill ({batch}x{prompt_length} tokens)")
        if cached.decode is None:
            ids = torch.zeros(batch, 1, dtype=torch.long)
            cached.decode = self._compile(cached, ids, min(prompt_length, cache_length - 1), cache_length,
                                          f"decode ({batch}x1 tokens)")
        cached.weights.update({name: value.copy() for name, value in cached.empty_cache.items()})
        return cached.prefills[prompt_length], cached.decode

    def save(self, directory: str | Path, batch: int, prompt_length: int, cache_length: int) -> list[Path]:
        """Write the (prefill, decode) programs of these sizes to DIR/prefill.mlir and
        DIR/decode.mlir, and their one weights file, DIR/weights.safetensors (the
        parameters and the empty cache), which both name; the paths written."""
        from rducc.dialects.contracts import set_weights_file
        from rducc.driver import module_text
        from rducc.files import text_writer, write_together
        from rducc.weights import numpy_to_torch, weights_writer

        prefill, decode = self.programs(batch, prompt_length, cache_length)
        out = Path(directory)
        outputs = []
        for name, program in (("prefill", prefill), ("decode", decode)):
            module = program.module.clone()
            set_weights_file(module, WEIGHTS_FILE)
            outputs.append((str(out / f"{name}.mlir"), text_writer(module_text(module))))
        tensors = {name: numpy_to_torch(value) for name, value in prefill.weights.items()}
        outputs.append((str(out / WEIGHTS_FILE), weights_writer(tensors)))
        write_together(outputs, [out])
        return [Path(path) for path, _ in outputs]

    # -- generating ---------------------------------------------------------------

    def generate(self, prompt_ids: Any = None, *, prompt: str | Sequence[str] | None = None,
                 max_new_tokens: int = 16, sampling: Sampling | None = None,
                 max_cache_len: int | None = None, attention_mask: Any = None,
                 prompt_buckets: Sequence[int] | None = None) -> Generation:
        """Generate up to `max_new_tokens` after each prompt (token ids, [batch, P],
        or text when there is a tokenizer); stops early once every sequence has
        ended (the model's eos_token_id), as transformers does. Prompts of
        different lengths are left-padded with the pad token; `attention_mask`
        ([batch, P], 0 at padding) gives the padding of a left-padded `prompt_ids`.
        `prompt_buckets` (prompt lengths, `[8, 32, 128]`): the prompt is left-padded
        (masked) up to the smallest that holds it and the cache sized for the
        largest, so prompts of other lengths reuse the same prefill and decode."""
        sampling = sampling or Sampling()
        sampling.check()
        ids, mask = self._prompt_tensor(prompt_ids, prompt, attention_mask)
        batch, length = ids.shape
        ids, mask, max_cache_len = self._bucketed(ids, mask, prompt_buckets, max_new_tokens, max_cache_len)
        padded = ids.shape[1] - length
        cache_length = self._cache_length(ids.shape[1], max_new_tokens, max_cache_len)
        rows = sampling.rows_per_prompt
        if rows > 1:  # each prompt once per beam or per sequence returned, as transformers expands it
            ids, mask = ids.repeat_interleave(rows, 0), mask.repeat_interleave(rows, 0)
        prefill, decode = self.programs(ids.shape[0], ids.shape[1], cache_length)
        if sampling.num_beams > 1:
            sequences = self._beams(prefill, decode, ids, mask, cache_length, max_new_tokens, sampling)
        else:
            sequences = self._loop(prefill, decode, ids, mask, cache_length, max_new_tokens, sampling)
        sequences = sequences[:, padded:]  # the bucket's padding off: the prompt as given
        text = self.tokenizer.batch_decode(sequences, skip_special_tokens=True) if self.tokenizer else None
        split = f"tp={self.tp}" if self.tp > 1 else ""
        return Generation(sequences, length, cache_length, self.target.name, prefill, decode, self.modeled_time,
                          text, split, length + padded)

    def modeled_time(self, program: Program) -> ModeledTime:
        """The program's modeled time on the target, with its range over the target's assumptions."""
        if id(program) not in self._modeled:
            headline = program.ranges({"time": lambda report: report.modeled_time_s}).headlines[0]
            self._modeled[id(program)] = ModeledTime(headline.value, headline.low, headline.high)
        return self._modeled[id(program)]

    def _prompt_tensor(self, prompt_ids: Any, prompt: str | Sequence[str] | None,
                       attention_mask: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """The left-padded [batch, P] token ids and their mask (0 at padding)."""
        if (prompt_ids is None) == (prompt is None):
            raise RduccError("give the prompt as token ids or as text (one of the two)")
        if prompt is not None:
            if self.tokenizer is None:
                raise RduccError("a text prompt needs a tokenizer in the checkpoint directory; "
                                 "give the prompt as token ids")
            texts = [prompt] if isinstance(prompt, str) else list(prompt)
            rows = [self.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        else:
            rows = _rows(prompt_ids)
        vocab = self.model.config.vocab_size
        if attention_mask is not None:  # a padded batch: its ids as given, checked against its mask
            mask = _rows(attention_mask)
            _left_padded(_unpad(rows, mask), vocab, 0)
            _left_padded(rows, vocab, 0)
            return torch.tensor(rows, dtype=torch.long), torch.tensor(mask, dtype=torch.long)
        return _left_padded(rows, vocab, _pad_id(self.model, _eos_ids(self.model)))

    def _bucketed(self, ids: torch.Tensor, mask: torch.Tensor, buckets: Sequence[int] | None, max_new_tokens: int,
                  max_cache_len: int | None) -> tuple[torch.Tensor, torch.Tensor, int | None]:
        """The prompt left-padded (mask 0) up to the smallest prompt bucket that holds it
        (as it is when none does), and the cache length: sized for the largest bucket."""
        if not buckets:
            return ids, mask, max_cache_len
        if not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in buckets):
            raise RduccError(f"prompt buckets must be whole numbers >= 1, got {list(buckets)}")
        length = ids.shape[1]
        chosen = min((b for b in buckets if b >= length), default=length)
        if max_cache_len is None and isinstance(max_new_tokens, int):
            max_cache_len = max(chosen, *buckets) + max_new_tokens - 1
        if chosen == length:
            return ids, mask, max_cache_len
        pad = torch.full((ids.shape[0], chosen - length), _pad_id(self.model, _eos_ids(self.model)), dtype=ids.dtype)
        return torch.cat([pad, ids], 1), torch.cat([torch.zeros_like(pad), mask], 1), max_cache_len

    def _cache_length(self, length: int, max_new_tokens: int, max_cache_len: int | None) -> int:
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise RduccError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens}")
        needed = length + max_new_tokens - 1  # the last token is picked, never fed back
        cache_length = max_cache_len if max_cache_len is not None else needed
        if length > cache_length:
            raise RduccError(f"the prompt ({length} tokens) is longer than the cache ({cache_length} positions)")
        if needed > cache_length:
            raise RduccError(f"a prompt of {length} tokens and {max_new_tokens} new tokens need a cache of "
                             f"{needed} positions; the cache has {cache_length}")
        limit = _position_limit(self.model.config)
        if limit is not None and cache_length > limit:
            raise RduccError(f"a cache of {cache_length} positions is longer than the model's "
                             f"{limit} positions (max_position_embeddings)")
        return cache_length

    def _beams(self, prefill: Program, decode: Program, ids: torch.Tensor, prompt_mask: torch.Tensor,
               cache_length: int, max_new_tokens: int, sampling: Sampling) -> torch.Tensor:
        """Beam search (`beam.beam_search`) on the two programs; the shared cache is
        reordered on the host by the surviving beams' indices after each step."""
        mask = torch.zeros(ids.shape[0], cache_length, dtype=torch.long)
        mask[:, :ids.shape[1]] = prompt_mask
        positions = [prompt_positions(prompt_mask)]
        weights = prefill.weights

        def run_prefill(tokens: torch.Tensor, start: int) -> torch.Tensor:
            return prefill(**self._inputs(tokens, start, mask, positions[0]))

        def run_decode(tokens: torch.Tensor, start: int) -> torch.Tensor:
            mask[:, start] = 1  # every beam of a prompt has the prompt's padding: no reordering needed
            positions[0] = positions[0][:, -1:] + 1
            return decode(**self._inputs(tokens, start, mask, positions[0]))

        def reorder(rows: torch.Tensor) -> None:
            order = rows.numpy()
            for name in [name for name in weights if _is_cache(name) and weights[name].ndim > 1]:
                weights[name] = weights[name][order]

        eos = _eos_ids(self.model)
        search = BeamSearch(sampling.num_beams, sampling.length_penalty, sampling.early_stopping,
                            sampling.do_sample, sampling.warpers(None if eos is None else eos.shape[0]),
                            sampling.num_return_sequences)
        if not sampling.do_sample:
            return beam_search(self.model, run_prefill, run_decode, reorder, ids, max_new_tokens, search,
                               self._progress)
        # transformers' beam sampling draws in `_get_top_k_continuations` from torch's global generator:
        # the same stream as `torch.manual_seed(seed); model.generate(...)`, the caller's own left as it was
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(sampling.seed)
            return beam_search(self.model, run_prefill, run_decode, reorder, ids, max_new_tokens, search,
                               self._progress)

    def _loop(self, prefill: Program, decode: Program, ids: torch.Tensor, prompt_mask: torch.Tensor,
              cache_length: int, max_new_tokens: int, sampling: Sampling) -> torch.Tensor:
        """transformers' `_sample` loop on the two programs; the mask covers the
        whole cache (1: a token written, 0: padding or not written yet)."""
        warpers = sampling.warpers()
        generator = torch.Generator().manual_seed(sampling.seed)
        eos = _eos_ids(self.model)
        pad = _pad_id(self.model, eos)
        sequences = ids
        unfinished = torch.ones(ids.shape[0], dtype=torch.long)
        mask = torch.zeros(ids.shape[0], cache_length, dtype=torch.long)
        mask[:, :ids.shape[1]] = prompt_mask
        positions = prompt_positions(prompt_mask)
        logits = prefill(**self._inputs(ids, 0, mask, positions))
        for step in range(max_new_tokens):
            self._progress(f"token {step + 1}/{max_new_tokens}")
            scores = warpers(sequences, logits[:, -1, :].to(torch.float32))
            if sampling.do_sample:
                chosen = torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1, generator=generator)[:, 0]
            else:
                chosen = torch.argmax(scores, dim=-1)
            if eos is not None:
                chosen = chosen * unfinished + pad * (1 - unfinished)
            sequences = torch.cat([sequences, chosen[:, None]], dim=-1)
            if eos is not None:
                unfinished = unfinished & ~torch.isin(chosen, eos)
                if not unfinished.any():
                    break
            if step + 1 < max_new_tokens:
                at = sequences.shape[1] - 1
                mask[:, at] = 1
                positions = positions[:, -1:] + 1
                logits = decode(**self._inputs(chosen[:, None], at, mask, positions))
        return sequences


def generate(source: Any, prompt_ids: Any = None, *, prompt: str | Sequence[str] | None = None,
             max_new_tokens: int = 16, do_sample: bool = False, temperature: float = 1.0, top_k: int = 0,
             top_p: float = 1.0, seed: int = 0, target: str | Target = DEFAULT_TARGET, tp: int = 0,
             opt_level: int = 2, max_cache_len: int | None = None, overrides: dict[str, Any] | None = None,
             progress: Progress | None = None, attention_mask: Any = None, num_beams: int = 1,
             num_return_sequences: int = 1, length_penalty: float = 1.0,
             early_stopping: bool | str = False, prompt_buckets: Sequence[int] | None = None) -> Generation:
    """Compile `source`'s prefill and decode for `target` and generate from the
    prompt (`Generator(...).generate(...)`); see `Generation` for the result.
    `num_beams` > 1 is beam search (sampled with `do_sample`); `num_return_sequences`
    sequences come back per prompt, one after the other, as transformers returns them."""
    generator = Generator(source, target=target, tp=tp, opt_level=opt_level, overrides=overrides, seed=seed,
                          progress=progress)
    sampling = Sampling(do_sample, temperature, top_k, top_p, seed, num_beams, length_penalty, early_stopping,
                        num_return_sequences)
    return generator.generate(prompt_ids, prompt=prompt, max_new_tokens=max_new_tokens, sampling=sampling,
                              max_cache_len=max_cache_len, attention_mask=attention_mask,
                              prompt_buckets=prompt_buckets)


# -- helpers ------------------------------------------------------------------------


def _is_cache(name: str) -> bool:
    return name.startswith(("key_cache_", "value_cache_", "cumulative_length_"))


def _rows(values: Any) -> list:
    """A tensor, an array or nested lists as a list of rows."""
    rows = values.tolist() if hasattr(values, "tolist") else list(values)
    return [rows] if rows and not isinstance(rows[0], list | tuple) else rows


def _unpad(rows: list, mask: list) -> list:
    """Each row's tokens where the attention mask is 1 (a left-padded batch and its mask)."""
    if len(mask) != len(rows) or any(len(m) != len(r) for m, r in zip(mask, rows, strict=True)):
        raise RduccError("the attention mask's shape differs from the prompt's")
    for m in mask:
        if any(v not in (0, 1) for v in m) or any(a > b for a, b in zip(m, m[1:], strict=False)):
            raise RduccError("the attention mask must be 0 (left padding) then 1 (the prompt) in each row")
    return [[t for t, keep in zip(r, m, strict=True) if keep] for r, m in zip(rows, mask, strict=True)]


def _left_padded(rows: list, vocab: int, pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """[batch, longest] ids, shorter prompts left-padded with `pad`, and the mask (0 at padding)."""
    if not rows or not all(isinstance(r, list | tuple) and r for r in rows):
        raise RduccError("the prompt is empty: give at least one token")
    if not all(isinstance(t, int) and 0 <= t < vocab for r in rows for t in r):
        raise RduccError(f"a prompt token id is not an integer in 0..{vocab - 1} (the model's vocabulary)")
    longest = max(len(r) for r in rows)
    ids = torch.tensor([[pad] * (longest - len(r)) + list(r) for r in rows], dtype=torch.long)
    mask = torch.tensor([[0] * (longest - len(r)) + [1] * len(r) for r in rows], dtype=torch.long)
    return ids, mask


def _position_limit(config: Any) -> int | None:
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        if isinstance(value, int):
            return value
    return None


def _eos_ids(model: Any) -> torch.Tensor | None:
    eos = model.generation_config.eos_token_id
    if eos is None:
        return None
    return torch.tensor(eos if isinstance(eos, list) else [eos], dtype=torch.long)


def _pad_id(model: Any, eos: torch.Tensor | None) -> int:
    pad = model.generation_config.pad_token_id
    if pad is not None:
        return int(pad)
    return int(eos[0]) if eos is not None else 0

