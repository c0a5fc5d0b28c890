"""The reference a modeled decode step is held to: what its busiest socket must read, at the chip's rates.

Shared by bench/decode_forms.py and bench/heldout_decode_forms.py (one reference
for both). A step is held to `own_reference_s`: its busiest socket's bytes
(`socket_bytes`: a KV head, its k and v projection columns and its cache, is read
whole by every socket that holds it) read at the target's sustained rates
(`reads_s`), plus the time `modules` (BENCHMARKS' form) spends beyond its own
such reads (`beyond_reads`: launches, pipeline fills, exposed collectives, which a
stack of the same layer count and structure pays alike).

`reads_s` counts DDR: bytes a socket reads that do not fit its HBM
(`hbm_bytes` in the target file) are read from its DDR at DDR's sustained
rate, the rest from HBM at HBM's; the two tiers stream at once (a kernel's
time is its busiest tier's, docs/cost-model.md), so the reads take the longer
of the two. Every figure comes from the target file.
"""

from __future__ import annotations

from typing import Any


def kv_state(config: Any, layers: int, cached: int) -> tuple[int, int]:
    """(bytes a decode token reads of KV-head state: the k and v projections and the
    caches of `cached` positions, bf16; the KV heads) of a decoder `config`."""
    heads = getattr(config, "num_key_value_heads", None) or config.num_attention_heads
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return layers * 2 * heads * dim * (cached + config.hidden_size) * 2, heads


def socket_bytes(needed: int, kv: tuple[int, int], sockets: int) -> float:
    """The busiest socket's bytes of a token reading `needed` bytes, of which the KV
    state `kv` (bytes, heads) is split by whole heads: each head read by every socket
    that holds it (sockets / heads of them when there are more sockets than heads)."""
    kv_bytes, heads = kv
    return (needed - kv_bytes) / sockets + kv_bytes / min(sockets, heads)


def reads_s(socket: float, target: Any) -> float:
    """Seconds one socket takes to read `socket` bytes: what fits its HBM at HBM's
    sustained rate, the rest from DDR at DDR's, both tiers at once."""
    in_ddr = max(socket - target.hbm_bytes, 0.0)
    return max((socket - in_ddr) / target.sustained_bandwidth("hbm"), in_ddr / target.sustained_bandwidth("ddr"))


def sustained_s(needed: int, kv: tuple[int, int], target: Any) -> float:
    """The busiest socket's reads of a token (`socket_bytes`) at the target's sustained rates."""
    return reads_s(socket_bytes(needed, kv, target.sockets), target)


def beyond_reads(results: list, kv: tuple[int, int]) -> dict[str, float]:
    """Per target, one form's modeled time beyond its busiest socket's sustained reads
    (`results`: (target name, report, bytes a token reads, seconds) per target)."""
    from rducc.targets import load_target

    return {t: report.modeled_time_s - sustained_s(needed, kv, load_target(t)) for t, report, needed, _ in results}


def own_reference_s(needed: int, kv: tuple[int, int], target: Any, beyond: dict[str, float]) -> float:
    """A step's own reference time on `target`: its busiest socket's sustained reads plus
    `modules`' time beyond its own (`beyond_reads`)."""
    return sustained_s(needed, kv, target) + beyond[target.name]


__all__ = ["beyond_reads", "kv_state", "own_reference_s", "reads_s", "socket_bytes", "sustained_s"]
