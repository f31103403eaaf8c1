"""Chapter 09's second measurement: where a Vision Transformer looks, checked against where the evidence is.

    python -m experiments.marks_maps --config full

1. Trains chapter 09's reference ``VisionTransformer`` (Exercise 9.3; 4 x 4 patches of the 32 x 32 images, so 64
   patch tokens and the class token) on the matching-marks task (:func:`attention_course.images.matching_marks`:
   are the two bright marks the same shape?), a fresh batch of generated images at every update (``train_seed +
   step``), and scores it on a fixed test set (``test_seed``). The trained weights go to ``marks_vit.pt``, which
   the chapter loads to draw its maps.
2. The control the task must pass: the same model, budget and seeds trained and tested on the same images with
   the first bright mark erased (its pixels set to the background). Each mark's shape alone is independent of the
   label (:mod:`attention_course.images`), so this model must stay at chance (0.5).
3. For each of ``maps_images`` test images, the importance of every patch for the predicted class by five ways of
   reading the model, each a ``(B, 64)`` map over the patches:

   - ``rollout``: chapter 09's ``attention_rollout`` with the residual (Abnar and Zuidema, 2020), the class
     token's row;
   - ``rollout_no_residual``: the plain product of the layers' maps, the class token's row;
   - ``last_layer``: the last layer's attention from the class token (heads averaged);
   - ``gradient_x_input``: chapter 06's reference ``gradient_x_input`` with the patches as the tokens (each
     patch's pixels its embedding), of the predicted class's log-probability; the map is its magnitude;
   - ``occlusion``: the drop in the predicted class's log-probability when a patch is set to the background (0),
     chapter 06's occlusion with a patch for a word.

   The pointing game (how often a map's top patches fall on the two deciding marks, whose patches are known):
   ``top1`` (the top patch is one of the two marks), ``both_in_top2`` (the two top patches are the two marks),
   ``both_in_top5`` (both marks among the top five: two marks and three distractors make five marked patches),
   and the mass of the map on the two marks' patches (maps made non-negative). Two random baselines, computed
   exactly: a random ranking of all 64 patches, and a random ranking of the five marked patches only (a map
   that finds the marks but cannot tell the bright from the dim ones). Ties are broken by the patch's index, and
   a map whose top-1 is a tie between patches counts as such. The figures are given over all the images and
   apart for the two labels (``same``, ``different``): erasing one mark leaves a single mark, an image unlike any
   the model was trained on, and how the model reads it decides whether occlusion finds the marks (the shipped
   run: it finds them on "different" pairs and seldom on "same" ones; see ``methods_by_label``).

The budget is in updates, so the run gives the same model on any machine with the same instruction set.
Results: ``attention_course/assets/marks_maps_results.json`` and ``marks_vit.pt`` (``--out``). ``--config tiny``
runs in seconds (tests).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from pathlib import Path

import torch
from torch.nn import functional as F

from attention_course.images import MatchingMarks, mark_pixels, matching_marks, patch_cover
from autograder.reference import ch06_attention_maps as ch06
from autograder.reference import ch09_attention_beyond_sequences as ch09
from experiments.cli import add_cpu_run_arguments, make_parser
from experiments.image_models import ViTConfig, parameter_count, vit
from experiments.image_training import accuracy, train_classifier
from experiments.machine import describe_machine

RESULTS_FILE = "marks_maps_results.json"
MODEL_FILE = "marks_vit.pt"
METHODS = ("rollout", "rollout_no_residual", "last_layer", "gradient_x_input", "occlusion")
TOPS = (("top1", 1, 1), ("both_in_top2", 2, 2), ("both_in_top5", 2, 5))  # (name, marks needed, k)


@dataclasses.dataclass(frozen=True)
class Config:
    name: str
    steps: int
    batch_size: int = 64
    lr: float = 1e-3
    eval_every: int = 50
    image_size: int = 32
    patch_size: int = 4
    embed_dim: int = 32
    num_heads: int = 4
    ff_dim: int = 64
    num_layers: int = 2
    distractors: int = 3
    seed: int = 0
    train_seed: int = 1000
    valid_seed: int = 900
    test_seed: int = 901
    valid_images: int = 500
    test_images: int = 1000
    maps_images: int = 500


CONFIGS = {
    "tiny": Config("tiny", steps=20, eval_every=10, valid_images=50, test_images=60, maps_images=12),
    "full": Config("full", steps=600),
}


def command(config_name: str) -> str:
    return f"python -m experiments.marks_maps --config {config_name}"


def vit_config(config: Config) -> ViTConfig:
    return ViTConfig(
        image_size=config.image_size,
        patch_size=config.patch_size,
        embed_dim=config.embed_dim,
        num_heads=config.num_heads,
        ff_dim=config.ff_dim,
        num_layers=config.num_layers,
        num_classes=2,
    )


def erase_first_mark(batch: MatchingMarks) -> MatchingMarks:
    """The same batch with the first bright mark's pixels set to the background (its evidence gone too)."""
    first = mark_pixels(batch)[:, 0]  # (n, S, S)
    return batch._replace(images=batch.images * ~first[:, None], evidence=batch.evidence & ~first)


def data(config: Config, split: str, erase: bool = False, step: int = 0) -> MatchingMarks:
    """A batch of the task: ``train`` (the batch of update ``step``), ``valid`` or ``test``."""
    n, seed = {
        "train": (config.batch_size, config.train_seed + step),
        "valid": (config.valid_images, config.valid_seed),
        "test": (config.test_images, config.test_seed),
    }[split]
    batch = matching_marks(n, seed, size=config.image_size, distractors=config.distractors)
    return erase_first_mark(batch) if erase else batch


def train(config: Config, erase: bool = False, log=None) -> tuple[torch.nn.Module, dict]:
    torch.manual_seed(config.seed)
    model = vit(vit_config(config))
    valid = data(config, "valid", erase)
    history = train_classifier(
        model,
        lambda step: tuple(data(config, "train", erase, step)[:2]),
        config.steps,
        config.lr,
        eval_every=config.eval_every,
        evaluate=lambda m: {"valid_accuracy": accuracy(m, valid.images, valid.labels)},
        log=log,
    )
    return model, history


# ---- the maps ---------------------------------------------------------------------------------------------------


def unpatchify(patches: torch.Tensor, image_size: int, patch_size: int, channels: int = 1) -> torch.Tensor:
    """The inverse of chapter 09's ``patchify``: ``(B, N, C p p)`` -> ``(B, C, S, S)``."""
    B, p, side = patches.shape[0], patch_size, image_size // patch_size
    x = patches.reshape(B, side, side, channels, p, p).permute(0, 3, 1, 4, 2, 5)  # (B, C, rows, p, cols, p)
    return x.reshape(B, channels, image_size, image_size)


@torch.no_grad()
def attention_importance(model, images: torch.Tensor) -> dict:
    """The three attention maps of each image: ``{method: (B, N)}``, the class token's row over the patches."""
    _, maps = model.attention_maps(images)  # L x (B, N + 1, N + 1)
    return {
        "rollout": ch09.attention_rollout(maps, residual=True)[:, 0, 1:],
        "rollout_no_residual": ch09.attention_rollout(maps, residual=False)[:, 0, 1:],
        "last_layer": maps[-1][:, 0, 1:],
    }


def predicted_log_prob(model, images: torch.Tensor, classes: torch.Tensor) -> torch.Tensor:
    """``log p(classes | images)``, (B,)."""
    return F.log_softmax(model(images), dim=-1).gather(1, classes[:, None])[:, 0]


def gradient_importance(model, image: torch.Tensor, cls: int, patch_size: int) -> torch.Tensor:
    """Chapter 06's gradient x input with patches for tokens: (N,) magnitudes for one image (1, S, S)."""
    size = image.shape[-1]
    patches = ch09.patchify(image[None], patch_size)[0]  # (N, p p)

    def score(X):  # (N, p p) -> (1,)
        return predicted_log_prob(model, unpatchify(X[None], size, patch_size), torch.tensor([cls]))

    return torch.from_numpy(ch06.gradient_x_input(score, patches)[0]).abs()  # (N,)


@torch.no_grad()
def occlusion_importance(model, image: torch.Tensor, cls: int, patch_size: int) -> torch.Tensor:
    """The drop in ``log p(cls)`` when each patch is set to 0: (N,) for one image (1, S, S)."""
    size = image.shape[-1]
    patches = ch09.patchify(image[None], patch_size)[0]  # (N, p p)
    N = patches.shape[0]
    occluded = patches.expand(N, -1, -1).clone()  # copy n has patch n blanked
    occluded[torch.arange(N), torch.arange(N)] = 0.0
    images = torch.cat([image[None], unpatchify(occluded, size, patch_size)])  # (1 + N, 1, S, S)
    scores = predicted_log_prob(model, images, torch.full((N + 1,), cls))
    return scores[0] - scores[1:]


def importance_maps(model, images: torch.Tensor, patch_size: int) -> tuple[dict, torch.Tensor]:
    """``({method: (B, N)}, predicted classes (B,))`` for every method of :data:`METHODS`."""
    model.eval()
    with torch.no_grad():
        predicted = model(images).argmax(dim=-1)
    maps = attention_importance(model, images)
    maps["gradient_x_input"] = torch.stack(
        [gradient_importance(model, x, int(c), patch_size) for x, c in zip(images, predicted)]
    )
    maps["occlusion"] = torch.stack(
        [occlusion_importance(model, x, int(c), patch_size) for x, c in zip(images, predicted)]
    )
    return {m: maps[m].float() for m in METHODS}, predicted


# ---- the pointing game ------------------------------------------------------------------------------------------


def ranks(importance: torch.Tensor) -> torch.Tensor:
    """Each row's patch indices from the most important, ties broken by the smaller index: (B, N)."""
    N = importance.shape[1]
    # stable sort of -importance keeps the index order among equal values
    return torch.sort(-importance, dim=1, stable=True).indices[:, :N]


def pointing(importance: torch.Tensor, marks: torch.Tensor) -> dict:
    """The pointing-game figures of one method. ``importance`` (B, N); ``marks`` bool (B, 2, N), which patches
    hold each bright mark."""
    order = ranks(importance)
    found = {}
    for name, needed, k in TOPS:
        top = torch.zeros_like(marks[:, 0]).scatter(1, order[:, :k], True)  # (B, N) the top k
        hits = (marks & top[:, None]).any(dim=2)  # (B, 2): each mark among the top k
        found[name] = float((hits.sum(dim=1) >= needed).float().mean())
    positive = importance.clamp(min=0)
    mass = (positive * marks.any(dim=1)).sum(dim=1) / positive.sum(dim=1).clamp(min=1e-12)
    found["mass_on_marks"] = float(mass.mean())
    return found


def random_pointing(marks: torch.Tensor, candidates: torch.Tensor) -> dict:
    """The same figures, in expectation, for a uniformly random ranking of the ``candidates`` (B, N) patches
    (the others last): exact, from counting. ``marks`` (B, 2, N), each mark one patch among the candidates."""
    figures = {name: 0.0 for name, _, _ in TOPS}
    mass = 0.0
    for row_marks, row in zip(marks, candidates):
        n = int(row.sum())
        e = int(row_marks.any(dim=0).sum())  # the patches of the two marks (2 on the grid)
        for name, needed, k in TOPS:
            k = min(k, n)
            if needed == 1:  # at least one mark among k of n: 1 - C(n - e, k) / C(n, k)
                p = 1 - math.comb(n - e, k) / math.comb(n, k)
            else:  # both marks (one patch each) among k of n: C(n - 2, k - 2) / C(n, k)
                p = math.comb(n - 2, k - 2) / math.comb(n, k) if k >= 2 else 0.0
            figures[name] += p
        mass += e / n  # a uniform map over the candidates
    count = len(marks)
    return {**{name: value / count for name, value in figures.items()}, "mass_on_marks": mass / count}


def pointing_figures(model, batch: MatchingMarks, patch_size: int) -> dict:
    """Every method's pointing figures on ``batch`` and the two random baselines."""
    maps, predicted = importance_maps(model, batch.images, patch_size)
    marks = patch_cover(mark_pixels(batch), patch_size)  # (B, 2, N)
    marked = patch_cover(batch.images[:, 0] > 0, patch_size)  # (B, N): bright and dim marks
    by_label = {}
    for label, name in ((1, "same"), (0, "different")):
        rows = batch.labels == label
        by_label[name] = {"images": int(rows.sum()), **{m: pointing(maps[m][rows], marks[rows]) for m in METHODS}}
    return {
        "images": len(batch.images),
        "accuracy": float((predicted == batch.labels).float().mean()),
        "methods": {m: pointing(maps[m], marks) for m in METHODS},
        "methods_by_label": by_label,
        "random_over_all_patches": random_pointing(marks, torch.ones_like(marked)),
        "random_over_marked_patches": random_pointing(marks, marked),
    }


def run_marks_maps(config_name: str = "full", out: Path | None = None, threads: int = 1, log=print) -> dict:
    torch.set_num_threads(threads)
    config = CONFIGS[config_name]
    started = time.perf_counter()
    results = {
        "description": "chapter 09: a ViT (the reference VisionTransformer) trained on the matching-marks task; the "
        "one-mark control (first mark erased); where it looks against the two deciding marks: rollout with and "
        "without the residual, the last layer's class-token attention, gradient x input and occlusion over patches; "
        "pointing-game figures against exact random baselines",
        "made_by": command(config_name),
        "config": dataclasses.asdict(config),
        "machine": describe_machine(torch.device("cpu")),
    }
    test = data(config, "test")
    model, history = train(config, log=log)
    results["vit"] = {
        "parameters": parameter_count(model),
        "test_accuracy": accuracy(model, test.images, test.labels),
        "curve": {key: history[key] for key in ("steps", "train_loss", "valid_accuracy")},
        "seconds_per_step": history["seconds_per_step"],
    }
    log(f"ViT: test accuracy {results['vit']['test_accuracy']:.3f}")
    control, control_history = train(config, erase=True, log=log)
    erased = erase_first_mark(test)
    results["one_mark_control"] = {
        "test_accuracy": accuracy(control, erased.images, erased.labels),
        "test_images": len(erased.images),
        "chance": 0.5,
        "binomial_sd_at_chance": math.sqrt(0.25 / len(erased.images)),
        "curve": {key: control_history[key] for key in ("steps", "train_loss", "valid_accuracy")},
    }
    log(f"one-mark control: test accuracy {results['one_mark_control']['test_accuracy']:.3f} (chance 0.5)")
    maps_batch = MatchingMarks(*(field[: config.maps_images] for field in test))
    results["pointing"] = pointing_figures(model, maps_batch, config.patch_size)
    for method, figures in results["pointing"]["methods"].items():
        log(f"{method:>20}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()))
    for name in ("random_over_all_patches", "random_over_marked_patches"):
        log(f"{name:>20}: " + ", ".join(f"{k} {v:.3f}" for k, v in results["pointing"][name].items()))
    results["total_seconds"] = time.perf_counter() - started
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        torch.save(model.state_dict(), out / MODEL_FILE)
        (out / RESULTS_FILE).write_text(json.dumps(results, indent=1) + "\n")
        log(f"wrote {out / RESULTS_FILE} and {out / MODEL_FILE}")
    return results


def load_model(path: Path, config_name: str = "full") -> torch.nn.Module:
    """The trained ViT of ``marks_vit.pt`` (eval mode)."""
    model = vit(vit_config(CONFIGS[config_name]))
    model.load_state_dict(torch.load(path, weights_only=True))
    return model.eval()


def main(argv=None) -> int:
    parser = make_parser("python -m experiments.marks_maps", __doc__)
    add_cpu_run_arguments(parser, CONFIGS, f"{RESULTS_FILE} and {MODEL_FILE}")
    args = parser.parse_args(argv)
    run_marks_maps(args.config, out=None if args.no_write else args.out, threads=args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
