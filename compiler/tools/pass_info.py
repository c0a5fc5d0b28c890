"""What `--list-passes` prints: every pass, its one-line description and options."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap

from xdsl.passes import ModulePass, get_pass_option_infos

from rducc.pipeline import PassFactory


def summary(cls: type[ModulePass]) -> str:
    """The first line of the pass's docstring (its one-line description)."""
    doc = inspect.getdoc(cls)
    generated = doc is not None and doc.startswith(f"{cls.__name__}(")  # dataclass's own
    if not doc or generated or doc == inspect.getdoc(ModulePass):
        return "(no description)"
    return doc.strip().splitlines()[0].strip()


def option_docs(cls: type[ModulePass]) -> dict[str, str]:
    """Each option's docstring: the string literal right after its field (in the
    pass's class, else in the base class that declares it, e.g. `RduPass.target`)."""
    docs: dict[str, str] = {}
    for owner in reversed(cls.__mro__):
        if owner is cls or owner.__module__.startswith("rducc."):
            docs |= _own_option_docs(owner)
    return docs


def _own_option_docs(cls: type) -> dict[str, str]:
    """The option docstrings written in one class's own body."""
    if not dataclasses.is_dataclass(cls):
        return {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for field, following in zip(body, body[1:]):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(field.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[field.target.id] = " ".join(following.value.value.split())
    return docs


def option_lines(cls: type[ModulePass]) -> list[str]:
    """`name: type = default  doc` for each option of the pass."""
    if not dataclasses.is_dataclass(cls):
        return []
    docs = option_docs(cls)
    lines = []
    own_first = sorted(get_pass_option_infos(cls), key=lambda info: info.name == "target")
    for info in own_first:  # the pass's own options, then the target option all rducc passes take
        value = info.default_value
        default = "" if value is None else f" = {value}" if value != "" else ' = ""'
        kind = info.expected_type.replace("'", "")
        doc = f"  {docs[info.name]}" if info.name in docs else ""
        lines.append(f"{info.name}: {kind}{default}{doc}")  # as pipelines spell it: keep_on_chip
    return lines


def describe(name: str, factory: PassFactory) -> list[str]:
    """The listing of one pass: name and description, then its options indented."""
    try:
        cls = factory()
    except Exception as error:  # noqa: BLE001 - an upstream pass whose imports fail
        return [f"  {name:<28} (cannot be loaded here: {type(error).__name__})"]
    lines = [f"  {name:<28} {summary(cls)}"]
    lines += [f"      {line}" for line in option_lines(cls)]
    return lines


def list_passes(groups: dict[str, dict[str, PassFactory]]) -> str:
    """Every group (title -> passes by name), its passes in the order given."""
    out: list[str] = []
    for title, passes in groups.items():
        if not passes:
            continue
        out.append(f"{title}:")
        for name, factory in passes.items():
            out.extend(describe(name, factory))
        out.append("")
    return "\n".join(out)


def pass_groups(plugin_files: list[str] | None = None) -> dict[str, dict[str, PassFactory]]:
    """Every pass a pipeline can name, grouped by where it comes from."""
    from xdsl.transforms import get_all_passes

    from rducc.passes import ALL_PASSES
    from rducc.pipeline import available_passes, factory_of, installed_passes
    from rducc.plugins import load_pass_plugin

    available_passes(plugin_files or [])  # refuses name clashes before listing
    upstream = get_all_passes()
    plugins = {
        name: factory_of(cls)
        for path in plugin_files or []
        for name, cls in load_pass_plugin(path).items()
    }
    installed = {
        name: factory for name, factory in installed_passes().items()
        if name not in upstream and name not in ALL_PASSES and name not in plugins
    }
    return {
        "rducc's passes (the -O pipelines run these, with cse)": dict(ALL_PASSES),
        "passes of plugin files (--load-pass-plugin)": plugins,
        "passes of installed packages (xdsl.universe entry points)": installed,
        "upstream xDSL passes": upstream,
    }
