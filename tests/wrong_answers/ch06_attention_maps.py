"""Chapter 06: the likeliest wrong answers to Exercises 6.1-6.6, and other correct ways to write them."""

from wrong_answers import Variant

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
    Variant(
        "gradient_x_input",
        "one backward pass of the sum of all scores: every row the same",
        source='''
def gradient_x_input(score_fn_emb, embeddings):
    """Gradient of the summed log-probabilities, times the input."""
    X = embeddings.detach().clone().requires_grad_(True)
    scores = score_fn_emb(X)
    (grad,) = torch.autograd.grad(scores.sum(), X)
    row = (grad * X).sum(dim=-1)
    return torch.stack([row] * scores.shape[0]).detach().numpy()
''',
    ),
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
    Variant(
        "plot_attention",
        "imshow without vmin/vmax, set_xticklabels, plt.colorbar",
        source='''
def plot_attention(weights, src_tokens, tgt_tokens, ax=None):
    """Draw an attention map."""
    if torch.is_tensor(weights):
        weights = weights.detach().numpy()
    if ax is None:
        fig, ax = plt.subplots()
    image = ax.imshow(weights, cmap=plt.get_cmap("viridis"))
    ax.set_xticks(np.arange(len(src_tokens)))
    ax.set_xticklabels(src_tokens)
    ax.set_yticks(np.arange(len(tgt_tokens)))
    ax.set_yticklabels(tgt_tokens)
    plt.colorbar(image, ax=ax)
    return ax
''',
    ),
    Variant(
        "argmax_alignment",
        "a loop over the rows with max(range, key=...)",
        source='''
def argmax_alignment(weights):
    """Row by row."""
    rows = weights.tolist()
    return np.array([max(range(len(row)), key=row.__getitem__) for row in rows], dtype=np.int64)
''',
    ),
    Variant(
        "argmax_alignment",
        "torch.argmax on a tensor copy",
        replace=[(ARGMAX, "return torch.as_tensor(np.asarray(weights)).argmax(dim=-1).numpy()")],
    ),
    Variant(
        "crossing_count",
        "two nested loops",
        source='''
def crossing_count(alignment):
    """Count the pairs i < j with alignment[i] > alignment[j]."""
    alignment = list(alignment)
    count = 0
    for i in range(len(alignment)):
        for j in range(i + 1, len(alignment)):
            if alignment[i] > alignment[j]:
                count += 1
    return count
''',
    ),
    Variant(
        "crossing_count",
        "itertools.combinations",
        source='''
def crossing_count(alignment):
    """Pairs in order."""
    import itertools

    return sum(1 for a, b in itertools.combinations(list(alignment), 2) if a > b)
''',
    ),
    Variant(
        "attention_entropy",
        "np.log of p + a tiny epsilon",
        replace=[(ENTROPY, "return -(p * np.log(p + 1e-300)).sum(axis=1)")],
    ),
    Variant(
        "attention_entropy",
        "torch.special.xlogy (0 log 0 = 0) on a float64 tensor",
        source='''
def attention_entropy(weights):
    """xlogy gives 0 where p = 0."""
    p = torch.as_tensor(np.asarray(weights, dtype=float) if not torch.is_tensor(weights) else weights.detach())
    return (-torch.special.xlogy(p, p).sum(dim=-1)).double().numpy()
''',
    ),
    Variant(
        "occlusion_importance",
        "a list of ints copied and edited, the columns filled into a NumPy array",
        source='''
def occlusion_importance(score_fn, src_ids, replace_id):
    """One forward pass per hidden position."""
    ids = [int(i) for i in src_ids]
    base = score_fn(torch.tensor(ids)).detach().numpy()
    result = np.zeros((len(base), len(ids)))
    for i in range(len(ids)):
        hidden = ids.copy()
        hidden[i] = replace_id
        result[:, i] = base - score_fn(torch.tensor(hidden)).detach().numpy()
    return result
''',
    ),
    Variant(
        "occlusion_importance",
        "torch.where for the occluded copy, no torch.no_grad",
        replace=[
            (OCCLUDED, "occluded = torch.where(torch.arange(len(ids)) == i, replace_id, ids)"),
            ("            occluded[i] = replace_id\n", ""),
        ],
    ),
    Variant(
        "gradient_x_input",
        "torch.autograd.functional.jacobian, then einsum",
        source='''
def gradient_x_input(score_fn_emb, embeddings):
    """All rows of the Jacobian at once."""
    X = embeddings.detach().clone()
    jacobian = torch.autograd.functional.jacobian(score_fn_emb, X)  # (T_dec, T_enc, d_e)
    return torch.einsum("tik,ik->ti", jacobian, X).numpy()
''',
    ),
    Variant(
        "gradient_x_input",
        "backward() with X.grad zeroed between rows",
        source='''
def gradient_x_input(score_fn_emb, embeddings):
    """One backward pass per target token, reading X.grad."""
    X = embeddings.detach().clone().requires_grad_(True)
    scores = score_fn_emb(X)
    result = []
    for t in range(len(scores)):
        X.grad = None
        scores[t].backward(retain_graph=True)
        result.append((X.grad * X.detach()).sum(-1))
    return torch.stack(result).numpy()
''',
    ),
]
