"""Text generation (issue 32): `rducc generate` and `rducc.generate` give
transformers' `generate` tokens, token for token, greedy and sampled.

Sampling is checked token for token too: rducc applies transformers' own
warpers and draws with `torch.multinomial` on a generator seeded with `seed`,
which is what `torch.manual_seed(seed); model.generate(do_sample=True)` draws.
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
GPT2 = dict(vocab_size=80, n_embd=32, n_layer=1, n_head=4, n_positions=32, bos_token_id=1, eos_token_id=2)
NEW = 5


def _transformers_generate(model, ids: torch.Tensor, seed: int = 0, **settings) -> torch.Tensor:
    torch.manual_seed(seed)
    with torch.no_grad():
        return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, **settings)


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


@pytest.mark.parametrize("seed", [0, 7])
def test_sampled_batch_2_equals_transformers_with_the_same_seed(qwen2, seed):
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


def test_llama_tp2_on_sn40l_8_from_a_model_type_name():
    ids = _prompt(2, 3, LLAMA["vocab_size"])
    result = rducc.generate("llama", ids, max_new_tokens=NEW, target="sn40l-8", tp=2, overrides=LLAMA, seed=2)
    reference = load_causal_lm("llama", LLAMA, seed=2)
    assert torch.equal(result.sequences, _transformers_generate(reference, ids, do_sample=False))
    assert result.split == "tp=2"
    assert spmd_ranks(result.prefill.module) == spmd_ranks(result.decode.module) == 2


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
