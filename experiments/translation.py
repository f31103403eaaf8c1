"""Train the toy English -> French models of chapters 05 and 06, with and without attention.

    python -m experiments.translation --config small|full [--model both|attention|plain]

trains on whatever ``pick_device`` finds (bf16 autocast on CUDA, float32 elsewhere) with a
fixed seed, a progress bar and a checkpoint after every epoch (run the same command again to
resume: it continues from the last checkpoint in ``--workdir``), then evaluates greedy
translations of the held-out test split by source length and writes, into ``--out``
(default ``attention_course/assets/``, the package data the chapters read):

- ``translation_results.json``: the configuration, training curves and, per model, exact-match
  accuracy and BLEU by source length (the table and figures of chapter 05);
- ``attention_model.pt``: the attention model's weights and vocabularies (a few MB);


    python -m experiments.translation --config maps --model attention

trains the model chapter 06 reads (``experiments.exports.MAPS_MODEL``) into ``experiments/maps_model/`` and then
writes chapter 06's data into ``--maps-out`` (default ``attention_course/assets/``): ``attention_maps.npz`` (maps,
translations, vocabularies) and ``attention_scorer.pt2`` (the model as a black-box scorer); see
:mod:`experiments.exports`.

    python -m experiments.translation --export-only

trains nothing: it rewrites chapter 06's data from the saved model (same as ``python -m experiments.exports``).

Several GPUs or machines: launch the same program with PyTorch's ``torchrun``, e.g.
``torchrun --nproc_per_node=4 -m experiments.translation --config full``; every process then
trains a DistributedDataParallel replica on its share of each epoch's batches (NCCL on CUDA,
gloo on CPU). Rank 0 writes every file.

Times: ``--config small`` about a minute on a 2-core CPU; the shipped files come from
``--config medium`` (about 8 to 10 minutes per model on a 2-core CPU, plus a minute of evaluation;
20 to 23 minutes on a loaded one); ``--config maps`` about 5 minutes; ``--config full`` is sized for
one GPU and has not been run yet.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

import torch

from autograder.reference.ch05_gpu_training import pick_device
from experiments.cli import ASSETS, ROOT, add_run_arguments, make_parser
from experiments.config import CONFIGS, Config
from experiments.data import describe, load_data
from experiments.evaluation import evaluate
from experiments.exports import MAPS_MODEL, MAPS_OUT, export_attention_maps
from experiments.machine import describe_machine
from experiments.training import start_distributed, stop_distributed, train


def run(
    config: Config,
    models=("attention", "plain"),
    device=None,
    workdir: Path | None = None,
    out: Path | None = None,
    maps_out: Path | None = None,
    max_seconds: float | None = None,
    show_progress: bool = True,
    dump_params: Path | None = None,
    log=print,
) -> dict:
    """Train and evaluate ``models``; write the results (rank 0 only) when ``out`` is given."""
    device, distributed, rank, world = start_distributed(pick_device(device))
    t0 = time.perf_counter()
    src_vocab, tgt_vocab, splits, encoded = load_data(config)
    log(f"data: {describe(splits, encoded)} ({time.perf_counter() - t0:.1f} s); device {device}, world size {world}")
    results = {
        "config": dataclasses.asdict(config),
        "device": str(device),
        "torch": torch.__version__,
        "world_size": world,
        "machine": describe_machine(device),
        "models": {},
    }
    for kind in models:
        model, history = train(
            kind,
            config,
            encoded,
            device,
            workdir=workdir,
            max_seconds=max_seconds,
            show_progress=show_progress,
            log=log,
        )
        if dump_params is not None:
            torch.save(
                {k: v.detach().cpu() for k, v in model.state_dict().items()},
                dump_params.parent / f"{dump_params.name}.{kind}.rank{rank}.pt",
            )
        if rank != 0:
            continue
        evaluation = evaluate(model, splits["test"], encoded["test"], tgt_vocab, device)
        results["models"][kind] = {
            "history": history,
            "parameters": sum(p.numel() for p in model.parameters()),
            **evaluation,
        }
        log(f"{kind}: test exact match {evaluation['exact_match']:.3f}, BLEU {evaluation['bleu']:.1f}")
        if out is not None and kind == "attention":
            out.mkdir(parents=True, exist_ok=True)
            torch.save(
                {
                    "model": {k: v.cpu() for k, v in model.state_dict().items()},
                    "config": dataclasses.asdict(config),
                    "source_vocab": src_vocab.itos,
                    "target_vocab": tgt_vocab.itos,
                },
                out / "attention_model.pt",
            )
            if maps_out is not None:
                export_attention_maps(out / "attention_model.pt", maps_out, log=log)
    if out is not None and rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        path = out / "translation_results.json"
        if path.exists():  # keep the other model's results of the same configuration
            previous = json.loads(path.read_text())
            if previous.get("config") == results["config"]:
                results["models"] = {**previous["models"], **results["models"]}
        path.write_text(json.dumps(results, indent=1) + "\n")
        log(f"wrote {out / 'translation_results.json'}")
    if distributed:
        stop_distributed()
    return results


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.translation", __doc__)
    parser.add_argument("--config", choices=sorted(CONFIGS), default="small")
    parser.add_argument("--model", choices=["both", "attention", "plain"], default="both")
    add_run_arguments(parser)
    parser.add_argument(
        "--workdir", type=Path, default=ROOT / "_build" / "translation", help="checkpoints (resumed when present)"
    )
    parser.add_argument("--fresh", action="store_true", help="ignore existing checkpoints")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where the results and the attention model go (default: attention_course/assets; "
        "experiments/maps_model for --config maps)",
    )
    parser.add_argument("--maps-out", type=Path, default=ASSETS, help="where chapter 06's data goes")
    parser.add_argument(
        "--dump-params",
        type=Path,
        default=None,
        help="every rank saves its final parameters to DUMP.<model>.rank<r>.pt (for tests)",
    )
    parser.add_argument(
        "--export-only",
        action="store_true",
        help="train nothing: write chapter 06's data from the model it reads (python -m experiments.exports)",
    )
    args = parser.parse_args(argv)
    if args.export_only:
        export_attention_maps(MAPS_MODEL, args.maps_out)
        return 0
    config = CONFIGS[args.config]
    out = args.out or (MAPS_OUT if config.name == "maps" else ASSETS)
    workdir = args.workdir / f"seed{config.seed}"
    if args.fresh and workdir.exists():
        for path in workdir.glob(f"*_{config.name}.ckpt"):
            path.unlink()
    models = ("attention", "plain") if args.model == "both" else (args.model,)
    run(
        config,
        models,
        device=args.device,
        workdir=workdir,
        out=None if args.no_write else out,
        maps_out=args.maps_out if not args.no_write and out / "attention_model.pt" == MAPS_MODEL else None,
        max_seconds=args.max_seconds,
        show_progress=not args.quiet,
        dump_params=args.dump_params,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
