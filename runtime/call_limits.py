"""Limits a host or pointwise call runs under, checked before torch's kernel runs.

`rdu.host_call` and `rdu.pointwise_call` run torch's CPU kernel of an op a
program names. A kernel must never stop the process or run unbounded, so
before it runs:

- integer division: `x / -1` of the smallest integer with rounding (`div`
  with `rounding_mode`, `floor_divide`) overflows, and torch's kernel stops
  the process with SIGFPE; so does `lcm` of the smallest integer (its gcd
  comes out negative, then divides it). Both are refused
  (`check_integer_division`).
- work that grows with an argument's value, not with the data's size: the
  orthogonal polynomials (`special_*_polynomial_*`) loop `n` times an element,
  `mvlgamma` sums `p` terms an element. `n` or `p` past `MAX_DEGREE` is
  refused, and a call of such an op runs over the elements in chunks of at
  most `CHUNK_STEPS` steps, so Ctrl-C stops it between chunks
  (`steps_per_element`, `run_in_chunks`).

Each is one `RduccError` naming the op.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rducc.errors import RduccError

MAX_DEGREE = 2**20
"""The largest polynomial degree `n` (and `mvlgamma`'s `p`) a call may use: about
20 ms of torch's recurrence an element."""

CHUNK_STEPS = 2**22
"""The most recurrence steps (elements x degree) one chunk of a call runs between
two chances to stop it (Ctrl-C)."""

QUOTIENT_OPS = frozenset({
    "aten::div.Tensor_mode", "aten::div.Scalar_mode", "aten::floor_divide.default", "aten::floor_divide.Scalar",
})
"""Ops whose integer kernel divides `self` by `other` (rounding), where the
smallest integer over -1 overflows."""

GCD_OPS = frozenset({"aten::gcd.default", "aten::lcm.default"})
"""Ops whose integer kernel takes absolute values and divides by a gcd: the smallest
integer, whose magnitude does not fit its type, is refused as an operand."""


def _degree_argument(name: str) -> str | None:
    """The argument whose value sets an element's work: `n` of a polynomial, `p` of mvlgamma."""
    op = name.removeprefix("aten::").split(".")[0]
    if op.startswith("special_") and "_polynomial_" in op:
        return "n"
    return "p" if op == "mvlgamma" else None


def _largest(value: Any) -> float:
    """The largest finite value of a number or array (0 when none): a non-finite
    degree is read by torch's kernel as a negative one, which does no work."""
    array = np.asarray(value)
    if array.size == 0 or array.dtype == np.bool_:
        return 0.0
    if not np.issubdtype(array.dtype, np.number):
        array = array.astype(np.float64)
    finite = array[np.isfinite(array)] if np.issubdtype(array.dtype, np.floating) else array
    return float(finite.max()) if finite.size else 0.0


def steps_per_element(name: str, arguments: Mapping[str, Any], what: str) -> int:
    """How many steps torch's kernel of `name` takes an element (1 for an op whose
    work does not grow with an argument's value); `RduccError` past `MAX_DEGREE`."""
    argument = _degree_argument(name)
    if argument is None or arguments.get(argument) is None:
        return 1
    degree = _largest(arguments[argument])
    if degree > MAX_DEGREE:
        raise RduccError(
            f"{what}: {name} with {argument} = {degree:.17g} is past rducc's limit of {MAX_DEGREE} "
            f"(torch's kernel takes {argument} steps an element)"
        )
    return max(1, int(degree))


def check_integer_division(name: str, arguments: Mapping[str, Any], what: str) -> None:
    """Refuse the smallest integer divided by -1 with rounding (it overflows, and
    torch's kernel stops the process with SIGFPE)."""
    if name in GCD_OPS:
        _check_no_smallest(name, arguments, what)
    if name not in QUOTIENT_OPS or arguments.get("rounding_mode", "floor") is None:
        return
    dividend, divisor = np.asarray(arguments.get("self")), np.asarray(arguments.get("other"))
    if not (np.issubdtype(dividend.dtype, np.signedinteger) and np.issubdtype(divisor.dtype, np.integer)):
        return
    smallest = np.iinfo(dividend.dtype).min
    if np.any((dividend == smallest) & (divisor == -1)):
        raise RduccError(f"{what}: integer overflow in {name}: {smallest} / -1 does not fit {dividend.dtype}")


def _check_no_smallest(name: str, arguments: Mapping[str, Any], what: str) -> None:
    for argument in ("self", "other"):
        value = np.asarray(arguments.get(argument))
        if np.issubdtype(value.dtype, np.signedinteger) and np.any(value == np.iinfo(value.dtype).min):
            smallest = np.iinfo(value.dtype).min
            raise RduccError(f"{what}: integer overflow in {name}: |{smallest}| does not fit {value.dtype}")


def check_call(name: str, arguments: Mapping[str, Any], what: str) -> int:
    """Every check of this module on a call of `name` (its arguments by schema
    name: arrays and constants); the steps an element takes."""
    check_integer_division(name, arguments, what)
    return steps_per_element(name, arguments, what)


def run_in_chunks(run: Callable[[tuple[Any, ...]], np.ndarray], arrays: tuple[Any, ...], steps: int) -> np.ndarray:
    """`run` on the (broadcasting) arrays, over chunks of their elements of at most
    `CHUNK_STEPS` steps each, so that a signal (Ctrl-C) is handled between chunks."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    count = int(np.prod(shape, dtype=np.int64))
    chunk = max(1, CHUNK_STEPS // max(1, steps))
    if count <= chunk:
        return run(arrays)
    flat = [np.broadcast_to(np.asarray(a), shape).reshape(-1) for a in arrays]
    parts = [run(tuple(f[start:start + chunk] for f in flat)) for start in range(0, count, chunk)]
    return np.concatenate(parts).reshape(shape)


__all__ = ["CHUNK_STEPS", "GCD_OPS", "MAX_DEGREE", "QUOTIENT_OPS", "check_call", "check_integer_division",
           "run_in_chunks", "steps_per_element"]
