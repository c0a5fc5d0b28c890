"""`rducc-opt`: xDSL's opt driver with rducc's dialects and passes registered.

Every `xdsl-opt` flag works (`-p`, `--split-input-file`, `--verify-diagnostics`,
`--print-op-generic`, `--print-debuginfo`, ...), and rducc adds
`--load-pass-plugin FILE` (the passes a Python file defines),
`--list-passes` and `--check-roundtrip` (the printed program parsed and
printed again, in one process: what the lit tests' `| rducc-opt` checks).
The IR is verified after every pass; a pass that breaks it is named. Bad
input is one `rducc-opt: error:` message with exit status 1, a bug in rducc
exit status 70, never a Python traceback (unless --debug).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, NameLoc
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, PassFailedException
from xdsl.xdsl_opt_main import xDSLOptMain

from rducc.diagnostics import (
    LocatedMLIRFrontend,
    check_mlir_text,
    compact_dense_literals,
    describe_verify_failure,
    format_parse_error,
    parse_guarded,
)
from rducc.dialects import ALL_DIALECTS
from rducc.dialects.program import check_buckets, check_loop_steps
from rducc.dialects.unchanged import unchanged
from rducc.errors import RduccError
from rducc.files import check_writable, declare_outputs, write_atomically
from rducc.passes import ALL_PASSES
from rducc.pipeline import run_passes
from rducc.tools.options import add_pass_flags, spelled_as_documented


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

    def prepare_output(self):
        if self.args.output_file is None:
            return sys.stdout
        self.output_text = _KeptText()
        return self.output_text

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, factory in ALL_DIALECTS.items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["mlir"] = lambda: LocatedMLIRFrontend  # ops' type errors located

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in ALL_PASSES.items():
            if name not in self.available_passes:
                self.register_pass(name, factory)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.prog = "rducc-opt"
        spelled_as_documented(arg_parser)
        add_pass_flags(arg_parser, "-p")
        arg_parser.add_argument(
            "--check-roundtrip", action="store_true",
            help="parse the printed program again, verify it and print it again: an error "
                 "unless both prints are the same (what '| rducc-opt' checks, in one process)",
        )

    def setup_pipeline(self) -> None:
        """Register the plugin files' passes, then build the -p pipeline."""
        from rducc.pipeline import available_passes, parse_passes

        for name, factory in available_passes(self.args.plugins).items():
            if name not in self.available_passes:
                self.register_pass(name, factory)
        parse_passes(self.args.passes, self.available_passes)  # rducc's messages for bad -p text
        super().setup_pipeline()

    def parse_chunk(self, chunk, file_extension: str, start_offset: int = 0):
        """Refuse absurd dense splats before xDSL's parser expands them."""
        data = chunk.read()
        text = data.decode(errors="replace")
        check_mlir_text(text, self.get_input_name(), start_offset)
        compacted = compact_dense_literals(text)  # long dense literals read by numpy
        if compacted is not text:
            data = compacted.encode()
        parse = super().parse_chunk
        module = parse_guarded(lambda: parse(io.BytesIO(data), file_extension, start_offset),
                               self.get_input_name(), passthrough=(DiagnosticException,))
        if isinstance(module, ModuleOp):
            check_loop_steps(module)  # what the runtime could never finish
            check_buckets(module)  # one bucket per size, each named
        return module

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """The program as text; with --check-roundtrip, that text parsed, verified and
        printed again, which must give the same text."""
        text = self._printed(prog)
        if self.args.check_roundtrip:
            again = self.parse_chunk(io.BytesIO(text.encode()), "mlir")
            assert isinstance(again, ModuleOp)
            with unchanged():  # verifiers read the IR: a block's SRAM sweep is worked out once
                again.verify()
            reprinted = self._printed(again)
            if reprinted != text:
                raise DiagnosticException("the program prints differently once parsed again:\n"
                                          + _first_difference(text, reprinted))
        return text

    def _printed(self, prog: ModuleOp) -> str:
        """The program, with its source locations when the input had any (so that a
        later error can name the model's line), unless --no-locations."""
        explicit = self.args.print_debuginfo
        if explicit or self.args.no_locations or not has_source_locations(prog):
            return super().output_resulting_program(prog)
        self.args.print_debuginfo = True
        try:  # only the known locations, as rducc prints them
            return super().output_resulting_program(prog).replace(" loc(unknown)", "")
        finally:
            self.args.print_debuginfo = explicit

    def apply_passes(self, prog: ModuleOp) -> None:
        """Run the pipeline, naming a user's pass that fails and the pass after
        which the IR stops verifying (xdsl-opt verifies after every pass). Input
        that does not verify is the failing op and its location, not the whole
        module xDSL prints (kept for --verify-diagnostics, which tests match)."""
        if not (self.args.verify_diagnostics or self.args.disable_verify):
            try:
                with unchanged():
                    prog.verify()
            except DiagnosticException as error:
                raise DiagnosticException(
                    f"the input does not verify:\n{describe_verify_failure(prog, error)}"
                ) from None
        run_passes(prog, self.pipeline.passes, callback=self.pipeline.callback, ctx=self.ctx)


def _first_difference(first: str, second: str) -> str:
    """The first line where two prints differ, as both have it."""
    pairs = zip(first.splitlines() + [""], second.splitlines() + [""])
    number, (a, b) = next((n, pair) for n, pair in enumerate(pairs, 1) if pair[0] != pair[1])
    return f"line {number}: {a.strip()!r}\n   then: {b.strip()!r}"


def has_source_locations(prog: ModuleOp) -> bool:
    """Whether any op carries a file:line:col location (rducc's output does)."""
    return any(isinstance(op.location, FileLineColLoc | NameLoc) for op in prog.walk())


def _user_error(error: BaseException) -> RduccError:
    """xDSL's diagnostics as one `rducc-opt: error:` message."""
    if isinstance(error, ParseError):
        return RduccError(format_parse_error(error))
    notes = getattr(error, "__notes__", [])
    return RduccError("\n".join([str(error).rstrip(), *notes]))


def _run(args: list[str]) -> None:
    try:
        opt = RduccOptMain(description="rducc modular optimizer driver", args=args)
        if opt.args.list_passes:
            from rducc.tools.pass_info import list_passes, pass_groups

            print(list_passes(pass_groups(opt.args.plugins)), end="")
            return
        # -o may name the input: an edit in place (the input is read whole before the
        # output is written, atomically), as mlir-opt allows; no other input (a plugin)
        if opt.args.output_file:
            check_writable(opt.args.output_file)
        declare_outputs([("-o", opt.args.output_file)])
        opt.run()
    except (ParseError, DiagnosticException, PassFailedException, ArgSpecParseError,
            OSError, ValueError) as error:
        if isinstance(error, OSError) and error.filename is None:
            raise  # writing stdout: run_tool says so (a closed pipe: a quiet exit)
        raise _user_error(error) from error
    if opt.output_text is not None:
        write_atomically(opt.args.output_file, opt.output_text.getvalue())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `rducc-opt`: bad input is exit 1, a bug in rducc exit 70."""
    from rducc.tools.cli import run_tool

    given = list(argv if argv is not None else sys.argv[1:])
    debug = "--debug" in given
    quiet = bool({"-q", "--quiet"} & set(given))  # no line saying which file -o wrote
    rest = [a for a in given if a not in ("--debug", "-q", "--quiet")]
    return run_tool("rducc-opt", lambda: _run(rest), debug, quiet)


if __name__ == "__main__":
    sys.exit(main())
