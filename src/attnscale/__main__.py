"""Command line: ``python -m attnscale scale --d 128 --n 4096 [--cosine] [--causal | --contrastive]
[--train-length 512] [--head-entropy H | --head-scale A]``.

Prints every criterion's scale for the setting as a table, starting from the
head's measured entropy or scale at the training length when given (and
saying which default it assumes when not).  A rule that cannot answer for
the setting prints a note instead of a row.  Bad arguments give a one-line
error on stderr and exit status 2; anything unexpected gives one line and
status 1; never a traceback.  Numbers are read as the page's form reads
them (``attnscale.practice.calculator.read_number``: decimals with an optional
exponent), and their errors are the calculator's words, the same on the
page.  Domain: ``2 <= d <= 1e6``, ``2 <= n, L <= 1e15`` (see
``attnscale.recommend_scale``).
"""

from __future__ import annotations

import argparse
import sys

from .practice.calculator import FIELDS, read_number, recommend_scale


class _OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, without the usage text."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(
        prog="python -m attnscale",
        description="Attention scale calculator from 'The Scale of Attention'.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    scale = commands.add_parser("scale", help="every criterion's scale for one setting")
    scale.add_argument(
        "--d", required=True, help="head dimension (>= 2); with --contrastive, the embedding dimension"
    )
    scale.add_argument(
        "--n",
        required=True,
        help="number of keys, or the longest sequence if --causal, or candidates per query if --contrastive",
    )
    scale.add_argument("--cosine", action="store_true", help="scores are cosines of normalized q and k")
    scale.add_argument(
        "--causal",
        action="store_true",
        help="a decoder, whose query at position t sees t keys (the gradient row: one scale for positions "
        "2 .. n; the length rules: the factor of the last position, n)",
    )
    scale.add_argument(
        "--contrastive",
        action="store_true",
        help="a contrastive loss over n candidates by cosine similarity (with --cosine; its answer: the "
        "gradient row, an order of magnitude)",
    )
    scale.add_argument("--train-length", default=None, help="training length, for length rules")
    # one or the other; recommend_scale says so in the words the page uses, and these are its notes
    # under the form's fields (attnscale.practice.calculator.FIELDS)
    scale.add_argument("--head-entropy", default=None, help=FIELDS["head_entropy"])
    scale.add_argument("--head-scale", default=None, help=FIELDS["head_scale"])
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)  # exits with status 2 and a one-line message on bad syntax
    try:
        # read in the form's order, so that the first bad field is the one both name
        numbers = {
            name: None if text is None else read_number(text, name)
            for name, text in (
                ("d", args.d),
                ("n", args.n),
                ("train_length", args.train_length),
                ("head_scale", args.head_scale),
                ("head_entropy", args.head_entropy),
            )
        }
        recommendation = recommend_scale(
            scores="cosine" if args.cosine else "dot",
            causal=args.causal,
            contrastive=args.contrastive,
            **numbers,
        )
    except (ValueError, TypeError) as error:
        print(f"{parser.prog}: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except Exception as error:  # the calculator never dies with a traceback
        print(f"{parser.prog}: internal error: {type(error).__name__}: {_one_line(error)}", file=sys.stderr)
        return 1
    try:
        print(recommendation.table())
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        sys.stdout = None
    return 0


def _one_line(error) -> str:
    return " ".join(str(error).split())


if __name__ == "__main__":
    sys.exit(main())
