"""`python -m tritone <command>`.

    selftest   run a few complete kernels and compare them with numpy (exit 1 on any failure)
"""

from __future__ import annotations

import argparse
import sys


def _selftest(args: argparse.Namespace) -> int:
    from .selftest import print_report, run_checks

    results = run_checks(seed=args.seed)
    print_report(results, sys.stdout)
    return 0 if all(result.passed for result in results) else 1


def main(argv: list[str] | None = None) -> int:
    """Run the command named in `argv` (default: the process arguments); returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m tritone", description="tritone command line")
    commands = parser.add_subparsers(dest="command", required=True)
    selftest = commands.add_parser("selftest", help="run example kernels and check them against numpy")
    selftest.add_argument("--seed", type=int, default=None, help="seed of the random inputs (default: fresh)")
    selftest.set_defaults(handler=_selftest)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
