"""What the command lines of the training programs share: where things go, the parser and its common options.

Each program (``python -m experiments.translation``, ``.variants``, ``.transformer``, ``.exports``,
``.soft_maps``, ``.positions``, ``.beam``, ``.bottleneck``, ``.benchmark_training``,
``.benchmark_attention_at_scale``) builds its parser with :func:`make_parser` (its module docstring as the
help) and, when it trains, adds :func:`add_run_arguments` (``--device``, ``--no-write``, ``--max-seconds``,
``--quiet``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository
ASSETS = ROOT / "attention_course" / "assets"  # the package data the chapters read: where the results go


def make_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A parser named ``prog`` (``python -m experiments.NAME``) whose help starts with ``description`` as
    written (the program's docstring)."""
    return argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def add_run_arguments(parser: argparse.ArgumentParser, quiet: bool = True) -> None:
    """The options of every training program: ``--device``, ``--no-write``, ``--max-seconds`` and (unless
    ``quiet`` is False) ``--quiet``."""
    parser.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: what pick_device finds)")
    parser.add_argument("--no-write", action="store_true", help="write no results (a dry run)")
    parser.add_argument("--max-seconds", type=float, default=None, help="stop training each model after this long")
    if quiet:
        parser.add_argument("--quiet", action="store_true", help="no progress bar")


def add_cpu_run_arguments(parser: argparse.ArgumentParser, configs, written: str) -> None:
    """The options of chapter 09's training programs, which train on the CPU with a budget in updates:
    ``--config`` (one of ``configs``), ``--no-write``, ``--threads`` and ``--out`` (where ``written`` goes)."""
    parser.add_argument("--config", choices=sorted(configs), default="full")
    parser.add_argument("--no-write", action="store_true", help="write no results (a dry run)")
    parser.add_argument("--threads", type=int, default=1, help="PyTorch CPU threads (default 1)")
    parser.add_argument("--out", type=Path, default=ASSETS, help=f"the folder that receives {written}")
