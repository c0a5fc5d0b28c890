"""Text generation (issue 32): `rducc generate` and `rducc.generate` give
transformers' `generate` tokens, token for token, greedy and sampled.

Sampling is checked token for token too: rducc applies transformers' own
warpers and draws with `torch.multinomial` on a generator seeded with `seed`,
which is what `torch.manual_seed(seed); model.generate(do_sample=True)` draws
(beam sampling: transformers' own `_get_top_k_continuations` draws from
torch's global generator, seeded with `seed` inside a forked RNG state).
Three decoder families (Llama, Qwen2, GPT-2), batch 1 and 2, and tp=2 on
sn40l-8; tiny configs, each model's programs compiled once per module.
"""

from __future__ import annotations

import pytest
import torch

import rducc
from rducc.dialects.contracts import spmd_ranks
from rducc.generation import Generator, Sampling, load_causal_lm
from rducc.tools.generate import main as generate_main

QWEN2 = dict(vocab_size=96, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=32)
LLAMA = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=32)
OPT = dict(vocab_size=72, hidden_size=32, ffn_dim=64, num_hidden_layers=1, num_attention_heads=4,
           max_position_embeddings=32, word_embed_proj_dim=32, pad_token_id=1, bos_token_id=2, eos_token_id=2)
GPT2 = dict(vocab_size=80, n_embd=32, n_layer=1, n_head=4, n_positions=32, bos_token_id=1, eos_token_id=2)
NEW = 5


def _transformers_generate(model, ids: torch.Tensor, seed: int = 0, attention_mask: torch.Tensor | None = None,
                           **settings) -> torch.Tensor:
    torch.manual_seed(seed)
    mask = torch.ones_like(ids) if attention_mask is None else attention_mask
    with torch.no_grad():
        return model.generate(ids, attention_mask=mask, max_new_tokens=NEW, **settings)


def _prompt(batch: int, length: int, vocab: int, seed: int = 1) -> torch.Tensor:
    return torch.randint(3, vocab, (batch, length), generator=torch.Generator().manual_seed(seed))


@pytest.fixture(scope="module")
def qwen2() -> Generator:
    """A Qwen2 decoder (config object, random weights); its batch-2 programs compile on first use."""
    from transformers import Qwen2Config

    messages: list[str] = []
    generator = Generator(Qwen2Config(**QWEN2), seed=3, progress=messages.append)
    generator.messages = messages  # type: ignore[attr-defined]
    return generator


def test_greedy_batch_2_equals_transformers_and_reports_modeled_times(qwen2):
    ids = _prompt(2, 4, QWEN2["vocab_size"])
    result = qwen2.generate(ids, max_new_tokens=NEW)
    assert torch.equal(result.sequences, _transformers_generate(qwen2.model, ids, do_sample=False))
    assert result.tokens.shape == (2, NEW)
    assert {"compiling prefill (2x4 tokens)", "compiling decode (2x1 tokens)", f"token {NEW}/{NEW}"} <= set(
        qwen2.messages)
    prefill, decode = qwen2.programs(2, 4, 4 + NEW - 1)
    assert prefill.weights is decode.weights  # one set of weights: the cache prefill fills is decode's
    assert result.time_to_first_token.value == pytest.approx(prefill.report.modeled_time_s)
    assert result.time_per_output_token.value == pytest.approx(decode.report.modeled_time_s)
    for modeled in (result.time_to_first_token, result.time_per_output_token):
        assert 0 < modeled.low < modeled.value < modeled.high
    assert "time to first token" in result.summary() and "tokens/s" in result.summary()


def test_sampled_batch_2_equals_transformers_with_the_same_seed(qwen2):
    """One seed (test_sampling_properties shows seeds differ; the beam-sampling test draws with seed 7)."""
    seed = 0
    ids = _prompt(2, 4, QWEN2["vocab_size"])
    sampling = Sampling(do_sample=True, temperature=0.7, top_k=20, top_p=0.9, seed=seed)
    result = qwen2.generate(ids, max_new_tokens=NEW, sampling=sampling)
    expected = _transformers_generate(qwen2.model, ids, seed, do_sample=True, temperature=0.7, top_k=20, top_p=0.9)
    assert torch.equal(result.sequences, expected)


def test_sampling_properties(qwen2):
    """top_k=1 is greedy whatever the seed; a flat temperature makes seeds differ."""
    ids = _prompt(2, 4, QWEN2["vocab_size"])
    greedy = qwen2.generate(ids, max_new_tokens=NEW).tokens
    for seed in (1, 2):
        top1 = qwen2.generate(ids, max_new_tokens=NEW, sampling=Sampling(True, 1.0, 1, 1.0, seed)).tokens
        assert torch.equal(top1, greedy)
    hot = [qwen2.generate(ids, max_new_tokens=NEW, sampling=Sampling(True, 50.0, 0, 1.0, seed)).tokens
           for seed in (1, 2)]
    assert not torch.equal(hot[0], hot[1])


def test_generation_stops_at_the_end_of_sequence_as_transformers_does(qwen2):
    """With the second greedy token of row 0 as eos: row 0 ends there, padded after."""
    ids = _prompt(2, 4, QWEN2["vocab_size"])
    config = qwen2.model.generation_config
    saved = config.eos_token_id, config.pad_token_id
    try:
        config.eos_token_id = int(qwen2.generate(ids, max_new_tokens=NEW).tokens[0, 1])
        config.pad_token_id = 0
        result = qwen2.generate(ids, max_new_tokens=NEW)
        assert torch.equal(result.sequences, _transformers_generate(qwen2.model, ids, do_sample=False))
        assert result.tokens[0, 2:].eq(0).all()
    finally:
        config.eos_token_id, config.pad_token_id = saved


PADDED_MASK = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
"""Row 0: a 2-token prompt left-padded to row 1's 4 tokens."""


@pytest.mark.parametrize("sampling", [Sampling(), Sampling(True, 0.7, 20, 0.9, seed=5)], ids=["greedy", "sampled"])
def test_prompts_of_unequal_length_left_padded_equal_transformers(qwen2, sampling):
    """A left-padded batch with its attention mask, and the same prompts as ragged
    lists (rducc pads them): both equal transformers' generate with that mask."""
    ids = _prompt(2, 4, QWEN2["vocab_size"]).masked_fill(PADDED_MASK == 0, 0)
    result = qwen2.generate(ids, attention_mask=PADDED_MASK, max_new_tokens=NEW, sampling=sampling)
    settings = dict(do_sample=True, temperature=0.7, top_k=20, top_p=0.9) if sampling.do_sample else {}
    torch.manual_seed(sampling.seed)
    with torch.no_grad():
        expected = qwen2.model.generate(ids, attention_mask=PADDED_MASK, max_new_tokens=NEW, **settings)
    assert torch.equal(result.sequences, expected)
    unpadded = qwen2.generate([ids[0, 2:].tolist(), ids[1].tolist()], max_new_tokens=NEW, sampling=sampling)
    assert torch.equal(unpadded.tokens, expected[:, 4:])
    alone = qwen2.generate(ids[1:].expand(2, 4), max_new_tokens=NEW, sampling=Sampling()).tokens[0]
    if not sampling.do_sample:  # the padded row does not disturb its neighbour
        assert torch.equal(result.tokens[1], alone)


@pytest.mark.parametrize("length_penalty, early_stopping", [(1.0, False), (0.5, True), (2.0, "never")])
def test_beam_search_equals_transformers(qwen2, length_penalty, early_stopping):
    """One prompt, 2 beams (the batch-2 programs), with the second token of the best
    beam as eos (beams finish early, the length penalty ranks them): transformers'
    beam search, the static cache reordered on the host."""
    ids = _prompt(1, 4, QWEN2["vocab_size"], seed=2)
    config = qwen2.model.generation_config
    saved = config.eos_token_id, config.pad_token_id
    try:
        config.eos_token_id = int(qwen2.generate(ids, max_new_tokens=NEW, sampling=Sampling(num_beams=2)).tokens[0, 1])
        config.pad_token_id = 0
        beams = Sampling(num_beams=2, length_penalty=length_penalty, early_stopping=early_stopping)
        result = qwen2.generate(ids, max_new_tokens=NEW, sampling=beams)
        with torch.no_grad():
            expected = qwen2.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, num_beams=2,
                                            length_penalty=length_penalty, early_stopping=early_stopping)
    finally:
        config.eos_token_id, config.pad_token_id = saved
    assert torch.equal(result.sequences, expected)


def test_beam_search_differs_from_greedy_and_needs_the_reorder(qwen2, monkeypatch):
    """A prompt where 2 beams pick another continuation than greedy; without the
    cache reorder the tokens would not be transformers'."""
    ids = _prompt(1, 4, QWEN2["vocab_size"], seed=2)
    beams = qwen2.generate(ids, max_new_tokens=NEW, sampling=Sampling(num_beams=2)).sequences
    assert not torch.equal(beams[:, 4:], qwen2.generate(ids.expand(2, 4), max_new_tokens=NEW).tokens[:1])
    with torch.no_grad():
        expected = qwen2.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, num_beams=2)
    assert torch.equal(beams, expected)
    from rducc.generation import beam

    real = beam.beam_search
    monkeypatch.setattr("rducc.generation.generator.beam_search",
                        lambda model, prefill, decode, reorder, *rest: real(model, prefill, decode, lambda _: None,
                                                                            *rest))
    assert not torch.equal(qwen2.generate(ids, max_new_tokens=NEW, sampling=Sampling(num_beams=2)).sequences,
                           expected)


def test_beam_sampling_and_several_sequences_batch_2_equal_transformers_with_the_same_seed(qwen2):
    """Two prompts, 2 sampled beams each, both beams returned; then 2 independent
    samples per prompt (the same 4-row programs). transformers draws beam sampling's
    continuations from torch's global generator (`_get_top_k_continuations`) and
    single samples from it too: rducc draws the same stream, so the tokens are equal."""
    seed = 7
    ids = _prompt(2, 4, QWEN2["vocab_size"], seed=3)
    warped = dict(temperature=3.0, top_k=12, top_p=0.95)
    beams = Sampling(do_sample=True, seed=seed, num_beams=2, num_return_sequences=2, **warped)
    result = qwen2.generate(ids, max_new_tokens=NEW, sampling=beams)
    expected = _transformers_generate(qwen2.model, ids, seed, do_sample=True, num_beams=2, num_return_sequences=2,
                                      **warped)
    assert result.sequences.shape[0] == 4 and torch.equal(result.sequences, expected)
    greedy_beams = qwen2.generate(ids, max_new_tokens=NEW, sampling=Sampling(num_beams=2, num_return_sequences=2))
    assert not torch.equal(result.sequences, greedy_beams.sequences)  # sampled, not the greedy beams
    samples = qwen2.generate(ids, max_new_tokens=NEW,
                             sampling=Sampling(do_sample=True, seed=seed, num_return_sequences=2, **warped))
    expected = _transformers_generate(qwen2.model, ids, seed, do_sample=True, num_return_sequences=2, **warped)
    assert torch.equal(samples.sequences, expected)
    assert not torch.equal(samples.sequences[0], samples.sequences[1])  # two samples of one prompt


def test_prompt_buckets_pad_shorter_prompts_and_reuse_the_programs(qwen2):
    """Prompts of 3 and of 2 tokens with a bucket of 4: left-padded (masked) to 4,
    both run the batch-2 programs of 4-token prompts (the greedy test's: compiled
    once) and give transformers' tokens for the prompts as given; the bucket's
    padding is not returned."""
    programs = qwen2.programs(2, 4, 4 + NEW - 1)
    for length in (3, 2):
        ids = _prompt(2, length, QWEN2["vocab_size"], seed=4)
        result = qwen2.generate(ids, max_new_tokens=NEW, prompt_buckets=[4])
        assert result.prompt_length == length and result.prefill_length == 4
        assert torch.equal(result.sequences, _transformers_generate(qwen2.model, ids, do_sample=False))
        assert (result.prefill, result.decode) == programs and result.cache_length == 4 + NEW - 1
    assert len(qwen2._cached[(2, 4 + NEW - 1)].prefills) == 1  # no prefill compiled per prompt length


def test_cli_opt_prompts_of_different_lengths_from_a_file(tmp_path, capfd):
    """OPT (positions from the attention mask) through the CLI: a file of two
    prompts of 3 and 1 tokens, left-padded; tokens equal transformers' generate."""
    from transformers import OPTConfig

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("5,6,7\n9\n")
    overrides = [item for key, value in OPT.items() for item in ("--set", f"{key}={value}")]
    status = generate_main(["--config", "opt", *overrides, "--prompts-file", str(prompts), "--ids-file",
                            "--max-new-tokens", str(NEW), "--seed", "2", "-q"])
    out, err = capfd.readouterr()
    assert status == 0, err
    model = load_causal_lm(OPTConfig(**OPT), seed=2)
    ids = torch.tensor([[5, 6, 7], [1, 1, 9]])
    expected = _transformers_generate(model, ids, do_sample=False, attention_mask=torch.tensor([[1, 1, 1], [0, 0, 1]]))
    printed = [line.split(": ")[1] for line in out.splitlines()[:2]]
    assert printed == [" ".join(map(str, row)) for row in expected[:, 3:].tolist()]


def test_llama_tp2_on_sn40l_8_from_a_model_type_name_greedy_and_beams():
    """Batch 2 greedy, then 1 prompt x 2 beams on the same (batch-2) programs: the
    host reorders the cache the tp=2 programs are given."""
    ids = _prompt(2, 3, LLAMA["vocab_size"])
    generator = rducc.Generator("llama", target="sn40l-8", tp=2, overrides=LLAMA, seed=2)
    result = generator.generate(ids, max_new_tokens=NEW)
    reference = load_causal_lm("llama", LLAMA, seed=2)
    assert torch.equal(result.sequences, _transformers_generate(reference, ids, do_sample=False))
    assert result.split == "tp=2"
    assert spmd_ranks(result.prefill.module) == spmd_ranks(result.decode.module) == 2
    beams = generator.generate(ids[:1], max_new_tokens=NEW, sampling=Sampling(num_beams=2)).sequences
    assert torch.equal(beams, _transformers_generate(reference, ids[:1], num_beams=2))


@pytest.fixture(scope="module")
def gpt2_checkpoint(tmp_path_factory):
    """A tiny GPT-2 saved with save_pretrained, with a word-level tokenizer made here (w0 .. w76)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    directory = tmp_path_factory.mktemp("gpt2_ckpt")
    words = ["<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(GPT2["vocab_size"] - 3)]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>",
                            eos_token="</s>").save_pretrained(directory)
    torch.manual_seed(4)
    GPT2LMHeadModel(GPT2Config(**GPT2)).save_pretrained(directory)
    return directory


def test_cli_generates_the_text_transformers_does(gpt2_checkpoint, tmp_path, capfd):
    """GPT-2 from a checkpoint directory with its tokenizer, batch 1, a text prompt;
    -o writes both programs and their one weights file."""
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, AutoTokenizer

    status = generate_main([str(gpt2_checkpoint), "--prompt", "w1 w2 w3", "--max-new-tokens", str(NEW), "-q",
                            "-o", str(tmp_path / "programs")])
    out, err = capfd.readouterr()
    assert status == 0, err
    assert err == ""  # -q: no progress
    tokenizer = AutoTokenizer.from_pretrained(gpt2_checkpoint)
    model = AutoModelForCausalLM.from_pretrained(gpt2_checkpoint).eval()
    ids = torch.tensor([tokenizer("w1 w2 w3", add_special_tokens=False)["input_ids"]])
    expected = tokenizer.decode(_transformers_generate(model, ids, do_sample=False)[0], skip_special_tokens=True)
    text, modeled = out.splitlines()
    assert text == expected and text.startswith("w1 w2 w3 ")
    assert modeled.startswith("modeled on sn40l, batch 1, prompt 3 tokens: time to first token ")
    written = tmp_path / "programs"
    assert sorted(p.name for p in written.iterdir()) == ["decode.mlir", "prefill.mlir", "weights.safetensors"]
    for name in ("prefill", "decode"):
        assert 'rdu.weights = "weights.safetensors"' in (written / f"{name}.mlir").read_text()
    with safe_open(written / "weights.safetensors", "np") as weights:
        assert {"key_cache_0", "value_cache_0", "model.transformer.wte.weight"} <= set(weights.keys())
        assert not weights.get_tensor("key_cache_0").any()  # the empty cache


def test_progress_goes_to_stderr_a_line_per_stage_off_a_terminal(capfd):
    from rducc.tools.generate import _ProgressLine

    progress = _ProgressLine()
    for message in ("compiling decode (1x1 tokens)", "token 1/5", "token 2/5"):
        progress(message)
    progress.done()
    out, err = capfd.readouterr()
    assert out == "" and err == "rducc generate: compiling decode (1x1 tokens)\n"


def test_rducc_generate_is_a_subcommand_of_rducc(monkeypatch, capsys):
    from rducc.tools import entry

    monkeypatch.setattr("sys.argv", ["rducc", "generate", "--help"])
    with pytest.raises(SystemExit) as exit_:
        entry.rducc()
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("usage: rducc generate ")
