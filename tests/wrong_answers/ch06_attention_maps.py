"""Chapter 06: the likeliest wrong answers to Exercises 6.1-6.6, and other correct ways to write them."""

from wrong_answers import Variant
from wrong_answers.cells import ch06 as cells

IMSHOW = 'image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")  # row 0 at the top'
XTICKS = "ax.set_xticks(range(len(src_tokens)), labels=list(src_tokens), rotation=90)"
YTICKS = "ax.set_yticks(range(len(tgt_tokens)), labels=list(tgt_tokens))"
ARGMAX = "return np.asarray(weights).argmax(axis=1).astype(int)"
CROSSINGS = "return int(np.triu(a[:, None] > a[None, :], k=1).sum())"
ENTROPY = "return -(p * np.log(safe)).sum(axis=1)"
OCCLUDED = "occluded = ids.clone()"
COLUMN = "columns.append(base - score_fn(occluded))                 # (T_dec,)"
STACK = "return torch.stack(columns, dim=1).detach().cpu().numpy()        # (T_dec, T_enc)"
COPY = "X = torch.as_tensor(embeddings).detach().clone().requires_grad_(True)   # (T_enc, d_e)"
ROW = "rows.append((grad * X).sum(dim=-1))                                  # (T_enc,)"

WRONG = [
    # Exercise 6.1, plot_attention
    Variant(
        "plot_attention",
        "the weights transposed: sources down the side",
        replace=[(IMSHOW, 'image = ax.imshow(weights.T, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")')],
    ),
    Variant(
        "plot_attention", "no colour bar", replace=[('ax.figure.colorbar(image, ax=ax, label="attention weight")', "")]
    ),
    Variant(
        "plot_attention",
        "the rainbow colour map 'jet'",
        replace=[(IMSHOW, 'image = ax.imshow(weights, cmap="jet", vmin=0.0, vmax=1.0, aspect="auto")')],
    ),
    Variant(
        "plot_attention",
        "origin='lower': the first target token at the bottom",
        replace=[(IMSHOW, 'image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, origin="lower")')],
    ),
    Variant(
        "plot_attention",
        "tick labels swapped: targets along x, sources along y",
        replace=[
            (XTICKS, "ax.set_xticks(range(len(tgt_tokens)), labels=list(tgt_tokens))"),
            (YTICKS, "ax.set_yticks(range(len(src_tokens)), labels=list(src_tokens))"),
        ],
    ),
    Variant(
        "plot_attention",
        "always draws into a new figure, ignoring ax",
        replace=[("    if ax is None:\n        _, ax =", "    if True:\n        _, ax =")],
    ),
    # Exercise 6.2, argmax_alignment
    Variant(
        "argmax_alignment",
        "argmax over the columns (axis 0)",
        replace=[(ARGMAX, "return np.asarray(weights).argmax(axis=0)")],
    ),
    Variant("argmax_alignment", "argmin", replace=[(ARGMAX, "return np.asarray(weights).argmin(axis=1)")]),
    Variant(
        "argmax_alignment",
        "the largest weights, not their columns",
        replace=[(ARGMAX, "return np.asarray(weights).max(axis=1)")],
    ),
    Variant(
        "argmax_alignment",
        "one flat argmax over the whole map",
        replace=[(ARGMAX, "return np.array([np.asarray(weights).argmax()])")],
    ),
    # Exercise 6.3, crossing_count
    Variant(
        "crossing_count",
        "only adjacent pairs (i, i + 1) counted",
        replace=[(CROSSINGS, "return int(np.sum(a[:-1] > a[1:]))")],
    ),
    Variant(
        "crossing_count",
        "ties counted as crossings (>=)",
        replace=[(CROSSINGS, "return int(np.triu(a[:, None] >= a[None, :], k=1).sum())")],
    ),
    Variant(
        "crossing_count",
        "pairs in both orders (no triu): every pair of different positions",
        replace=[(CROSSINGS, "return int((a[:, None] > a[None, :]).sum())")],
    ),
    Variant(
        "crossing_count",
        "the pairs in order counted (alignment[i] < alignment[j])",
        replace=[(CROSSINGS, "return int(np.triu(a[:, None] < a[None, :], k=1).sum())")],
    ),
    # Exercise 6.4, attention_entropy
    Variant(
        "attention_entropy",
        "log base 2 (bits, not nats)",
        replace=[(ENTROPY, "return -(p * np.log2(safe)).sum(axis=1)")],
    ),
    Variant(
        "attention_entropy", "the minus sign forgotten", replace=[(ENTROPY, "return (p * np.log(safe)).sum(axis=1)")]
    ),
    Variant(
        "attention_entropy",
        "summed over the rows (axis 0): one value per source token",
        replace=[(ENTROPY, "return -(p * np.log(safe)).sum(axis=0)")],
    ),
    Variant(
        "attention_entropy",
        "p log p with p = 0 left in (nan and a warning)",
        replace=[(ENTROPY, "return -(p * np.log(p)).sum(axis=1)")],
    ),
    Variant(
        "attention_entropy",
        "the mean over the source tokens instead of the sum",
        replace=[(ENTROPY, "return -(p * np.log(safe)).mean(axis=1)")],
    ),
    # Exercise 6.5, occlusion_importance
    Variant(
        "occlusion_importance",
        "the sign reversed: occluded minus unchanged",
        replace=[(COLUMN, "columns.append(score_fn(occluded) - base)")],
    ),
    Variant(
        "occlusion_importance",
        "the caller's ids changed in place (no copy)",
        replace=[(OCCLUDED, "occluded = ids")],
    ),
    Variant(
        "occlusion_importance",
        "the hidden tokens accumulate (each copy made once, before the loop)",
        replace=[
            (OCCLUDED, "pass"),
            ("        columns = []\n", "        columns = []\n        occluded = ids.clone()\n"),
        ],
    ),
    Variant(
        "occlusion_importance",
        "transposed: (T_enc, T_dec)",
        replace=[(STACK, "return torch.stack(columns, dim=0).detach().cpu().numpy()")],
    ),
    Variant(
        "occlusion_importance",
        "the token deleted instead of replaced (a shorter source)",
        replace=[
            (OCCLUDED, "occluded = torch.cat([ids[:i], ids[i + 1 :]])"),
            ("            occluded[i] = replace_id\n", ""),
        ],
    ),
    Variant(
        "occlusion_importance",
        "replace_id ignored: always 0 (the padding id)",
        replace=[("occluded[i] = replace_id", "occluded[i] = 0")],
    ),
    Variant(
        "occlusion_importance",
        "returns a torch tensor, not a NumPy array",
        replace=[(STACK, "return torch.stack(columns, dim=1).detach()")],
    ),
    # Exercise 6.6, gradient_x_input
    Variant(
        "gradient_x_input",
        "returns a torch tensor, not a NumPy array",
        replace=[("return torch.stack(rows).detach().cpu().numpy()", "return torch.stack(rows).detach()")],
    ),
    Variant(
        "gradient_x_input",
        "the gradient alone, not times the input",
        replace=[(ROW, "rows.append(grad.sum(dim=-1))")],
    ),
    cells.gradient_x_input_one_backward_of_sum,
    Variant(
        "gradient_x_input",
        "requires_grad switched on for the caller's tensor itself",
        replace=[(COPY, "X = embeddings.requires_grad_(True)")],
    ),
    Variant(
        "gradient_x_input",
        "absolute values of gradient x input",
        replace=[(ROW, "rows.append((grad * X).sum(dim=-1).abs())")],
    ),
    Variant(
        "gradient_x_input",
        "summed over the source positions instead of the embedding dimension",
        replace=[(ROW, "rows.append((grad * X).sum(dim=0))")],
    ),
]

VALID = [
    cells.plot_attention_no_vmin_vmax,
    cells.argmax_alignment_loop_over_rows_max_range,
    Variant(
        "argmax_alignment",
        "torch.argmax on a tensor copy",
        replace=[(ARGMAX, "return torch.as_tensor(np.asarray(weights)).argmax(dim=-1).numpy()")],
    ),
    cells.crossing_count_two_nested_loops,
    cells.crossing_count_itertools_combinations,
    Variant(
        "attention_entropy",
        "np.log of p + a tiny epsilon",
        replace=[(ENTROPY, "return -(p * np.log(p + 1e-300)).sum(axis=1)")],
    ),
    cells.attention_entropy_torch_special_xlogy_0_log,
    cells.occlusion_importance_list_copies,
    Variant(
        "occlusion_importance",
        "torch.where for the occluded copy, no torch.no_grad",
        replace=[
            (OCCLUDED, "occluded = torch.where(torch.arange(len(ids)) == i, replace_id, ids)"),
            ("            occluded[i] = replace_id\n", ""),
        ],
    ),
    cells.gradient_x_input_jacobian,
    cells.gradient_x_input_backward_per_row,
]
