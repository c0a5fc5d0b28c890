"""Tensor parallelism on the spellings users write (issue 27): each form trained by
`rducc.compile_training` at tp on sn40l-8 against eager float32 (SGD, or AdamW with
`+adamw`; 3 steps: losses within rel 1e-6, parameters within rtol 1e-4), or its
inference export compiled at tp (`infer`: outputs within rtol 1e-4), with the
shapes every `rdu.all_gather` of the compiled step takes (the cross entropy's
per-rank maxima are `(rows, 1)`). Forms: a Llama-like block whose grouped-query
heads are repeated by each spelling (`block:<spelling>`: repeat_interleave,
expand_reshape, unsqueeze_expand_flatten, repeat_kv, repeat, cat, stack, einsum,
interleave_bshd, sdpa_gqa), an MLP on computed weights (`wn:weight_norm`,
`wn:spectral_norm`, `wn:user`), an LM head tied to the embedding (`tied`) and a
one-layer transformers GPT-2 (`gpt2`), and transformers' Llama, Mistral and Qwen2
with 8 query heads over 2 KV heads (`hf:llama`, `hf:mistral`, `hf:qwen2`: tp above the
KV heads at tp=4 and 8), and held-out forms no test writes (`held:widths`, a stack of
widths 64 -> 96 -> 48; `held:mqa`, one KV head; `held:chunk`, a gated MLP by `chunk`);
`@N` trains at tp=N, `@dpN` at dp=N; `judge held:KIND@SPLIT+OPT` trains a held-out form 20
steps and judges it as bench/train_matrix.py judges a float32 cell. Run:
`python bench/train_tp_forms.py train block:repeat@2 wn:user@2 tied@4 block:repeat@2+adamw held:mqa@dp2+adamw`
and `python bench/train_tp_forms.py infer block:repeat@2`; `trace` compiles the training
step as `train` does and prints, for each all-gather, the op that made the value and the
ops that read it whole (why the split stopped). Not a speed benchmark: besides numerics
and collectives it prints the step's modeled time (`training_estimate`, the cost model's
figures for sn40l-8, no measurement)."""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path

import torch
from torch import nn

import rducc
from rducc.dialects.contracts import phase_of
from rducc.dialects.rdu.collectives import AllGatherOp, AllReduceOp
from rducc.model.training_speed import training_estimate
from rducc.training import compile_training

H, KV, HID, VOCAB = 8, 2, 32, 64


def repeat_heads(k: torch.Tensor, spelling: str, g: int) -> torch.Tensor:
    """(b, kv, s, d) -> (b, kv*g, s, d) by `spelling`."""
    b, kv, s, d = k.shape
    if spelling == "repeat_interleave":
        return k.repeat_interleave(g, dim=1)
    if spelling == "expand_reshape":
        return k[:, :, None].expand(b, kv, g, s, d).reshape(b, kv * g, s, d)
    if spelling == "unsqueeze_expand_flatten":
        return k.unsqueeze(2).expand(-1, -1, g, -1, -1).flatten(1, 2)
    if spelling == "repeat":
        return k.repeat(1, g, 1, 1)
    if spelling == "repeat_kv":
        from transformers.models.llama.modeling_llama import repeat_kv
        return repeat_kv(k, g)
    if spelling == "cat":
        return torch.cat([k] * g, dim=1)
    if spelling == "stack":
        return torch.stack([k] * g, dim=2).flatten(1, 2)
    raise ValueError(spelling)


class Block(nn.Module):
    def __init__(self, spelling: str, heads: int = H, kv: int = KV) -> None:
        super().__init__()
        self.spelling, self.heads, self.kv = spelling, heads, kv
        self.embed = nn.Embedding(VOCAB, HID)
        self.norm = nn.RMSNorm(HID)
        self.q = nn.Linear(HID, HID, bias=False)
        self.k = nn.Linear(HID, kv * HID // heads, bias=False)
        self.v = nn.Linear(HID, kv * HID // heads, bias=False)
        self.o = nn.Linear(HID, HID, bias=False)
        self.up = nn.Linear(HID, 64, bias=False)
        self.down = nn.Linear(64, HID, bias=False)
        self.head = nn.Linear(HID, VOCAB, bias=False)

    def attend(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        d, g = HID // self.heads, self.heads // self.kv
        if self.spelling == "einsum":
            q = self.q(x).view(b, s, self.kv, g, d)
            k = self.k(x).view(b, s, self.kv, d)
            v = self.v(x).view(b, s, self.kv, d)
            w = torch.softmax(torch.einsum("bskgd,btkd->bkgst", q, k) / d**0.5, -1)
            return torch.einsum("bkgst,btkd->bskgd", w, v).reshape(b, s, HID)
        if self.spelling == "interleave_bshd":  # repeat before the transpose
            q = self.q(x).view(b, s, self.heads, d).transpose(1, 2)
            k = self.k(x).view(b, s, self.kv, d).repeat_interleave(g, dim=2).transpose(1, 2)
            v = self.v(x).view(b, s, self.kv, d).repeat_interleave(g, dim=2).transpose(1, 2)
        elif self.spelling == "sdpa_gqa":
            q = self.q(x).view(b, s, self.heads, d).transpose(1, 2)
            k = self.k(x).view(b, s, self.kv, d).transpose(1, 2)
            v = self.v(x).view(b, s, self.kv, d).transpose(1, 2)
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            return y.transpose(1, 2).reshape(b, s, HID)
        else:
            q = self.q(x).view(b, s, self.heads, d).transpose(1, 2)
            k = repeat_heads(self.k(x).view(b, s, self.kv, d).transpose(1, 2), self.spelling, g)
            v = repeat_heads(self.v(x).view(b, s, self.kv, d).transpose(1, 2), self.spelling, g)
        w = torch.softmax(q @ k.transpose(-2, -1) / d**0.5, -1)
        return (w @ v).transpose(1, 2).reshape(b, s, HID)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        x = x + self.o(self.attend(self.norm(x)))
        x = x + self.down(nn.functional.silu(self.up(x)))
        return nn.functional.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


class WeightNormMLP(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.embed = nn.Embedding(VOCAB, HID)
        self.up = nn.Linear(HID, 64)
        self.down = nn.Linear(64, HID)
        self.head = nn.Linear(HID, VOCAB, bias=False)
        if kind == "weight_norm":
            for m in (self.up, self.down):
                torch.nn.utils.parametrizations.weight_norm(m)
        elif kind == "spectral_norm":
            for m in (self.up, self.down):
                torch.nn.utils.parametrizations.spectral_norm(m)
        elif kind == "user":
            self.g1 = nn.Parameter(torch.rand(64, 1) + 0.5)
            self.g2 = nn.Parameter(torch.rand(HID, 1) + 0.5)

    def weight(self, m: nn.Linear, g: torch.Tensor) -> torch.Tensor:
        return g * m.weight / m.weight.norm(dim=1, keepdim=True)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        if self.kind == "user":
            h = nn.functional.gelu(nn.functional.linear(x, self.weight(self.up, self.g1), self.up.bias))
            x = x + nn.functional.linear(h, self.weight(self.down, self.g2), self.down.bias)
        else:
            x = x + self.down(nn.functional.gelu(self.up(x)))
        return nn.functional.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


class TiedLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HID)
        self.up = nn.Linear(HID, 64)
        self.down = nn.Linear(64, HID)
        self.lm = nn.Linear(HID, VOCAB, bias=False)
        self.lm.weight = self.embed.weight

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        x = x + self.down(nn.functional.gelu(self.up(x)))
        return nn.functional.cross_entropy(self.lm(x).flatten(0, 1), labels.flatten())


class GPT2Loss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        from transformers import GPT2Config, GPT2LMHeadModel
        config = GPT2Config(vocab_size=VOCAB, n_positions=16, n_embd=HID, n_layer=1, n_head=4,
                            resid_pdrop=0, embd_pdrop=0, attn_pdrop=0)
        self.model = GPT2LMHeadModel(config)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.model(input_ids=ids, use_cache=False).logits
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


class HFLoss(nn.Module):
    """A one-layer transformers causal LM of `family` (llama, mistral, qwen2), 8 query
    heads over 2 KV heads, its next-token loss."""

    def __init__(self, family: str) -> None:
        super().__init__()
        import transformers
        prefix = {"llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2"}[family]
        config = getattr(transformers, f"{prefix}Config")(
            vocab_size=VOCAB, hidden_size=HID, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=H, num_key_value_heads=KV, max_position_embeddings=16)
        self.model = getattr(transformers, f"{prefix}ForCausalLM")(config)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.model(input_ids=ids, use_cache=False).logits
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


class HeldLayer(nn.Module):
    """A pre-norm transformer layer of width `width` with `heads` query heads over `kv`
    KV heads repeated by `expand` (one KV head: multi-query attention), its MLP gated
    by `chunk` of one fused gate/up projection when `chunked`, out to width `out`."""

    def __init__(self, width: int, out: int, heads: int, kv: int, chunked: bool) -> None:
        super().__init__()
        self.heads, self.kv, self.chunked = heads, kv, chunked
        d = width // heads
        self.norm = nn.LayerNorm(width)
        self.q = nn.Linear(width, width)
        self.kv_proj = nn.Linear(width, 2 * kv * d)
        self.o = nn.Linear(width, width)
        self.up = nn.Linear(width, 2 * 64 if chunked else 64)
        self.down = nn.Linear(64, out)
        self.skip = nn.Linear(width, out, bias=False) if out != width else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, width = x.shape
        d = width // self.heads
        h = self.norm(x)
        q = self.q(h).view(b, s, self.heads, d).transpose(1, 2)
        k, v = self.kv_proj(h).view(b, s, 2 * self.kv, d).transpose(1, 2).split(self.kv, dim=1)
        g = self.heads // self.kv
        k = k[:, :, None].expand(b, self.kv, g, s, d).reshape(b, self.heads, s, d)
        v = v[:, :, None].expand(b, self.kv, g, s, d).reshape(b, self.heads, s, d)
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, s, width))
        if self.chunked:
            gate, up = self.up(x).chunk(2, dim=-1)
            m = nn.functional.silu(gate) * up
        else:
            m = nn.functional.gelu(self.up(x))
        return (x if self.skip is None else self.skip(x)) + self.down(m)


class Held(nn.Module):
    """Held-out forms (no test writes them): `widths`, a stack of widths 64 -> 96 -> 48
    (4 heads over 2 KV heads); `mqa`, multi-query attention (8 heads, one KV head);
    `chunk`, a gated MLP written with `chunk` of one fused gate/up projection."""

    def __init__(self, kind: str, vocab: int = VOCAB) -> None:
        super().__init__()
        plan = {"widths": [(64, 96, 4, 2, False), (96, 48, 4, 2, False), (48, 48, 4, 2, False)],
                "mqa": [(64, 64, 8, 1, False)], "chunk": [(64, 64, 4, 4, True)]}[kind]
        self.embed = nn.Embedding(vocab, plan[0][0])
        self.layers = nn.ModuleList(HeldLayer(*p) for p in plan)
        self.head = nn.Linear(plan[-1][1], vocab, bias=False)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.layers:
            x = layer(x)
        logits = self.head(x)
        return logits if labels is None else nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def make(name: str) -> nn.Module:
    if name.startswith("held:"):
        return Held(name.split(":")[1])
    if name.startswith("block:"):
        return Block(name.split(":")[1])
    if name.startswith("wn:"):
        return WeightNormMLP(name.split(":")[1])
    if name == "tied":
        return TiedLM()
    if name == "gpt2":
        return GPT2Loss()
    if name.startswith("hf:"):
        return HFLoss(name.split(":")[1])
    raise ValueError(name)


OPTIONS = {"sgd": {"lr": 0.05, "momentum": 0.9}, "adamw": {"lr": 1e-2, "weight_decay": 0.1}}


def where(op: object) -> str:
    """An op's name, phase and source line (the last two parts of its location)."""
    line = str(getattr(op, "location", "")).rsplit("/", 1)[-1].rstrip(")")
    return f"{op.name} [{phase_of(op)}] {line}"  # type: ignore[attr-defined,arg-type]


def trace(name: str, tp: str, optimizer: str = "sgd") -> str:
    """Each all-gather of the step: the op behind the gathered value (through the layout
    ops the gather inserts) and the ops that read the whole value."""
    torch.manual_seed(0)
    model = make(name).train()
    batch = (torch.randint(0, VOCAB, (2, 8)), torch.randint(0, VOCAB, (2, 8)))
    program = compile_training(model, batch, optimizer=optimizer, target="sn40l-8", **split_of(tp),
                               **OPTIONS[optimizer])
    lines = []
    for op in program.module.walk():
        if not isinstance(op, AllGatherOp):
            continue
        source = op.operands[0]
        while source.owner is not None and getattr(source.owner, "name", "") in ("rdu.reshape", "rdu.slice"):
            source = source.owner.operands[0]  # type: ignore[union-attr]
        made = where(source.owner) if hasattr(source.owner, "name") else f"argument {source.name_hint}"
        readers, stack = [], [op.results[0]]
        while stack:
            for use in stack.pop().uses:
                user = use.operation
                if user.name in ("rdu.reshape", "rdu.concat", "rdu.all_gather"):
                    stack.append(user.results[0])
                else:
                    readers.append(where(user))
        lines.append(f"  gather {tuple(op.operands[0].type.get_shape())} of {made}\n"
                     f"    read whole by {sorted(set(readers))}")
    return f"{len(lines)} gathers\n" + "\n".join(lines)


def split_of(tp: str) -> dict[str, int]:
    """`compile_training`'s split keywords of a spec's `@N` (tp=N) or `@dpN` (dp=N)."""
    return {"dp": int(tp[2:])} if tp.startswith("dp") else {"tp": int(tp)}


def judge(name: str, tp: str, optimizer: str = "sgd") -> str:
    """A held-out form (`held:KIND`, its logits) trained 20 steps and judged as
    bench/train_matrix.py judges a float32 cell (its `run_cell`: eager, float64, Adam's
    spread; its optimizers' settings; at dp=N the DDP reference)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import train_matrix
    from training_cases import Case, language_model_loss

    kind = name.split(":")[1]

    def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
        torch.manual_seed(0)
        return Held(kind, vocab=256), (torch.randint(0, 256, (2, 8)),)  # the matrix's batches draw ids below 256

    train_matrix.CASES[name] = Case(build, language_model_loss, 256, per_token=True)
    split = tp if tp.startswith("dp") else f"tp{tp}"
    loss_diff, param_diff, verdict = train_matrix.run_cell(train_matrix.Cell(name, optimizer, "fp32", 2, split), 20)
    return f"{verdict} (losses {loss_diff:.2g}, parameters {param_diff:.2g})"


def train(name: str, tp: str, optimizer: str = "sgd", steps: int = 3) -> str:
    torch.manual_seed(0)
    model = make(name).train()
    batches = [(torch.randint(0, VOCAB, (2, 8)), torch.randint(0, VOCAB, (2, 8))) for _ in range(steps)]
    eager = copy.deepcopy(model)
    options = OPTIONS[optimizer]
    t0 = time.time()
    program = compile_training(model, batches[0], optimizer=optimizer, target="sn40l-8", **split_of(tp), **options)
    compile_s = time.time() - t0
    modeled_ms = training_estimate(program.module, program.target).step_s * 1e3
    gathers = [tuple(op.operands[0].type.get_shape()) for op in program.module.walk() if isinstance(op, AllGatherOp)]
    reduces = len([op for op in program.module.walk() if isinstance(op, AllReduceOp)])
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))
    from training_cases import assert_sgd_steps_match

    cls = torch.optim.SGD if optimizer == "sgd" else torch.optim.AdamW
    try:
        assert_sgd_steps_match(program, eager, batches, optimizer=cls, **options)
        verdict = "OK"
    except (AssertionError, KeyError) as error:  # KeyError: a parameter the step does not return
        verdict = "FAIL " + " ".join(str(error).split())[:300]
    return (f"{verdict} compile {compile_s:.1f}s gathers {gathers} all_reduces {reduces} "
            f"modeled step {modeled_ms * 1e3:.2f} us")


class Infer(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        m = self.inner
        if isinstance(m, GPT2Loss | HFLoss):
            return m.model(input_ids=ids, use_cache=False).logits
        x = m.embed(ids)
        if isinstance(m, Block):
            x = x + m.o(m.attend(m.norm(x)))
            x = x + m.down(nn.functional.silu(m.up(x)))
            return m.head(x)
        if isinstance(m, TiedLM):
            x = x + m.down(nn.functional.gelu(m.up(x)))
            return m.lm(x)
        if m.kind == "user":
            h = nn.functional.gelu(nn.functional.linear(x, m.weight(m.up, m.g1), m.up.bias))
            x = x + nn.functional.linear(h, m.weight(m.down, m.g2), m.down.bias)
        else:
            x = x + m.down(nn.functional.gelu(m.up(x)))
        return m.head(x)


def infer(name: str, tp: int) -> str:
    torch.manual_seed(0)
    model = Infer(make(name)).eval()
    ids = torch.randint(0, VOCAB, (2, 8))
    exported = torch.export.export(model, (ids,))
    program = rducc.compile(exported, target="sn40l-8", split=(tp, 1))
    gathers = [tuple(op.operands[0].type.get_shape()) for op in program.module.walk() if isinstance(op, AllGatherOp)]
    with torch.no_grad():
        want = model(ids)
    got = program(ids)
    ok = torch.allclose(torch.as_tensor(got), want, rtol=1e-4, atol=1e-5)
    return f"{'OK' if ok else 'FAIL'} gathers {gathers}"


if __name__ == "__main__":
    mode = sys.argv[1]
    for spec in sys.argv[2:]:
        name, tp = spec.rsplit("@", 1)
        opt = "sgd"
        if "+" in tp:
            tp, opt = tp.split("+")
        try:
            run = {"train": train, "trace": trace, "judge": judge}.get(mode)
            out = run(name, tp, opt) if run is not None else infer(name, int(tp))
        except Exception as e:  # noqa: BLE001
            out = "ERROR " + type(e).__name__ + ": " + str(e).splitlines()[0][:300]
        print(f"{mode} {spec}: {out}", flush=True)
