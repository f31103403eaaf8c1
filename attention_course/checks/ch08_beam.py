"""Helpers of chapter 08's visible tests of ``beam_search`` (Exercise 8.5).

``ToyModel`` is a model that needs no training: the log-probabilities of the next token depend on
the whole prefix (the tokens after ``bos_id``), either through a table written out by hand
(``probs``: prefix -> probabilities) or through a random generator seeded by the prefix (so two
different prefixes get different, untied log-probabilities). Its state is the prefix itself, one
row per hypothesis, so that the checks can see what your search hands to ``step``. It records the
number of rows of every call to ``step`` in ``calls`` (emptied by ``initial_state``; kept in a tensor,
which the grader sees change even when your code runs in another process).

``TinyGRU`` is a small seeded GRU language model whose state is a tuple of tensors, reordered with
``index_select`` as a key-value cache would be.

``greedy`` is greedy decoding written as a plain loop (one hypothesis, the best token at each
step): what ``beam_search`` with ``beam_size=1`` must return.

``check_search`` runs your ``beam_search`` on a model and compares what it returns, and the rows it
handed to ``step``, with the expected ones, with a message that says what differs.
"""

from __future__ import annotations

import math

import torch

from .ch08 import raises_value_error  # noqa: F401 (the beam tests import it from here too)


def _check_index(rows, index):
    """reorder's index: a long tensor (K',) of rows of a state of `rows` rows."""
    assert isinstance(index, torch.Tensor) and index.dim() == 1 and index.dtype == torch.long, (
        f"reorder(state, index): index should be a long tensor (K',), got {type(index).__name__} "
        f"{getattr(index, 'dtype', '')} {tuple(getattr(index, 'shape', ()))}"
    )
    outside = [i for i in index.tolist() if not 0 <= i < rows]
    assert not outside, (
        f"reorder(state, index) with index {index.tolist()}: the state has {rows} rows (0 .. {rows - 1}), so "
        f"{outside} name no row. index names, for each hypothesis kept alive, the row of the hypothesis it extends "
        "(its position in the flattened K * n_vocab scores divided by n_vocab), not its place among the kept ones"
    )


class ToyModel:
    """A model of the next token given the prefix, for beam_search's tests (see the module's docstring).

    n_vocab tokens 0 .. n_vocab - 1; bos_id may lie outside them (it is only ever a last token).
    probs: a dict from a prefix (a tuple of tokens, bos excluded) to n_vocab probabilities, with
    `default` for the prefixes it does not name; without probs, seeded random log-probabilities.
    """

    def __init__(self, n_vocab, bos_id, eos_id, probs=None, default=None, seed=0, dtype=torch.float32):
        self.n_vocab, self.bos_id, self.eos_id = n_vocab, bos_id, eos_id
        self.probs, self.default, self.seed, self.dtype = probs, default, seed, dtype
        self.record = torch.zeros(257, dtype=torch.long)  # [number of calls, rows of call 1, rows of call 2, ...]

    @property
    def calls(self):
        """The number of rows of each call to step since initial_state, a list."""
        return self.record[1 : 1 + int(self.record[0])].tolist()

    def initial_state(self):
        """The state of the one empty hypothesis, a (1, 0) tensor of tokens (no token yet); a new search begins."""
        self.record.zero_()
        return torch.zeros(1, 0, dtype=torch.long)

    def log_probs_of(self, prefix):
        """The log-probabilities (n_vocab,) of the token after the prefix (a tuple of tokens, bos excluded)."""
        if self.probs is not None:
            return torch.tensor(self.probs.get(tuple(prefix), self.default), dtype=torch.float64).log().to(self.dtype)
        code = self.seed + 1
        for token in prefix:
            code = (code * 1_000_003 + token + 1) % (2**61 - 1)
        generator = torch.Generator().manual_seed(code)
        logits = 2.0 * torch.randn(self.n_vocab, generator=generator, dtype=torch.float64)
        return torch.log_softmax(logits, dim=0).to(self.dtype)

    def score(self, tokens):
        """The log-probability of a whole sequence of tokens (a list), summed in float64."""
        return sum(float(self.log_probs_of(tokens[:i])[token]) for i, token in enumerate(tokens))

    def step(self, last_tokens, state):
        """last_tokens (K,) long, state (K, t) the tokens before them -> (log_probs (K, n_vocab), state (K, t + 1))."""
        assert isinstance(last_tokens, torch.Tensor) and last_tokens.dim() == 1 and last_tokens.dtype == torch.long, (
            f"step(last_tokens, state): last_tokens should be a long tensor of shape (K,), got "
            f"{type(last_tokens).__name__} {getattr(last_tokens, 'dtype', '')} "
            f"{tuple(getattr(last_tokens, 'shape', ()))}"
        )
        K = last_tokens.shape[0]
        assert isinstance(state, torch.Tensor) and state.dim() == 2 and state.shape[0] == K, (
            f"step was called with {K} last tokens but a state of "
            f"{state.shape[0] if isinstance(state, torch.Tensor) else '?'} "
            "rows: row k of the state must belong to hypothesis k. After choosing the extensions to keep, call "
            "reorder(state, rows), rows the (long) tensor of the hypotheses they extend, repeats included"
        )
        if int(self.record[0]) == 0:
            assert K == 1 and int(last_tokens[0]) == self.bos_id, (
                f"the first call to step should be for the one empty hypothesis: last_tokens = tensor([bos_id]) = "
                f"tensor([{self.bos_id}]), got {last_tokens.tolist()}. Start with ONE hypothesis, not beam_size copies "
                "of it: copies would all make the same extensions, and the beam would keep the same sentence "
                "several times"
            )
        else:
            assert self.bos_id not in last_tokens.tolist(), (
                f"step was called with bos_id ({self.bos_id}) as a last token after the first step: last_tokens "
                f"{last_tokens.tolist()} should be the tokens your hypotheses just took"
            )
            ends = [k for k in range(K) if int(last_tokens[k]) == self.eos_id]
            assert not ends, (
                f"step was called to extend hypotheses whose last token is eos_id ({self.eos_id}), rows {ends}: "
                "a hypothesis that took eos_id is finished; keep it aside and never hand it to step again"
            )
        assert int(self.record[0]) < 256, (
            "step was called more than 256 times: does the search stop after max_len steps?"
        )
        self.record[0] += 1
        self.record[int(self.record[0])] = K
        tokens = torch.cat([state, last_tokens[:, None]], dim=1)  # (K, t + 1), bos included in column 0
        log_probs = torch.stack([self.log_probs_of(row[1:].tolist()) for row in tokens])
        return log_probs, tokens

    @staticmethod
    def reorder(state, index):
        """The rows of state that index names, in that order (a key-value cache would use index_select too)."""
        _check_index(state.shape[0], index)
        rows = state.index_select(0, index)
        return rows


class TinyGRU(ToyModel):
    """A small GRU language model with seeded random weights; its state is a tuple (hidden (K, d), steps taken (K,))."""

    def __init__(self, n_vocab, eos_id, seed, d=6):
        super().__init__(n_vocab, bos_id=n_vocab, eos_id=eos_id)
        rng = torch.Generator()
        rng.manual_seed(seed)
        self.d = d
        self.embedding = torch.randn(n_vocab + 1, d, generator=rng)
        self.cell = torch.nn.GRUCell(d, d)
        with torch.no_grad():
            for parameter in self.cell.parameters():
                parameter.copy_(0.5 * torch.randn(parameter.shape, generator=rng))
        self.out = 3.0 * torch.randn(n_vocab, d, generator=rng)

    def initial_state(self):
        self.record.zero_()
        return (torch.zeros(1, self.d), torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _next(self, last_tokens, hidden):
        hidden = self.cell(self.embedding[last_tokens], hidden)
        return torch.log_softmax(hidden @ self.out.T, dim=-1), hidden

    def step(self, last_tokens, state):
        hidden, steps = state
        assert hidden.shape[0] == last_tokens.shape[0] == steps.shape[0], (
            f"step was called with {last_tokens.shape[0]} last tokens and a state of {hidden.shape[0]} rows: "
            "reorder the state with the rows you kept"
        )
        assert self.record[0] < 256, "step was called more than 256 times"
        self.record[0] += 1
        self.record[int(self.record[0])] = last_tokens.shape[0]
        log_probs, hidden = self._next(last_tokens, hidden)
        return log_probs, (hidden, steps + 1)

    @staticmethod
    def reorder(state, index):
        _check_index(state[0].shape[0], index)
        return tuple(t.index_select(0, index) for t in state)

    def log_probs_of(self, prefix):
        hidden = torch.zeros(1, self.d)
        for token in [self.bos_id, *prefix]:
            log_probs, hidden = self._next(torch.tensor([token]), hidden)
        return log_probs[0]


def greedy(model, max_len):
    """Greedy decoding as a plain loop: (tokens, their log-probability)."""
    tokens = []
    while len(tokens) < max_len:
        tokens.append(int(model.log_probs_of(tokens).argmax()))
        if tokens[-1] == model.eos_id:
            break
    return tokens, model.score(tokens)


def _describe(model, tokens, alpha):
    raw = model.score(tokens)
    return f"{tokens} (log-probability {raw:.4f}, divided by n^alpha: {raw / len(tokens) ** alpha:.4f})"


def check_search(beam_search, model, beam_size, max_len, alpha, expected, rows=None, what="", hint=""):
    """Run beam_search on model; compare its (tokens, score) with expected tokens, and its calls with rows."""
    where = f"{what}beam_search(beam_size={beam_size}, max_len={max_len}, alpha={alpha})"
    result = beam_search(
        model.step, model.reorder, model.initial_state(), model.bos_id, model.eos_id, beam_size, max_len, alpha
    )
    assert isinstance(result, tuple) and len(result) == 2, f"{where} should return (tokens, score), got {result!r}"
    tokens, score = result
    assert isinstance(tokens, list) and all(isinstance(t, int) for t in tokens), (
        f"{where}: tokens should be a Python list of ints (use .tolist() or int(...)), got {tokens!r}"
    )
    assert isinstance(score, float), f"{where}: score should be a Python float (float(...)), got {type(score).__name__}"
    assert len(model.calls) <= max_len, (
        f"{where} called step {len(model.calls)} times (rows: {model.calls}): at most max_len = {max_len} steps; "
        "a hypothesis is finished when it takes eos_id or when its step is t = max_len"
    )
    assert 1 <= len(tokens) <= max_len and model.bos_id not in tokens, (
        f"{where} returned {tokens}: expected 1 to max_len = {max_len} tokens, without bos_id ({model.bos_id})"
    )
    assert tokens[-1] == model.eos_id or len(tokens) == max_len, (
        f"{where} returned {tokens}, which neither ends in eos_id ({model.eos_id}) nor has max_len tokens: "
        "only those two kinds of hypotheses are finished"
    )
    true_score = model.score(tokens)
    assert math.isclose(score, true_score, rel_tol=1e-5, abs_tol=1e-6), (
        f"{where} returned the tokens {tokens} with score {score:.6f}, but their log-probability (the sum of "
        f"log_probs[h, w] along them) is {true_score:.6f}. Return the raw sum, not the normalised one (divide by "
        "n^alpha only to compare finished hypotheses at the end); and if the state was not reordered with the kept "
        "rows, step scored the tokens of another hypothesis"
    )
    assert tokens == expected, (
        f"{where} returned\n  {_describe(model, tokens, alpha)}\n"
        f"expected\n  {_describe(model, expected, alpha)}\n{hint}"
    )
    if rows is not None:
        assert model.calls == rows, (
            f"{where}: step was called with {model.calls} rows (one number per call), expected {rows}: each step hands "
            "step() only the live hypotheses (the kept extensions that did not take eos_id), and keeps the beam_size "
            "best of ALL their extensions, so the number of live hypotheses may fall and grow back"
        )
