"""One home per physical fact and per pass contract (issue 29), kept by a scan of
the package's source: a second copy of a fact fails here, with the file and line.

- an `"rdu.*"` / `"tier.*"` attribute name is spelled only in
  `dialects/contracts.py` (everything else uses its constant or accessor); op
  names (`"rdu.map"`) and an IRDL definition's own `name = ...` are not attribute
  names and may appear anywhere;
- a tier's bandwidth and efficiency figures are read only by `Target.bandwidth`
  and `Target.sustained_bandwidth` (`compiler/targets/__init__.py`);
- the default target's name and the SRAM row size are written only there too
  (`DEFAULT_TARGET`, `SRAM_ROW_BYTES`).

Each rule is also checked against a planted second copy, so the scan cannot
pass by finding nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rducc.dialects import ALL_DIALECTS

REPO = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("compiler", "dialects", "passes", "runtime")
CONTRACTS_HOME = "dialects/contracts.py"
TARGET_HOME = "compiler/targets/__init__.py"
RAW_TIER_FIGURES = frozenset({"hbm_bandwidth", "ddr_bandwidth", "sram_bandwidth", "hbm_efficiency", "ddr_efficiency"})
"""Read through `Target.bandwidth` / `Target.sustained_bandwidth` only."""
ATTRIBUTE_NAME = re.compile(r"^(rdu|tier)\.[A-Za-z_][A-Za-z_0-9]*$")


def _op_names() -> frozenset[str]:
    return frozenset(op.name for factory in ALL_DIALECTS.values() for op in factory().operations)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (a statement of their own)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def _definition_names(tree: ast.AST) -> set[int]:
    """ids of the string constants an IRDL class gives as its `name = ...`."""
    found: set[int] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for statement in cls.body:
            targets = statement.targets if isinstance(statement, ast.Assign) else (
                [statement.target] if isinstance(statement, ast.AnnAssign) else [])
            if any(isinstance(t, ast.Name) and t.id == "name" for t in targets) and statement.value is not None:
                found.add(id(statement.value))
    return found


def violations(path: str, source: str, op_names: frozenset[str]) -> Iterator[str]:
    """Each second copy of a fact in one source file, as `path:line: what`."""
    tree = ast.parse(source)
    skipped = _docstrings(tree) | _definition_names(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and id(node) not in skipped:
            value = node.value
            if (isinstance(value, str) and ATTRIBUTE_NAME.match(value) and value not in op_names
                    and path != CONTRACTS_HOME):
                yield f"{path}:{line}: attribute name {value!r} outside {CONTRACTS_HOME}"
            if value == "sn40l" and path != TARGET_HOME:
                yield f"{path}:{line}: the default target's name outside {TARGET_HOME} (DEFAULT_TARGET)"
        if isinstance(node, ast.Attribute) and node.attr in RAW_TIER_FIGURES and path != TARGET_HOME:
            yield f"{path}:{line}: raw target figure .{node.attr} outside {TARGET_HOME} (Target.bandwidth)"
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value == 64
                and path != TARGET_HOME and any(isinstance(t, ast.Name) and "ALIGN" in t.id or
                                                isinstance(t, ast.Name) and "ROW" in t.id for t in node.targets)):
            yield f"{path}:{line}: a copy of the SRAM row size outside {TARGET_HOME} (SRAM_ROW_BYTES)"


def _sources() -> Iterator[tuple[str, str]]:
    for folder in SOURCE_DIRS:
        for file in sorted((REPO / folder).rglob("*.py")):
            yield file.relative_to(REPO).as_posix(), file.read_text()


def test_every_fact_has_one_home_in_the_tree():
    names = _op_names()
    found = [v for path, source in _sources() for v in violations(path, source, names)]
    assert found == []


PLANTED = {
    "attribute literal": ('def f(op):\n    return op.attributes.get("rdu.tile_plan")\n', "attribute name"),
    "tier attribute literal": ('KEY = "tier.sram_peak"\n', "attribute name"),
    "raw bandwidth read": ("def f(target, n):\n    return n / (target.hbm_bandwidth * target.hbm_efficiency)\n",
                           "raw target figure"),
    "default target": ('def compile(target="sn40l"):\n    pass\n', "default target"),
    "row size": ("ROW_BYTES = 64\n", "SRAM row size"),
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_a_planted_second_copy_is_found(case):
    source, what = PLANTED[case]
    found = list(violations("passes/planted.py", source, _op_names()))
    assert found and all(what in v for v in found), found


def test_op_names_and_definitions_are_not_attribute_literals():
    source = ('class Op:\n    name = "rdu.tile_plan"\n\n\ndef f(op):\n    """Reads "rdu.level"."""\n'
              '    return op.name == "rdu.map"\n')
    assert list(violations("passes/fine.py", source, _op_names())) == []
    assert list(violations(CONTRACTS_HOME, 'LEVEL = "rdu.level"\n', _op_names())) == []


def test_target_figures_have_no_default_outside_the_base_file():
    """A figure's value when a file leaves it out lives in compiler/targets/base.toml
    only: no `Target` field has a Python default a GPU target could silently pick up."""
    import dataclasses

    from rducc.targets import BASE_FILE, FIGURE_NAMES, Target

    defaulted = [f.name for f in dataclasses.fields(Target)
                 if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING]
    assert defaulted == ["source", "ranges"]
    base = BASE_FILE.read_text()
    assert "pcu_stages = 6" in base and all(name in FIGURE_NAMES or name == "kernel_looping" for name in
                                             ("host_bandwidth", "hbm_efficiency", "kernel_looping"))
