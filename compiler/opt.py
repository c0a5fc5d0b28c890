"""`rducc-opt`: xDSL's opt driver with rducc's dialects and passes registered.

Every `xdsl-opt` flag works (`-p`, `--split-input-file`, `--verify-diagnostics`,
`--print-op-generic`, `--print-debuginfo`, ...). Bad input is reported as a
diagnostic with exit status 1, not a Python traceback.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, PassFailedException
from xdsl.xdsl_opt_main import xDSLOptMain

from rducc.diagnostics import format_parse_error
from rducc.dialects import ALL_DIALECTS
from rducc.errors import RduccError
from rducc.files import write_atomically
from rducc.passes import ALL_PASSES


class _KeptText(io.StringIO):
    """An output stream whose text survives xDSL closing it."""

    def close(self) -> None:
        pass


class RduccOptMain(xDSLOptMain):
    """The opt tool: upstream dialects and passes, plus rducc's own.

    `-o FILE` is written atomically after a successful run (xDSL would open,
    and so empty, the file before reading the input).
    """

    output_text: _KeptText | None = None

    def prepare_output(self):  # type: ignore[override]
        if self.args.output_file is None:
            return sys.stdout
        self.output_text = _KeptText()
        return self.output_text

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in ALL_DIALECTS.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in ALL_PASSES.items():
            if name not in self.available_passes:
                self.register_pass(name, factory)


def _user_error(error: BaseException) -> RduccError:
    """xDSL's diagnostics as one `rducc-opt: error:` message."""
    if isinstance(error, ParseError):
        return RduccError(format_parse_error(error))
    notes = getattr(error, "__notes__", [])
    return RduccError("\n".join([str(error).rstrip(), *notes]))


def _run(args: list[str]) -> None:
    try:
        opt = RduccOptMain(description="rducc modular optimizer driver", args=args)
        opt.run()
    except (ParseError, DiagnosticException, PassFailedException, ArgSpecParseError,
            OSError, ValueError) as error:
        raise _user_error(error) from error
    if opt.output_text is not None:
        write_atomically(opt.args.output_file, opt.output_text.getvalue())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `rducc-opt`: bad input is exit 1, a bug in rducc exit 2."""
    from rducc.cli import run_tool

    given = list(argv if argv is not None else sys.argv[1:])
    debug = "--debug" in given
    return run_tool("rducc-opt", lambda: _run([a for a in given if a != "--debug"]), debug)


if __name__ == "__main__":
    sys.exit(main())
