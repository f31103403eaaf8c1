# ruff: noqa: E501
"""Chapter 06's answers written as whole cells, wrong and valid (tests/wrong_answers/__init__.py runs them).

Each function's body is an answer cell as a student writes it (the function is never called): its decorator
says which exercise it answers, what the student did and whether the answer is wrong or valid, and turns it
into the :class:`~wrong_answers.Variant` that ``ch06_attention_maps.py`` lists in its place. The imports
are the names such a cell finds in the student's namespace (the export cell and the answers above it), here
for the linter.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch

from wrong_answers import valid, wrong


@wrong("gradient_x_input", "one backward pass of the sum of all scores: every row the same")
def gradient_x_input_one_backward_of_sum():
    def gradient_x_input(score_fn_emb, embeddings):
        """Gradient of the summed log-probabilities, times the input."""
        X = embeddings.detach().clone().requires_grad_(True)
        scores = score_fn_emb(X)
        (grad,) = torch.autograd.grad(scores.sum(), X)
        row = (grad * X).sum(dim=-1)
        return torch.stack([row] * scores.shape[0]).detach().numpy()


@valid("plot_attention", "imshow without vmin/vmax, set_xticklabels, plt.colorbar")
def plot_attention_no_vmin_vmax():
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


@valid("argmax_alignment", "a loop over the rows with max(range, key=...)")
def argmax_alignment_loop_over_rows_max_range():
    def argmax_alignment(weights):
        """Row by row."""
        rows = weights.tolist()
        return np.array([max(range(len(row)), key=row.__getitem__) for row in rows], dtype=np.int64)


@valid("crossing_count", "two nested loops")
def crossing_count_two_nested_loops():
    def crossing_count(alignment):
        """Count the pairs i < j with alignment[i] > alignment[j]."""
        alignment = list(alignment)
        count = 0
        for i in range(len(alignment)):
            for j in range(i + 1, len(alignment)):
                if alignment[i] > alignment[j]:
                    count += 1
        return count


@valid("crossing_count", "itertools.combinations")
def crossing_count_itertools_combinations():
    def crossing_count(alignment):
        """Pairs in order."""
        import itertools

        return sum(1 for a, b in itertools.combinations(list(alignment), 2) if a > b)


@valid("attention_entropy", "torch.special.xlogy (0 log 0 = 0) on a float64 tensor")
def attention_entropy_torch_special_xlogy_0_log():
    def attention_entropy(weights):
        """xlogy gives 0 where p = 0."""
        p = torch.as_tensor(np.asarray(weights, dtype=float) if not torch.is_tensor(weights) else weights.detach())
        return (-torch.special.xlogy(p, p).sum(dim=-1)).double().numpy()


@valid("occlusion_importance", "a list of ints copied and edited, the columns filled into a NumPy array")
def occlusion_importance_list_copies():
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


@valid("gradient_x_input", "torch.autograd.functional.jacobian, then einsum")
def gradient_x_input_jacobian():
    def gradient_x_input(score_fn_emb, embeddings):
        """All rows of the Jacobian at once."""
        X = embeddings.detach().clone()
        jacobian = torch.autograd.functional.jacobian(score_fn_emb, X)  # (T_dec, T_enc, d_e)
        return torch.einsum("tik,ik->ti", jacobian, X).numpy()


@valid("gradient_x_input", "backward() with X.grad zeroed between rows")
def gradient_x_input_backward_per_row():
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
