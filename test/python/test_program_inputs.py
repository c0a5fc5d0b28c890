"""`rducc.Program` binds its inputs as the model's `forward` does (issue 31,
item 6): by position, or by name whether the model was exported with them
positionally or as keywords, a dict input by its keys; an unknown name, an
input given twice, a missing input or another structure is one RduccError
naming it, never a silent rebinding."""

from __future__ import annotations

import pytest
import torch

import rducc
from rducc.errors import RduccError


class Difference(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a - 2 * b


class Mixed(torch.nn.Module):
    """A dict input, a positional one and a keyword-only one."""

    def forward(self, pair: dict[str, torch.Tensor], scale: torch.Tensor, *, shift: torch.Tensor) -> torch.Tensor:
        return (pair["p"] - 2 * pair["q"]) * scale + shift


X, Y, Z = torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0]), torch.tensor([100.0, 300.0])


@pytest.fixture(scope="module")
def difference() -> rducc.Program:
    return rducc.compile(Difference(), (X, Y), opt_level=0)


@pytest.fixture(scope="module")
def mixed() -> rducc.Program:
    exported = torch.export.export(Mixed(), ({"q": Y, "p": X}, Z), {"shift": X})
    return rducc.compile(exported, opt_level=0)


def test_positional_inputs_given_by_name_bind_by_name(difference):
    expected = Difference()(X, Y)
    for call in (lambda: difference(X, Y), lambda: difference(b=Y, a=X), lambda: difference(a=X, b=Y),
                 lambda: difference(X, b=Y)):
        torch.testing.assert_close(call(), expected)


@pytest.mark.parametrize(("call", "message"), [
    (lambda p: p(X, Y, c=Z), "the program has no input named 'c'; its inputs are 'a', 'b'"),
    (lambda p: p(b=Y, a=X, c=Z), "no input named 'c'"),
    (lambda p: p(X, a=Y), "the program got input 'a' twice: by position and by name"),
    (lambda p: p(X), "the program is missing input 'b'"),
    (lambda p: p(b=Y), "the program is missing input 'a'"),
    (lambda p: p(X, Y, Z), r"the program takes 2 positional inputs \('a', 'b'\), got 3"),
])
def test_bad_bindings_are_one_error_naming_the_input(difference, call, message):
    with pytest.raises(RduccError, match=message):
        call(difference)


def test_dict_and_keyword_inputs_bind_by_name_in_any_order(mixed):
    expected = Mixed()({"p": X, "q": Y}, Z, shift=X)
    torch.testing.assert_close(mixed({"p": X, "q": Y}, Z, shift=X), expected)  # keys in another order than exported
    torch.testing.assert_close(mixed(shift=X, scale=Z, pair={"q": Y, "p": X}), expected)


@pytest.mark.parametrize(("call", "message"), [
    (lambda p: p({"p": X}, Z, shift=X), r"input 'pair' must be a dict with keys \['p', 'q'\] as exported, not \['p'\]"),
    (lambda p: p([X, Y], Z, shift=X), "input 'pair' must be a dict"),
    (lambda p: p({"p": X, "q": Y}, Z), "the program is missing input 'shift'"),
    (lambda p: p({"p": X, "q": Y}, Z, X),
     r"takes 2 positional inputs \('pair', 'scale'\), got 3 \(pass 'shift' by name\)"),
    (lambda p: p({"p": X, "q": Y}, Z, shift=X, bias=X),
     "no input named 'bias'; its inputs are 'pair', 'scale', 'shift'"),
])
def test_bad_structures_are_one_error_naming_the_input(mixed, call, message):
    with pytest.raises(RduccError, match=message):
        call(mixed)
