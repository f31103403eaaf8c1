"""Figure helpers for the chapters (not exercises).

Attention weights are drawn with a perceptually uniform colour map ("viridis") so that equal
steps in weight look like equal steps in colour.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources

import matplotlib.pyplot as plt
import numpy as np

from attention_course import assets

ATTENTION_CMAP = "viridis"


def plot_matrices(
    matrices: Sequence[np.ndarray],
    titles: Sequence[str] | None = None,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    panel_size: float = 3.0,
):
    """Draw several matrices of the same kind side by side (for comparing attention variants).

    ``matrices``: a sequence of 2-D arrays, each ``(rows, cols)``; rows are drawn top to bottom.
    The labels, when given, apply to every panel. One shared colour bar spans ``[vmin, vmax]``
    (pass ``None`` for both to scale to the data). Returns ``(figure, list of Axes)``.
    """
    arrays = [np.asarray(m, dtype=float) for m in matrices]
    if not arrays or any(a.ndim != 2 for a in arrays):
        raise ValueError(
            f"plot_matrices needs a non-empty sequence of 2-D arrays, got shapes {[a.shape for a in arrays]}"
        )
    if titles is not None and len(titles) != len(arrays):
        raise ValueError(f"got {len(titles)} titles for {len(arrays)} matrices")
    if vmin is None and vmax is None:
        vmin = min(float(a.min()) for a in arrays)
        vmax = max(float(a.max()) for a in arrays)
    figure, axes = plt.subplots(1, len(arrays), figsize=(panel_size * len(arrays) + 1.0, panel_size), squeeze=False)
    axes = list(axes[0])
    for index, (ax, matrix) in enumerate(zip(axes, arrays)):
        image = ax.imshow(matrix, cmap=ATTENTION_CMAP, vmin=vmin, vmax=vmax, aspect="auto")
        if titles is not None:
            ax.set_title(titles[index])
        if col_labels is not None:
            ax.set_xticks(range(matrix.shape[1]), labels=list(col_labels), rotation=90)
        if row_labels is not None:
            ax.set_yticks(range(matrix.shape[0]), labels=list(row_labels) if index == 0 else [])
    figure.colorbar(image, ax=axes, shrink=0.8)
    return figure, axes


def show_diagram(name: str):
    """Show the course's schematic diagram ``name`` (e.g. ``"03_attention_unit"``) and return it.

    The diagrams are SVG files shipped in ``attention_course/assets/diagrams/`` (drawn by
    ``scripts/diagrams/``). Returns an ``IPython.display.SVG``: as the last line of a
    cell, Jupyter displays it as the cell's result (elsewhere, pass it to ``IPython.display.display``).
    Raises ``FileNotFoundError`` naming the known diagrams when there is no diagram ``name``.
    """
    from IPython.display import SVG

    try:
        svg_path = assets.path(f"diagrams/{name}.svg")
    except FileNotFoundError:
        folder = resources.files(assets.__name__).joinpath("diagrams")
        known = sorted(p.name.removesuffix(".svg") for p in folder.iterdir() if p.name.endswith(".svg"))
        raise FileNotFoundError(
            f"attention_course has no diagram {name!r}; the known diagrams are: {', '.join(known)}"
        ) from None
    return SVG(filename=str(svg_path))
