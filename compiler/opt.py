"""`rducc-opt`: xDSL's opt driver with rducc's dialects and passes registered.

Every `xdsl-opt` flag works (`-p`, `--split-input-file`, `--verify-diagnostics`,
`--print-op-generic`, `--print-debuginfo`, ...). Bad input is reported as a
diagnostic with exit status 1, not a Python traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException
from xdsl.xdsl_opt_main import xDSLOptMain

from rducc.dialects import ALL_DIALECTS
from rducc.passes import ALL_PASSES


class RduccOptMain(xDSLOptMain):
    """The opt tool: upstream dialects and passes, plus rducc's own."""

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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `rducc-opt`."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    args = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--debug"]
    try:
        RduccOptMain(description="rducc modular optimizer driver", args=args).run()
    except (ParseError, DiagnosticException, PassFailedException) as error:
        if debug:
            raise
        print(f"rducc-opt: error: {str(error).rstrip()}", file=sys.stderr)
        for note in getattr(error, "__notes__", []):
            print(note, file=sys.stderr)
        return 1
    except (OSError, ValueError) as error:
        if debug:
            raise
        print(f"rducc-opt: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
