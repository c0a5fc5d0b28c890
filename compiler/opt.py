"""`rducc-opt`: xDSL's opt driver with rducc's dialects and passes registered.

Every `xdsl-opt` flag works (`-p`, `--split-input-file`, `--verify-diagnostics`,
`--print-op-generic`, `--print-debuginfo`, ...). Bad input is reported as a
diagnostic with exit status 1, not a Python traceback.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence

from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, PassFailedException
from xdsl.dialects.builtin import ModuleOp
from xdsl.xdsl_opt_main import xDSLOptMain

from rducc.files import write_atomically
from rducc.dialects import ALL_DIALECTS
from rducc.errors import RduccError
from rducc.passes import ALL_PASSES
from rducc.pipeline import run_passes


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

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--load-pass-plugin", dest="plugins", action="append", metavar="FILE", default=[],
            help="load the passes a Python file defines, for -p (repeatable)",
        )
        arg_parser.add_argument(
            "--list-passes", action="store_true",
            help="list every pass -p can name, with its description and options, and exit",
        )

    def setup_pipeline(self) -> None:
        """Register the plugin files' passes, then build the -p pipeline."""
        from rducc.pipeline import available_passes, parse_passes

        for name, factory in available_passes(self.args.plugins).items():
            if name not in self.available_passes:
                self.register_pass(name, factory)
        parse_passes(self.args.passes, self.available_passes)  # rducc's messages for bad -p text
        super().setup_pipeline()

    def apply_passes(self, prog: ModuleOp) -> None:
        """Run the pipeline, naming a user's pass that fails and the pass after
        which the IR stops verifying (xdsl-opt verifies after every pass)."""
        run_passes(prog, self.pipeline.passes, callback=self.pipeline.callback, ctx=self.ctx)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `rducc-opt`."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    args = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--debug"]
    try:
        opt = RduccOptMain(description="rducc modular optimizer driver", args=args)
        if opt.args.list_passes:
            from rducc.pass_info import list_passes, pass_groups

            print(list_passes(pass_groups(opt.args.plugins)), end="")
            return 0
        opt.run()
        if opt.output_text is not None:
            write_atomically(opt.args.output_file, opt.output_text.getvalue())
    except (ParseError, DiagnosticException, PassFailedException, ArgSpecParseError) as error:
        if debug:
            raise
        print(f"rducc-opt: error: {str(error).rstrip()}", file=sys.stderr)
        for note in getattr(error, "__notes__", []):
            print(note, file=sys.stderr)
        return 1
    except RduccError as error:
        if debug:
            raise
        print(f"rducc-opt: error: {error}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as error:
        if debug:
            raise
        print(f"rducc-opt: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
