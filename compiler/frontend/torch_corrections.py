"""rducc's decompositions of ops whose decomposition in torch computes something else than torch's
kernel (eager), or cannot be traced (a C++ composite that branches on a tensor's value), used
instead of torch's wherever a trace reaches them (`corrected_kernels`: torch.export, the training
joint graph) and in every decomposition table rducc builds (`torch_corrections`).

- `multilabel_margin_loss_forward`: torch's decomposition (2.13; also its Autograd kernel under
  tracing) sums the positions after a row's first -1 as target 0's margins.
- `cov`: torch's C++ composite checks `norm_factor <= 0` on the tensor's value (torch.export
  refused torch.cov: "aten.equal.default").
- `ctc_loss` (both overloads): torch's composite calls `_ctc_loss`, whose fake kernel's output shape
  depends on the lengths' values (torch.export refused F.ctc_loss: "aten._ctc_loss").
- ops with a fused CPU kernel whose C++ composite a trace expands instead (`fused_kernel_composites`:
  `mish_backward`, `silu_backward` on torch 2.13): torch's Python decomposition, float32 inside and one
  rounding of 16-bit results as the kernel, in place of the composite's op-by-op 16-bit roundings.
- `linalg_lstsq` (CPU's default driver, gelsy): torch's fake kernel declares every driver's output shape
  data-dependent (torch.export refused torch.linalg.lstsq: "aten.linalg_lstsq.default"); gelsy's residuals
  and singular values are always empty, its solution the minimum-norm one (`pinv(A) @ B`).
- `combinations`: torch's C++ composite picks the index tuples by `masked_select` of a mask of the
  meshgrid (a size torch.export cannot know: "Pending unbacked symbols"); their count, n choose r, is not
  data-dependent.
- `checkpoint_inputs_kept_plainly` (not an op): a nested torch.utils.checkpoint made torch.export
  mark the rest of the forward a no-grad region.
- `glu_backward`: torch's decomposition keeps the gate `sigmoid(b)` in float32, where the CPU kernel rounds it
  to a 16-bit input's dtype before the two halves' products (one bf16 ulp off eager's gradient under autocast).
- `casts_that_change_nothing_kept` (not an op): a forward that casts a sub-module to the dtype it has
  (`self.classifier = self.classifier.to(self.dtype)`, NLLB-MoE's router) made torch.export fail with
  "_apply(): Couldn't swap Linear.weight".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import torch

from rducc.registration import registering

Decomposition = Callable[..., Any]

TORCH_CORRECTIONS: dict[str, Decomposition] = {}
"""ATen overload name to rducc's decomposition of it, in place of torch's."""


def corrects_torch(*targets: str) -> Callable[[Decomposition], Decomposition]:
    """Register `function` as the decomposition of each of `targets`, in place of torch's."""
    return registering(TORCH_CORRECTIONS, targets, lambda function: function)


def _overload(name: str) -> torch._ops.OpOverload | None:
    namespace, op, variant = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op, None), variant, None)


@cache
def fused_kernel_composites() -> dict[torch._ops.OpOverload, Decomposition]:
    """torch's Python decomposition of each op that has both its own CPU kernel and a C++
    CompositeImplicitAutograd one: eager runs the kernel (one fused loop: float32 inside, one rounding
    of a 16-bit result), a trace expands the composite (each of its ops rounded to the 16-bit type in
    turn: `math_mish_backward` a bf16 ulp off eager's mish gradient in about a fifth of the elements
    under autocast). torch's Python decompositions of these compute as the kernel (`pw_cast_for_opmath`).
    Found by asking the dispatcher, not listed: on torch 2.13, `mish_backward` and `silu_backward`."""
    from torch._decomp import decomposition_table

    has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key
    return {op: function for op, function in decomposition_table.items()
            if isinstance(op, torch._ops.OpOverload) and has_kernel(op.name(), "CPU")
            and has_kernel(op.name(), "CompositeImplicitAutograd")}


def torch_corrections() -> dict[Any, Decomposition]:
    """The corrected decompositions by op overload (for a table built from torch's own)."""
    listed = {op: function for name, function in TORCH_CORRECTIONS.items() if (op := _overload(name)) is not None}
    return {**fused_kernel_composites(), **listed}


def _correction_keys(op: torch._ops.OpOverload) -> list[Any]:
    """Where a trace reaches `op` first: torch's Python kernel at the Autograd key, its C++ composite; an op
    with neither (only backend kernels and a fake kernel, `linalg_lstsq`) at the Autograd key, which every
    trace passes before the fake kernel runs."""
    from torch._C import DispatchKey

    keys = [DispatchKey.Autograd] if DispatchKey.Autograd in op.py_kernels else []
    if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
        keys.append(DispatchKey.CompositeImplicitAutograd)
    return keys or [DispatchKey.Autograd]


@contextmanager
def corrected_kernels() -> Iterator[None]:
    """For the duration, each corrected op runs rducc's decomposition where a trace reaches torch's:
    at the Autograd key where torch decomposes it there (`py_impl`, what a trace with gradients on
    runs whatever the decomposition table says), at the CompositeImplicitAutograd key where torch's
    composite is C++ (a trace follows it); and `checkpoint_inputs_kept_plainly`. torch's kernels are
    restored after."""
    from torch._C import DispatchKey

    replaced: dict[tuple[torch._ops.OpOverload, DispatchKey], Any] = {}
    for op, function in torch_corrections().items():
        keys = _correction_keys(op)
        for key in keys:
            replaced[op, key] = op.py_kernels.get(key)
            op.py_kernels[key] = function
            op._dispatch_cache.clear()
    try:
        with checkpoint_inputs_kept_plainly(), casts_that_change_nothing_kept():
            yield
    finally:
        for (op, key), kernel in replaced.items():
            if kernel is None:
                op.py_kernels.pop(key, None)
            else:
                op.py_kernels[key] = kernel
            op._dispatch_cache.clear()


@contextmanager
def checkpoint_inputs_kept_plainly() -> Iterator[None]:
    """For the duration, torch.utils.checkpoint(use_reentrant=False) keeps its function's inputs as they are
    instead of as saved tensors. Saving them calls the saved-tensor pack hooks from C++ with grad mode off; a
    checkpoint nested in another one's function has the outer one's Python hook packing them, whose
    `torch.no_grad()` torch.export records as set_grad_enabled(False) (twice) while C++'s restore is not
    recorded: export then marks the rest of the forward a no-grad region and the joint graph finds a loss
    that requires no gradient. A trace runs no backward; the recompute reads the inputs kept either way."""
    from torch.utils import checkpoint

    def save_plainly(frame: Any, *args: Any) -> None:
        frame.saved_args = list(args)

    saved = checkpoint._CheckpointFrame.save_inputs
    checkpoint._CheckpointFrame.save_inputs = save_plainly  # type: ignore[method-assign]
    try:
        yield
    finally:
        checkpoint._CheckpointFrame.save_inputs = saved  # type: ignore[method-assign]


@contextmanager
def casts_that_change_nothing_kept() -> Iterator[None]:
    """For the duration, `Module.to` / `.float()` / any `Module._apply(fn)` whose `fn` returns every parameter and
    buffer as it is returns the module untouched. Under torch.export the parameters are fake tensors, which
    `_apply` always swaps for `fn`'s result with `torch.utils.swap_tensors`, even the same tensor, and the swap
    fails on the weak references the trace holds ("_apply(): Couldn't swap Linear.weight"), so a forward that
    casts a sub-module to the dtype it already has could not be exported. A conversion that changes a tensor
    still runs torch's `_apply`."""
    original = torch.nn.Module._apply

    def apply_unless_unchanged(module: torch.nn.Module, fn: Callable[[torch.Tensor], Any],
                               recurse: bool = True) -> torch.nn.Module:
        tensors = (*module.parameters(recurse=recurse), *module.buffers(recurse=recurse))
        if all(fn(tensor) is tensor for tensor in tensors):
            return module
        return original(module, fn, recurse)

    torch.nn.Module._apply = apply_unless_unchanged  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module._apply = original  # type: ignore[method-assign]


@corrects_torch("aten.multilabel_margin_loss_forward.default")
def multilabel_margin_loss_forward(input: torch.Tensor, target: torch.Tensor,
                                   reduction: int) -> tuple[torch.Tensor, torch.Tensor]:
    """sum over the sample's targets k (its labels before the first -1) and the classes j that are
    no target of max(0, 1 - (x[y_k] - x[j])) / C, as torch's kernel. torch's decomposition (2.13)
    also sums the positions after the first -1, each as target 0's margin: it adds C - 1 terms per
    padding position whenever a row lists fewer than C targets."""
    rows, labels = torch.atleast_2d(input), torch.atleast_2d(target)
    classes = rows.shape[1]
    index = torch.arange(classes, device=target.device)
    end = torch.amin(torch.where(labels == -1, index, classes), dim=-1, keepdim=True)
    listed = index < end                                                           # (n, k): a target position
    picked = torch.gather(rows, -1, torch.where(listed, labels, 0))                 # (n, k): x[y_k]
    is_target = (index == torch.where(listed, labels, -1).unsqueeze(-1)).any(1)     # (n, j)
    margins = (1.0 - picked.unsqueeze(-1) + rows.unsqueeze(1)).clamp_min(0) / classes  # (n, k, j)
    kept = listed.unsqueeze(-1) & ~is_target.unsqueeze(1)
    per_row = torch.where(kept, margins, 0).sum((1, 2))
    loss = per_row.mean() if reduction == 1 else per_row.sum() if reduction == 2 else per_row.reshape(
        target.shape[:-1])
    return loss, is_target.to(input.dtype).reshape(target.shape)


@corrects_torch("aten.cov.default")
def cov(input: torch.Tensor, correction: int = 1, fweights: torch.Tensor | None = None,
        aweights: torch.Tensor | None = None) -> torch.Tensor:
    """torch.cov's formula (rows are variables, columns observations; frequency and analytic weights)
    without its C++ composite's check of the degrees of freedom (`norm_factor <= 0`, a branch on a
    tensor's value torch.export cannot trace); a factor at or below 0 is 0, as torch's makes it."""
    x = input if input.dim() == 2 else input.reshape(1, -1)
    weights = fweights if aweights is None else aweights if fweights is None else fweights * aweights
    if weights is None:
        centred = x - x.mean(1, keepdim=True)
        return (centred @ centred.transpose(0, 1).conj() / max(x.shape[1] - correction, 0)).squeeze()
    weights = weights.to(x.dtype)
    total = weights.sum()
    centred = x - (x * weights).sum(1, keepdim=True) / total
    if correction == 0:
        factor = total
    elif aweights is None:
        factor = total - correction
    else:
        factor = total - correction * (weights * aweights).sum() / total
    return ((centred * weights) @ centred.transpose(0, 1).conj() / factor.clamp_min(0)).squeeze()


_CTC_UNREACHABLE = -1e30
"""A log-probability no alignment reaches: finite, so that logsumexp's backward over unreachable states is 0,
not NaN as -inf's is (exp(-inf - -inf)); a loss at or below it is an infeasible alignment, torch's inf."""


def _padded_ctc_targets(targets: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(batch, longest) targets from torch's two layouts: already padded (2-D), or the samples' targets
    concatenated (1-D, sample n's at the sum of the lengths before it). Positions past a length hold 0."""
    if targets.dim() == 2:
        return targets
    longest = max(targets.shape[0], 1)
    starts = torch.cumsum(lengths, 0) - lengths
    position = torch.arange(longest, device=targets.device)
    index = (starts.unsqueeze(1) + position).clamp(0, max(targets.shape[0] - 1, 0))
    padded = targets[index] if targets.shape[0] else torch.zeros_like(index)
    return torch.where(position < lengths.unsqueeze(1), padded, 0)


def _logsumexp3(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    top = torch.maximum(torch.maximum(a, b), c).detach()
    return top + torch.log(torch.exp(a - top) + torch.exp(b - top) + torch.exp(c - top))


def _ctc_negative_log_likelihood(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths: torch.Tensor,
                                 target_lengths: torch.Tensor, blank: int) -> torch.Tensor:
    """-log p(target | input) per sample by the CTC forward (alpha) recursion over the blank-interleaved
    targets, one step per frame (a Python loop over the frames: the program grows with their count)."""
    frames, batch, _ = log_probs.shape
    padded = _padded_ctc_targets(targets, target_lengths)
    blanks = torch.full_like(padded, blank)
    extended = torch.cat([torch.stack([blanks, padded], 2).reshape(batch, -1), blanks[:, :1]], 1)  # (n, 2s + 1)
    states = extended.shape[1]
    emit = log_probs.gather(2, extended.unsqueeze(0).expand(frames, -1, -1))          # (t, n, 2s + 1)
    state = torch.arange(states, device=log_probs.device)
    skip = (state >= 2) & (extended != blank) & (extended != torch.roll(extended, 2, 1))
    unreachable = torch.full((batch, 2), _CTC_UNREACHABLE, dtype=emit.dtype, device=emit.device)
    alpha = torch.where(state < 2, emit[0], _CTC_UNREACHABLE)
    last = alpha
    for t in range(1, frames):
        one_back = torch.cat([unreachable[:, :1], alpha[:, :-1]], 1)
        two_back = torch.where(skip, torch.cat([unreachable, alpha[:, :-2]], 1), _CTC_UNREACHABLE)
        alpha = _logsumexp3(alpha, one_back, two_back) + emit[t]
        last = torch.where((input_lengths == t + 1).unsqueeze(1), alpha, last)
    end = (2 * target_lengths).unsqueeze(1)
    final = last.gather(1, torch.cat([end, (end - 1).clamp_min(0)], 1))
    final = torch.where(torch.cat([end >= 0, end >= 2], 1), final, _CTC_UNREACHABLE)
    likelihood = torch.logsumexp(final, 1)
    return torch.where(likelihood <= _CTC_UNREACHABLE / 2, torch.inf,
                       _eager_gradient_term(log_probs, input_lengths) - likelihood)


def _eager_gradient_term(log_probs: torch.Tensor, input_lengths: torch.Tensor) -> torch.Tensor:
    """Per sample, 0 whose gradient is exp(log_probs) over its frames: torch's CTC backward returns
    exp(lp) - exp(log(alpha beta) - lp + nll), the gradient of the logits under a log_softmax, not of
    `log_probs` (the exp(lp) term), and eager's gradients are what a trained program must match (the two
    agree through a log_softmax, where the term sums to 0 over the classes)."""
    probs = log_probs.exp()
    frames = torch.arange(log_probs.shape[0], device=log_probs.device).unsqueeze(1) < input_lengths
    return ((probs - probs.detach()) * frames.unsqueeze(2)).sum((0, 2))


def _ctc_loss(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths: torch.Tensor,
              target_lengths: torch.Tensor, blank: int, reduction: int, zero_infinity: bool) -> torch.Tensor:
    batched = log_probs.dim() == 3
    probs = log_probs if batched else log_probs.unsqueeze(1)
    wide = probs.float() if probs.dtype in (torch.float16, torch.bfloat16) else probs
    lengths = target_lengths.reshape(-1).to(torch.long)
    loss = _ctc_negative_log_likelihood(wide, targets if batched or targets.dim() == 1 else targets.unsqueeze(0),
                                        input_lengths.reshape(-1).to(torch.long), lengths, blank)
    if zero_infinity:
        loss = torch.where(torch.isinf(loss), 0, loss)
    loss = loss.to(log_probs.dtype)
    if reduction == 1:
        return (loss / lengths.clamp_min(1).to(loss.dtype)).mean()
    if reduction == 2:
        return loss.sum()
    return loss if batched else loss.squeeze(0)


@corrects_torch("aten.ctc_loss.IntList")
def ctc_loss_lists(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths: list[int],
                   target_lengths: list[int], blank: int = 0, reduction: int = 1,
                   zero_infinity: bool = False) -> torch.Tensor:
    """F.ctc_loss with lengths as lists: torch's composite calls `_ctc_loss`, whose fake kernel's output
    shape depends on the lengths' values (torch.export refused it: "aten._ctc_loss"); here the CTC forward
    recursion in ordinary ops, differentiated by autograd like any other forward."""
    return _ctc_loss(log_probs, targets, _lengths(input_lengths, log_probs.device),
                     _lengths(target_lengths, log_probs.device), blank, reduction, zero_infinity)


def _lengths(values: list[int], device: torch.device) -> torch.Tensor:
    """A list of lengths as a tensor made by ops (torch.tensor would be a constant the joint graph refuses)."""
    return torch.stack([torch.scalar_tensor(value, dtype=torch.long, device=device) for value in values])


@corrects_torch("aten.ctc_loss.Tensor")
def ctc_loss_tensors(log_probs: torch.Tensor, targets: torch.Tensor, input_lengths: torch.Tensor,
                     target_lengths: torch.Tensor, blank: int = 0, reduction: int = 1,
                     zero_infinity: bool = False) -> torch.Tensor:
    """F.ctc_loss with lengths as tensors: as `ctc_loss_lists`."""
    return _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity)


@corrects_torch("aten.linalg_lstsq.default")
def linalg_lstsq(a: torch.Tensor, b: torch.Tensor, rcond: float | None = None, *,
                 driver: str | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """torch.linalg.lstsq with CPU's default driver, gelsy: the minimum-norm least-squares solution
    (`pinv(A, rtol=rcond) @ B`), the rank at that tolerance (torch's default: eps * max(m, n)), and empty
    residuals and singular values (gelsy computes neither). The other drivers' residuals exist only when A has
    full rank (a size that depends on the values): refused by name."""
    from rducc.errors import RduccError

    if driver not in (None, "gelsy"):
        raise RduccError(f"torch.linalg.lstsq with driver={driver!r}: its residuals' size depends on whether A has "
                         "full rank (a data-dependent size rducc does not compile); use the default driver (gelsy)")
    rows, columns = a.shape[-2:]
    tolerance = rcond if rcond is not None and rcond > 0 else torch.finfo(a.dtype).eps * max(rows, columns)
    inverse = torch.linalg.pinv(a, rtol=tolerance)
    solution = (inverse @ b.unsqueeze(-1)).squeeze(-1) if b.dim() == a.dim() - 1 else inverse @ b  # b a vector
    empty = a.new_empty(0, dtype=a.real.dtype if a.is_complex() else a.dtype)
    return solution, empty, torch.linalg.matrix_rank(a, rtol=tolerance), empty.clone()


def _combination_index(n: int, r: int, with_replacement: bool, device: torch.device) -> torch.Tensor:
    """(count, r) positions of the r-tuples of range(n) in itertools' order, made by ops (a constant tensor is
    one a trace would lift): pairs from `triu_indices`; longer tuples as each first position before the
    (r - 1)-tuples of the positions after it (from it, with replacement)."""
    if r == 1:
        return torch.arange(n, device=device).unsqueeze(1)
    if r == 2:
        return torch.triu_indices(n, n, 0 if with_replacement else 1, device=device).t()
    pieces = []
    for first in range(n):
        start = first if with_replacement else first + 1
        rest = _combination_index(n - start, r - 1, with_replacement, device) + start
        if rest.shape[0]:
            pieces.append(torch.cat([torch.full((rest.shape[0], 1), first, device=device), rest], 1))
    return torch.cat(pieces) if pieces else torch.zeros(0, r, dtype=torch.long, device=device)


@corrects_torch("aten.combinations.default")
def combinations(self: torch.Tensor, r: int = 2, with_replacement: bool = False) -> torch.Tensor:
    """torch.combinations of a 1-D tensor: the r-tuples of its elements in itertools' order (n choose r rows,
    (n + r - 1) choose r with replacement); r = 0 is an empty vector, as torch's."""
    if r == 0:
        return self.new_empty(0)
    return self[_combination_index(self.shape[0], r, with_replacement, self.device)]


@corrects_torch("aten.glu_backward.default")
def glu_backward(grad_output: torch.Tensor, self: torch.Tensor, dim: int) -> torch.Tensor:
    """The gradient of `glu` (`a * sigmoid(b)`, halves of `self` along `dim`) as torch's CPU kernel: it writes
    `sigmoid(b)` into the gradient's first half, in the input's dtype (a 16-bit rounding), then computes the
    second half from that rounded gate, `(1 - s) * s * a * grad` in float32 (float64 for float64) rounded once, and
    multiplies the first half by `grad` in place. torch's decomposition (`pw_cast_for_opmath`) keeps the gate
    in float32: a bf16 ulp off eager's gradient in many elements (Parakeet's Conformer convolution module
    under autocast)."""
    first, second = self.chunk(2, dim)
    gate = torch.sigmoid(second)
    wide = torch.promote_types(self.dtype, torch.float32)
    second_grad = (1.0 - gate.to(wide)) * gate.to(wide) * first.to(wide) * grad_output.to(wide)
    first_grad = gate.to(wide) * grad_output.to(wide)
    return torch.cat([first_grad.to(self.dtype), second_grad.to(self.dtype)], dim)
