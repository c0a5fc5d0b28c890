"""`rducc generate CHECKPOINT_DIR --prompt TEXT` (or `--config FILE|TYPE`): text
generation on rducc's runtime, with the modeled time to first token and per
output token on the target (docs/generate.md).

The model's prefill and decode are exported with a static cache, compiled
(one set of weights) and run; the text (or token ids, without a tokenizer)
goes to stdout with one line of modeled times; progress goes to stderr
unless -q. Bad input is one `rducc generate: error:` line, exit 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rducc import __version__
from rducc.targets import DEFAULT_TARGET
from rducc.tools.options import ArgumentParser, add_opt_level_flag, add_target_flag

TOOL = "rducc generate"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=TOOL,
        description="Generate text with a transformers decoder compiled by rducc (prefill and decode with a "
        "static KV cache, one set of weights) on rducc's runtime, and report the modeled time to first token "
        "and per output token on the target (docs/generate.md).",
    )
    parser.add_argument("checkpoint", nargs="?", metavar="CHECKPOINT_DIR",
                        help="a local transformers checkpoint directory (config.json, *.safetensors, "
                        "tokenizer files if any)")
    parser.add_argument("--config", metavar="FILE|TYPE",
                        help="instead of a checkpoint: a config.json file or a model type (llama, qwen2, gpt2, "
                        "...), with random weights from --seed")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field (repeatable): --set hidden_size=64")
    parser.add_argument("--prompt", action="append", default=[], metavar="TEXT",
                        help="a prompt (repeatable: one sequence each); needs the checkpoint's tokenizer")
    parser.add_argument("--prompt-ids", action="append", default=[], metavar="ID,ID,...",
                        help="a prompt as token ids, 1,2,3 (repeatable: one sequence each)")
    parser.add_argument("--prompts-file", metavar="FILE",
                        help="prompts, one a line (text; or token ids 1,2,3 with --ids-file); prompts of different "
                        "lengths are left-padded with an attention mask")
    parser.add_argument("--ids-file", action="store_true", help="--prompts-file holds token ids, 1,2,3 a line")
    parser.add_argument("--num-beams", type=int, default=1, metavar="N",
                        help="beam search over N beams (1: greedy or --sample)")
    parser.add_argument("--length-penalty", type=float, default=None, metavar="X",
                        help="with --num-beams: a beam's score is its log-probability / length**X (1.0)")
    parser.add_argument("--early-stopping", choices=("true", "false", "never"), default=None,
                        help="with --num-beams: when beam search stops, as transformers' early_stopping (false)")
    parser.add_argument("--max-new-tokens", type=int, default=16, metavar="N", help="tokens to generate (16)")
    parser.add_argument("--prompt-buckets", metavar="N,N,...", default=None,
                        help="prompt lengths to compile prefill for (8,32,128): a prompt is left-padded (masked) "
                        "up to the smallest that holds it, the cache sized for the largest, so prompts of other "
                        "lengths reuse the programs")
    parser.add_argument("--max-cache-len", type=int, default=None, metavar="N",
                        help="positions of the static KV cache (default: prompt + new tokens - 1)")
    parser.add_argument("--sample", "--do-sample", dest="sample", action="store_true",
                        help="sample the next token (default: greedy); with --num-beams, beam sampling")
    parser.add_argument("--num-return-sequences", type=int, default=1, metavar="N",
                        help="sequences returned per prompt: the N best beams (N <= --num-beams) or N samples "
                        "(with --sample), printed one after the other (1)")
    parser.add_argument("--temperature", type=float, default=None, help="with --sample: divide logits by this (1.0)")
    parser.add_argument("--top-k", type=int, default=None, metavar="K",
                        help="with --sample: keep the K likeliest (0: all)")
    parser.add_argument("--top-p", type=float, default=None, metavar="P",
                        help="with --sample: keep the likeliest tokens up to probability P (1.0: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampling and of random weights (0)")
    add_target_flag(parser, DEFAULT_TARGET)
    parser.add_argument("--tp", type=int, default=None, metavar="N",
                        help="tensor parallel over N sockets of a multi-socket target (default: the cost model picks "
                        "tp and pp)")
    add_opt_level_flag(parser, default=2)
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="also write the programs: DIR/prefill.mlir, DIR/decode.mlir and their one weights "
                        "file DIR/weights.safetensors (rducc-run runs either)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="nothing on stderr but errors (no progress, no line naming what was written)")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for every error")
    parser.add_argument("--version", action="version", version=f"rducc {__version__}")
    return parser


class _ProgressLine:
    """What the generator is doing, on stderr: one rewritten line on a terminal,
    a line per stage otherwise (not per token)."""

    def __init__(self) -> None:
        self.terminal = sys.stderr.isatty()
        self.shown = False

    def __call__(self, message: str) -> None:
        if self.terminal:
            sys.stderr.write(f"\r{TOOL}: {message}\x1b[K")
            self.shown = True
        elif not message.startswith("token "):
            print(f"{TOOL}: {message}", file=sys.stderr)
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _prompt_ids(items: list[str]) -> list[list[int]]:
    from rducc.errors import RduccError

    rows = []
    for item in items:
        try:
            rows.append([int(t) for t in item.split(",") if t.strip()])
        except ValueError:
            raise RduccError(f"--prompt-ids '{item}': expected token ids separated by commas (1,2,3)") from None
    return rows


def _read_prompts_file(args: argparse.Namespace) -> None:
    """Add the file's prompts (its non-empty lines) to --prompt, or to --prompt-ids with --ids-file."""
    from rducc.errors import RduccError

    try:
        lines = [line.strip() for line in Path(args.prompts_file).read_text().splitlines() if line.strip()]
    except OSError as error:
        raise RduccError(f"--prompts-file {args.prompts_file}: cannot read it ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise RduccError(f"--prompts-file {args.prompts_file}: not UTF-8 text") from None
    if not lines:
        raise RduccError(f"--prompts-file {args.prompts_file}: no prompts in it (one a line)")
    (args.prompt_ids if args.ids_file else args.prompt).extend(lines)


def _sampling(args: argparse.Namespace):
    from rducc.errors import RduccError
    from rducc.generation import Sampling

    given = [flag for flag, value in (("--temperature", args.temperature), ("--top-k", args.top_k),
                                      ("--top-p", args.top_p)) if value is not None]
    if given and not args.sample:
        raise RduccError(f"{', '.join(given)} need{'s' * (len(given) == 1)} --sample (the default is greedy)")
    beam_flags = [flag for flag, given in (("--length-penalty", args.length_penalty is not None),
                                           ("--early-stopping", args.early_stopping is not None)) if given]
    if beam_flags and args.num_beams <= 1:
        raise RduccError(f"{', '.join(beam_flags)} need{'s' * (len(beam_flags) == 1)} --num-beams N (N > 1)")
    early_stopping: bool | str = "never" if args.early_stopping == "never" else args.early_stopping == "true"
    sampling = Sampling(args.sample, 1.0 if args.temperature is None else args.temperature,
                        args.top_k or 0, 1.0 if args.top_p is None else args.top_p, args.seed, args.num_beams,
                        1.0 if args.length_penalty is None else args.length_penalty, early_stopping,
                        args.num_return_sequences)
    try:
        sampling.check()
    except RduccError as error:  # said with the flags' names
        raise RduccError(str(error).replace("num_return_sequences", "--num-return-sequences")
                         .replace("num_beams", "--num-beams").replace("do_sample", "--sample")) from None
    return sampling


def _prompt_buckets(text: str | None) -> list[int] | None:
    """--prompt-buckets 8,32,128 as lengths."""
    from rducc.errors import RduccError

    if text is None:
        return None
    try:
        lengths = [int(part) for part in text.split(",")]
    except ValueError:
        raise RduccError(f"--prompt-buckets {text}: give prompt lengths as whole numbers, 8,32,128") from None
    if not lengths or min(lengths) < 1:
        raise RduccError(f"--prompt-buckets {text}: each length must be >= 1")
    return lengths


def _run(args: argparse.Namespace) -> None:
    from rducc.errors import RduccError
    from rducc.generation import Generator
    from rducc.generation.source import parse_overrides

    if (args.checkpoint is None) == (args.config is None):
        raise RduccError("give a checkpoint directory or --config FILE|TYPE (one of the two)")
    if args.prompts_file:
        _read_prompts_file(args)
    elif args.ids_file:
        raise RduccError("--ids-file needs --prompts-file FILE")
    if args.prompt and args.prompt_ids:
        raise RduccError("give --prompt or --prompt-ids, not both")
    if not args.prompt and not args.prompt_ids:
        raise RduccError("no prompt: give --prompt TEXT, --prompt-ids 1,2,3 or --prompts-file FILE")
    if args.max_new_tokens < 1:
        raise RduccError(f"--max-new-tokens must be >= 1, got {args.max_new_tokens}")
    sampling = _sampling(args)
    if args.output:
        from rducc.files import check_directory_output

        check_directory_output(args.output, "-o")
    progress = None if args.quiet else _ProgressLine()
    try:
        generator = Generator(args.checkpoint or args.config, target=args.target, tp=args.tp or 0,
                              opt_level=args.opt_level, overrides=parse_overrides(args.set), seed=args.seed,
                              progress=progress)
        result = generator.generate(_prompt_ids(args.prompt_ids) if args.prompt_ids else None,
                                    prompt=args.prompt or None, max_new_tokens=args.max_new_tokens,
                                    sampling=sampling, max_cache_len=args.max_cache_len,
                                    prompt_buckets=_prompt_buckets(args.prompt_buckets))
    finally:
        if progress is not None:
            progress.done()
    for row, sequence in enumerate(result.tokens.tolist()):
        if result.text is not None:
            print(result.text[row])
        else:
            print(f"tokens[{row}]: {' '.join(map(str, sequence))}")
    print(result.summary())
    if args.output:
        prompts = result.sequences.shape[0] // sampling.num_return_sequences
        rows = prompts * sampling.rows_per_prompt  # the programs run every beam (or sample) of every prompt
        length = result.prefill_length or result.prompt_length  # a prompt bucket's, when padded up to one
        generator.save(args.output, rows, length, result.cache_length)  # run_tool says what was written


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `rducc generate`; returns the exit status."""
    from rducc.tools.cli import run_tool

    args = build_parser().parse_args(argv)
    return run_tool(TOOL, lambda: _run(args), args.debug, args.quiet)


if __name__ == "__main__":
    sys.exit(main())
