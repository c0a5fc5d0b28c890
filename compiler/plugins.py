"""Pass plugin files: `--load-pass-plugin my_pass.py` on rducc and rducc-opt.

A plugin file is ordinary Python that defines one or more `ModulePass`
subclasses, each with a `name`. Loading it runs it as a module (so only load
files you trust, as with any Python you import) and registers every pass
class it defines itself; passes it merely imports (rducc's own, say) are not
registered twice. A file that is missing, does not parse, raises while
loading or defines no pass is a `RduccError` naming the file and line.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
import traceback
from pathlib import Path
from types import ModuleType

from xdsl.passes import ModulePass

from rducc.errors import RduccError
from rducc.files import note_input

PassFactory = type[ModulePass]

_loaded: dict[Path, dict[str, PassFactory]] = {}
"""Plugin files already loaded in this process, by resolved path."""


class PluginError(RduccError):
    """A pass plugin file that cannot be used, with its file and line."""


def _module_name(path: Path) -> str:
    digest = hashlib.sha1(str(path).encode()).hexdigest()[:8]
    return f"rducc_plugin_{path.stem.replace('-', '_')}_{digest}"


def _raise_load_error(path: Path, shown: str, error: BaseException) -> None:
    if isinstance(error, SyntaxError):
        column = f":{error.offset}" if error.offset else ""
        raise PluginError(
            f"{shown}:{error.lineno}{column}: error: pass plugin does not parse: {error.msg}"
        ) from error
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename) == path]
    line = f":{frames[-1].lineno}" if frames else ""
    if isinstance(error, SystemExit):
        raise PluginError(
            f"{shown}{line}: error: pass plugin called exit() while loading (SystemExit: {error.code}); "
            "a plugin must not end the process"
        ) from error
    raise PluginError(
        f"{shown}{line}: error: pass plugin failed while loading: {type(error).__name__}: {error}"
    ) from error


def _execute(path: Path, shown: str) -> ModuleType:
    """Run the file as a fresh module (registered in sys.modules for dataclasses)."""
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"{shown}: error: not a Python file rducc can load as a pass plugin")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:  # noqa: BLE001 - any failure is the plugin's, exit() too
        del sys.modules[name]
        _raise_load_error(path, shown, error)
    return module


def _defined_passes(module: ModuleType, shown: str) -> dict[str, PassFactory]:
    passes: dict[str, PassFactory] = {}
    for cls in vars(module).values():
        if not (isinstance(cls, type) and issubclass(cls, ModulePass)):
            continue
        if cls.__module__ != module.__name__ or inspect.isabstract(cls):
            continue
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            line = inspect.getsourcelines(cls)[1]
            raise PluginError(
                f"{shown}:{line}: error: pass class {cls.__name__} has no `name = \"...\"` "
                "(the name pipelines call it by)"
            )
        passes[name] = cls
    if not passes:
        raise PluginError(
            f"{shown}: error: the pass plugin defines no pass (a ModulePass subclass with a `name`)"
        )
    return passes


def load_pass_plugin(path: str | Path) -> dict[str, PassFactory]:
    """The passes a plugin file defines, by name (each file is run once per process)."""
    resolved = Path(path).resolve()
    if resolved.is_file():
        note_input(path, "the pass plugin")  # no output may replace it
    if resolved in _loaded:
        return _loaded[resolved]
    if not resolved.is_file():
        raise PluginError(f"{path}: error: pass plugin file not found")
    if resolved.suffix != ".py":
        raise PluginError(f"{path}: error: a pass plugin is a Python file (.py)")
    passes = _defined_passes(_execute(resolved, str(path)), str(path))
    _loaded[resolved] = passes
    return passes
