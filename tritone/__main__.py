"""`python -m tritone <command>`.

    selftest   run a few complete kernels and compare them with numpy (exit 1 on any failure)
    doctor     check this machine: Python, GPU, NVRTC, torch, triton, cache, a live kernel (exit 1 on a failure)
    cache      info | clear | prune the on-disk kernel cache
    use        tritone | triton | auto: who answers `import triton` in this Python environment
"""

from __future__ import annotations

import argparse
import ntpath
import sys


def _selftest(args: argparse.Namespace) -> int:
    from .doctor import run
    from .selftest import print_report, run_checks

    # Every section, so that the counts are those `doctor` prints.
    sys.stdout.write(run().summary_text())
    results = run_checks(seed=args.seed)
    print_report(results, sys.stdout)
    return 0 if all(result.passed for result in results) else 1


def _doctor(args: argparse.Namespace) -> int:
    from .doctor import doctor_command

    return doctor_command(sys.stdout, as_json=args.json)


def _cache(args: argparse.Namespace) -> int:
    from .doctor.cache_report import cache_command

    return cache_command(args.action, sys.stdout, older_than_days=args.older_than_days, max_size=args.max_size)


def _use(args: argparse.Namespace) -> int:
    from .doctor.provider import use_command

    return use_command(args.choice, sys.stdout)


def program_name(argv0: str) -> str:
    """How the user started the command line, for its usage line: "tritone" for the
    script pip installs (tritone, tritone.exe, tritone-script.py), else
    "python -m tritone"."""
    # ntpath splits at both separators: the script's path may be either kind.
    stem = ntpath.basename(argv0).lower()
    for suffix in (".exe", ".py"):
        stem = stem.removesuffix(suffix)
    return "tritone" if stem in ("tritone", "tritone-script") else "python -m tritone"


def main(argv: list[str] | None = None) -> int:
    """Run the command named in `argv` (default: the process arguments); returns the exit status."""
    from . import __tritone_version__, __version__

    parser = argparse.ArgumentParser(prog=program_name(sys.argv[0]), description="tritone command line")
    parser.add_argument("--version", action="version",
                        version=f"tritone {__tritone_version__} (Triton API {__version__})")
    commands = parser.add_subparsers(dest="command", required=True)
    selftest = commands.add_parser("selftest", help="run example kernels and check them against numpy")
    selftest.add_argument("--seed", type=int, default=None, help="seed of the random inputs (default: fresh)")
    selftest.set_defaults(handler=_selftest)
    doctor = commands.add_parser("doctor", help="check this machine and say how to fix what is wrong")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.set_defaults(handler=_doctor)
    cache = commands.add_parser("cache", help="the on-disk kernel cache")
    cache.add_argument("action", choices=("info", "clear", "prune"))
    cache.add_argument("--older-than-days", type=float, default=30.0,
                       help="prune: remove entries written longer ago than this (default 30)")
    cache.add_argument("--max-size", default=None, help="prune: then remove the oldest until the rest fit (2G, 500M)")
    cache.set_defaults(handler=_cache)
    use = commands.add_parser("use", help="record who answers `import triton` in this Python environment")
    use.add_argument("choice", choices=("tritone", "triton", "auto"),
                     help="tritone; triton (upstream); auto: tritone unless another triton is installed")
    use.set_defaults(handler=_use)
    args = parser.parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
