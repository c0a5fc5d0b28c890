"""`#rdu.custom`: a user's `torch.library` custom op a program runs on the host.

A custom op that cannot be traced into ATen (its Python implementation reads
tensor values, calls numpy, ...) is compiled as an `rdu.host_call` naming it
with this attribute:

    #rdu.custom<"mylib::scale.default", "mylib::scale(Tensor x, float s) -> Tensor", {s = 2.0 : f64}>

(the overload's qualified name, its schema as torch prints it, and its
constant non-tensor arguments by schema name). The schema travels with the
program, so the verifier checks the call (operands bound to tensor
arguments, constants of the argument types, the result count, a functional
op returning tensors) without the op's library.

A program file never imports or runs code by itself: the op runs only once
the user named the module that registers it (`rducc-run --import-module
MODULE`, `Program(..., import_modules=[...])`, `rducc.compile(...,
import_modules=[...])`; `import_op_modules` here admits the ops that module,
not torch, registers). `torch_op()` then looks the op up in torch's registry
and checks that its schema is the one the program recorded; otherwise it is
one `NotCallable` naming the op and the flag.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

from xdsl.dialects.builtin import DictionaryAttr, StringAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.rdu.aten import NamedOverload, NotCallable, Schema, is_tensor_type, verify_bindings
from rducc.errors import RduccError

TORCH_NAMESPACES = frozenset({"aten", "prims", "prim"})
"""Namespaces of torch's own ops, which `#rdu.aten` names (and its allow-list admits)."""

_ADMITTED: dict[str, str] = {}
"""Qualified op name (`mylib::scale`) to why it may run (the module that registered it)."""


def qualified_names(op_names: Iterable[str]) -> set[str]:
    """`ns::op` of each registered name (`ns::op.overload` or `ns::op`)."""
    return {name.partition(".")[0] for name in op_names}


def _registered_names() -> set[str]:
    import torch

    return qualified_names(torch._C._dispatch_get_all_op_names())


def _defined_in(module: ModuleType) -> set[str]:
    """The custom ops a module defines through its attributes: `torch.library.custom_op`
    functions (their `_qualname`) and `torch.library.Library` objects (their definitions)."""
    import torch

    found: set[str] = set()
    for value in list(vars(module).values()):
        if isinstance(value, torch._library.custom_ops.CustomOpDef):
            found.add(value._qualname)
        elif isinstance(value, torch.library.Library):
            found |= qualified_names(value._op_defs)
    return found


def import_op_modules(names: Sequence[str], flag: str = "--import-module") -> None:
    """Import each module the user named and admit the custom ops it registers
    (those new in torch's registry after its import, and those its attributes
    or its loaded submodules' define); a module that cannot be imported is one
    `RduccError` naming it."""
    for name in names:
        before = None if name in sys.modules else _registered_names()
        try:
            module = importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - any failure of the user's module is this error
            first = (str(error).strip().splitlines() or [""])[0]
            raise RduccError(f"{flag} {name}: cannot import it ({type(error).__name__}: {first})") from None
        if name == "torch" or name.startswith("torch."):
            continue  # torch's own ops (a file reader among them) are no user's custom ops
        registered = set().union(*(_defined_in(m) for key, m in list(sys.modules.items())
                                   if m is not None and (key == module.__name__
                                                         or key.startswith(module.__name__ + "."))))
        if before is not None:
            registered |= _registered_names() - before
        for qualified in registered:
            if qualified.partition("::")[0] not in TORCH_NAMESPACES:
                _ADMITTED.setdefault(qualified, f"module {name}")


def admitted_ops() -> dict[str, str]:
    """The custom ops this process may run, with why (a copy)."""
    return dict(_ADMITTED)


def parse_signature(signature: str) -> Any:
    """torch's `FunctionSchema` of a schema text; `NotCallable` when it does not parse."""
    import torch

    try:
        return torch._C.parse_schema(signature)
    except RuntimeError as error:
        first = (str(error).strip().splitlines() or [""])[0]
        raise NotCallable(f"its schema does not parse ({first})") from None


def schema_facts(schema: Any) -> Schema:
    """What the verifiers and the runtime need of a custom op's schema: functional,
    returning only tensors (else `NotCallable`)."""
    if schema.is_mutable or any(a.alias_info is not None for a in (*schema.arguments, *schema.returns)):
        raise NotCallable("it mutates or aliases its arguments (not functional)")
    kinds = [str(r.type) for r in schema.returns]
    if not kinds or (any(k != "Tensor" for k in kinds) and kinds != ["List[Tensor]"]):
        raise NotCallable("it does not return only tensors")
    return Schema(
        tuple(a.name for a in schema.arguments if is_tensor_type(str(a.type))),
        {a.name: str(a.type) for a in schema.arguments},
        frozenset(a.name for a in schema.arguments if not a.has_default_value()),
        None if kinds == ["List[Tensor]"] else len(kinds),
    )


@irdl_attr_definition
class CustomOpAttr(NamedOverload, ParametrizedAttribute):
    """A custom op overload, its schema and its constant arguments (module docstring):
    `#rdu.custom<"mylib::scale.default", "mylib::scale(Tensor x, float s) -> Tensor", {s = 2.0 : f64}>`."""

    name = "rdu.custom"
    qualified: StringAttr
    overload: StringAttr
    signature: StringAttr
    constants: DictionaryAttr

    @staticmethod
    def of(qualified: str, overload: str, signature: str, constants: Mapping[str, Attribute]) -> CustomOpAttr:
        return CustomOpAttr(StringAttr(qualified), StringAttr(overload), StringAttr(signature),
                            DictionaryAttr(dict(constants)))

    def schema(self) -> Schema:
        """The schema facts of the recorded signature (`NotCallable` when it is not a call a program may make)."""
        return schema_facts(parse_signature(self.signature.data))

    def torch_op(self) -> Any:
        """The registered overload, when the user admitted its module (module docstring) and
        its schema is the recorded one; else `NotCallable` saying what to do."""
        import torch

        qualified = self.qualified.data
        if qualified not in _ADMITTED:
            raise NotCallable(
                f"the program calls the custom op {self.full_name}, which runs on the host: pass "
                "--import-module MODULE (Python: import_modules=[MODULE]) naming the module that registers it")
        namespace, _, name = qualified.partition("::")
        try:
            op = getattr(getattr(getattr(torch.ops, namespace), name), self.overload.data)
        except (AttributeError, RuntimeError):
            raise NotCallable(f"the custom op {self.full_name} is not registered ({_ADMITTED[qualified]} "
                              "does not define this overload)") from None
        if str(op._schema) != self.signature.data:
            raise NotCallable(f"the custom op {self.full_name} is registered as '{op._schema}', "
                              f"but the program was compiled for '{self.signature.data}'")
        return op

    def verify_call(self, caller: str, tensors: Sequence[str]) -> None:
        """`caller` may call this op binding `tensors` (one argument name per operand)
        and the constants; else a `VerifyException`."""
        namespace = self.qualified.data.partition("::")[0]
        if namespace in TORCH_NAMESPACES:
            raise VerifyException(f"'{caller}' cannot call '{self.full_name}' as a custom op: "
                                  "torch's own ops are named with #rdu.aten")
        try:
            schema = parse_signature(self.signature.data)
            facts = schema_facts(schema)
        except NotCallable as error:
            raise VerifyException(f"'{caller}' cannot call '{self.full_name}': {error}") from None
        if (schema.name, schema.overload_name or "default") != (self.qualified.data, self.overload.data):
            raise VerifyException(f"'{self.full_name}' has the schema of '{schema.name}.{schema.overload_name}'")
        verify_bindings(self, facts, caller, tensors)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f'<"{self.full_name}", ')
        printer.print_string_literal(self.signature.data)
        if self.constants.data:
            printer.print_string(", ")
            printer.print_attr_dict(self.constants.data)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        constants: dict[str, Attribute] = {}
        with parser.in_angle_brackets():
            full = parser.parse_str_literal("a custom op overload, such as \"mylib::scale.default\"")
            qualified, dot, overload = full.rpartition(".")
            if not dot or "::" not in qualified:
                parser.raise_error(f"'{full}' is not NAMESPACE::OP.OVERLOAD")
            parser.parse_punctuation(",")
            signature = parser.parse_str_literal("the op's schema, as torch prints it")
            if parser.parse_optional_punctuation(","):
                constants = parser.parse_optional_dictionary_attr_dict()
        return [StringAttr(qualified), StringAttr(overload), StringAttr(signature), DictionaryAttr(constants)]


__all__ = [
    "TORCH_NAMESPACES",
    "CustomOpAttr",
    "admitted_ops",
    "import_op_modules",
    "parse_signature",
    "qualified_names",
    "schema_facts",
]
