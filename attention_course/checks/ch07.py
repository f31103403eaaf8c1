"""Helpers of chapter 07's visible tests: torch's own layers as the yardstick, and the comparisons
that say which common mistake an answer's output matches.

Each helper raises ``AssertionError`` with a message (expected vs got, the likely fix) and prints
nothing when the answer is right. Nothing here implements an exercise: the layers compared with
are PyTorch's (``nn.TransformerEncoderLayer``, ``nn.TransformerDecoderLayer``), the sine table is
computed entry by entry from the formula.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .ch05 import require_attributes  # (chapter 05's: the same check of a module's attributes)

__all__ = [
    "assert_dropout_off_in_eval",
    "assert_embeddings_initialised",
    "assert_like_assembled_translator",
    "assert_like_torch_decoder",
    "assert_like_torch_encoder",
    "assert_translator_interface",
    "load_torch_weights",
    "moved_away",
    "require_attributes",
]


def moved_away(module: nn.Module, scale: float = 0.3) -> nn.Module:
    """``module`` with every parameter moved by ``scale`` times a standard normal draw, in place.

    torch starts biases at 0 and layer norms at scale 1 and shift 0: moved away, each one matters.
    """
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.add_(scale * torch.randn_like(parameter))
    return module


def load_torch_weights(mine, state, what: str, hint: str = "") -> None:
    """``mine.load_state_dict(state)`` (strict), or an AssertionError that says what must match."""
    try:
        mine.load_state_dict(state)
    except RuntimeError as error:
        raise AssertionError(
            f"the weights of {what} do not load into yours (load_state_dict is strict): the names and shapes must be "
            f"torch's, with no other parameters or persistent buffers.{' ' + hint if hint else ''}\n{error}"
        ) from None


def _called(layer, inputs: tuple, shapes: str, hint: str):
    """``layer(*inputs)``; an error other than NotImplementedError becomes an AssertionError that says what went in."""
    try:
        return layer(*inputs)
    except NotImplementedError:
        raise
    except Exception as error:
        raise AssertionError(
            f"your layer, called with {shapes}, raised {type(error).__name__}: {error}. Check the shapes each "
            f"sublayer receives: {hint}"
        ) from None


def _recipe(norm_first: bool) -> str:
    return "pre-norm (norm_first=True)" if norm_first else "post-norm (norm_first=False)"


def _other_recipe(theirs: nn.Module, kind: type, **sizes) -> nn.Module:
    """torch's layer of the other recipe (norm_first flipped), with ``theirs``'s weights and dtype, in eval mode."""
    other = kind(
        sizes["d_model"],
        sizes["nhead"],
        sizes["dim_feedforward"],
        dropout=0.0,
        batch_first=True,
        norm_first=not theirs.norm_first,
    )
    other.to(theirs.linear1.weight.dtype).load_state_dict(theirs.state_dict())
    return other.eval()


def _sizes(theirs: nn.Module) -> dict:
    return {
        "d_model": theirs.linear1.in_features,
        "nhead": theirs.self_attn.num_heads,
        "dim_feedforward": theirs.linear1.out_features,
    }


def assert_like_torch_encoder(mine, theirs: nn.TransformerEncoderLayer, x: torch.Tensor, mask: torch.Tensor) -> None:
    """Your layer (with torch's weights, eval mode) computes torch's ``theirs`` at the real tokens.

    ``mask`` (B, T) is the course's padding mask (True = real token); torch is given ``~mask``.
    On a difference, the message says whether your output is the other recipe's or the unmasked one's.
    """
    recipe = _recipe(theirs.norm_first)
    other = _other_recipe(theirs, nn.TransformerEncoderLayer, **_sizes(theirs))
    with torch.no_grad():
        got = _called(
            mine,
            (x, mask),
            f"x {tuple(x.shape)} and key_padding_mask {tuple(mask.shape)}",
            "self-attention's queries, keys and values are all (projections of) x",
        )
        expected = theirs(x, src_key_padding_mask=~mask)  # PyTorch: True = padding
        if_other_recipe = other(x, src_key_padding_mask=~mask)
        if_no_mask = theirs(x)
    assert tuple(got.shape) == tuple(x.shape), (
        f"the output should have shape (B, T, d_model) = {tuple(x.shape)}, got {tuple(got.shape)}"
    )
    assert not got[mask].isnan().any(), (
        f"{recipe}: your output is nan at real tokens. A query whose keys are all masked out gets nan: "
        "nn.MultiheadAttention's key_padding_mask is True at the keys to IGNORE, the opposite of the course's "
        "convention, so pass key_padding_mask=~key_padding_mask"
    )
    diff = (got - expected)[mask].abs().max().item()
    hint = "Check the order norm / attention / residual in each sublayer, the ReLU, and the mask."
    if (got - if_other_recipe)[mask].abs().max() < 1e-5:
        hint = (
            f"Your layer computes the other recipe: with norm_first={theirs.norm_first} it should be {recipe} "
            "(the formulas above)."
        )
    elif (got - if_no_mask)[mask].abs().max() < 1e-5:
        hint = "Your layer ignores the padding mask: pass ~key_padding_mask to self_attn as its key_padding_mask."
    assert diff < 1e-5, (
        f"{recipe}: your output differs from nn.TransformerEncoderLayer's by up to {diff:.3g} at real tokens. {hint}"
    )


def assert_like_torch_decoder(
    mine, theirs: nn.TransformerDecoderLayer, x: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor
) -> None:
    """Your decoder layer (torch's weights, eval mode) computes torch's ``theirs`` called with a causal
    ``tgt_mask`` and ``~memory_mask``; and position t does not depend on later inputs.

    On a difference, the message names the common mistake whose output yours matches.
    """
    dtype = theirs.linear1.weight.dtype
    recipe = _recipe(theirs.norm_first)
    other = _other_recipe(theirs, nn.TransformerDecoderLayer, **_sizes(theirs))
    causal = nn.Transformer.generate_square_subsequent_mask(x.shape[1], dtype=dtype)  # torch's: -inf above the diagonal
    with torch.no_grad():
        got = _called(
            mine,
            (x, memory, memory_mask),
            f"x {tuple(x.shape)}, memory {tuple(memory.shape)} and memory_key_padding_mask {tuple(memory_mask.shape)}",
            "in cross-attention the queries come from x (the decoder), the keys and values from memory "
            "(the encoder): multihead_attn(query, memory, memory, ...)",
        )
        expected = theirs(x, memory, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=~memory_mask)
        causal_and_masked = {"tgt_mask": causal, "tgt_is_causal": True, "memory_key_padding_mask": ~memory_mask}
        candidates = {  # what some common mistakes compute
            f"the other recipe: with norm_first={theirs.norm_first} it should be {recipe}": other(
                x, memory, **causal_and_masked
            ),
            "a self-attention that is not causal: pass attn_mask=~M, M the course's causal mask "
            "(True on and below the diagonal)": theirs(x, memory, memory_key_padding_mask=~memory_mask),
            "a cross-attention that ignores the memory mask: pass key_padding_mask=~memory_key_padding_mask "
            "to multihead_attn": theirs(x, memory, tgt_mask=causal, tgt_is_causal=True),
            "a cross-attention given the memory mask as it is: PyTorch's key_padding_mask is True at the keys to "
            "IGNORE, so pass ~memory_key_padding_mask": theirs(
                x, memory, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=memory_mask
            ),
        }
    assert tuple(got.shape) == tuple(x.shape), (
        f"the output should have shape (B, T_dec, d_model) = {tuple(x.shape)}, got {tuple(got.shape)}"
    )
    assert got.dtype == dtype, f"with {dtype} inputs and weights the output should be {dtype}, got {got.dtype}"
    assert not got.isnan().any(), (
        f"{recipe}, {dtype}: your output contains nan. A query whose keys are all masked out gets nan: PyTorch's masks "
        "are True where attention is NOT allowed, the opposite of the course's convention. Pass attn_mask=~M for the "
        "causal mask M (True on and below the diagonal) and key_padding_mask=~memory_key_padding_mask"
    )
    diff = (got - expected).abs().max().item()
    hint = (
        "Check the three sublayers' order (self-attention, cross-attention, feed-forward), the norms (the memory is "
        "not normalised here), the causal mask and the memory mask."
    )
    for mistake, output in candidates.items():
        if (got - output).abs().max() < 1e-5:
            hint = f"Your layer computes {mistake}."
    assert diff < 1e-5, (
        f"{recipe}, {dtype}: your output differs from nn.TransformerDecoderLayer's by up to {diff:.3g}. {hint}"
    )
    changed = x.clone()
    changed[:, -1] += 5.0
    with torch.no_grad():  # causality: changing the last input changes nothing at the earlier positions
        again = mine(changed, memory, memory_mask)
    assert torch.allclose(again[:, :-1], got[:, :-1], atol=1e-6), (
        "changing the decoder input at the last position changed the output at earlier positions: "
        "the self-attention must be causal (position t attends to positions 0..t only)"
    )


def assert_dropout_off_in_eval(mine, inputs: tuple, expected: torch.Tensor, at: torch.Tensor | None = None) -> None:
    """A layer built with dropout > 0 and switched to eval mode computes ``expected`` (at the positions ``at``),
    and twice the same."""
    with torch.no_grad():
        got, again = mine(*inputs), mine(*inputs)
    gap = got - expected
    diff = (gap if at is None else gap[at]).abs().max().item()
    assert diff < 1e-5, (
        "built with dropout=0.5 and switched to evaluation mode (eval()), your layer differs from torch's by up to "
        f"{diff:.3g}"
        + (
            ""
            if torch.allclose(got, again, rtol=0, atol=0, equal_nan=True)
            else ", and two calls on the same input give different outputs"
        )
        + ": dropout must do nothing in evaluation mode. Use nn.Dropout modules, which follow train() and eval(), or "
        "pass training=self.training to F.dropout (its default, training=True, keeps dropping in evaluation mode)"
    )


def assert_translator_interface(model) -> None:
    """The shapes of encode, decode and forward for a model of 11 source words, 13 target words and d_model = 8;
    the source mask from lengths (whatever token pads); logits at position t that do not depend on later targets."""
    src = torch.tensor([[4, 5, 6, 2], [7, 2, 0, 0]])  # two sources (EOS = 2), the second padded with PAD = 0
    lengths = torch.tensor([4, 2])
    tgt_in = torch.tensor([[1, 8, 9], [1, 10, 0]])  # BOS = 1, then the gold prefix
    with torch.no_grad():
        memory, src_mask = model.encode(src, lengths)
        logits = model.decode(tgt_in, memory, src_mask)
        logits_forward = model(src, lengths, tgt_in)
    assert tuple(memory.shape) == (2, 4, 8), (
        f"memory should have shape (B, T_enc, d_model) = (2, 4, 8), got {tuple(memory.shape)}"
    )
    assert torch.equal(src_mask.bool(), torch.tensor([[True, True, True, True], [True, True, False, False]])), (
        f"src_mask should be True at the real tokens (the first lengths[b] of row b), got\n{src_mask}"
    )
    assert tuple(logits.shape) == (2, 3, 13), (
        f"logits should have shape (B, T_dec, n_vocab) = (2, 3, 13), got {tuple(logits.shape)}"
    )
    assert torch.allclose(logits, logits_forward, atol=1e-6), (
        "forward(src, lengths, tgt_in) should equal decode(tgt_in, *encode(src, lengths))"
    )
    with torch.no_grad():  # the same sources padded with token 9 instead of PAD = 0
        memory_9, src_mask_9 = model.encode(torch.tensor([[4, 5, 6, 2], [7, 2, 9, 9]]), lengths)
        logits_9 = model.decode(tgt_in, memory_9, src_mask_9)
    assert torch.equal(src_mask_9.bool(), src_mask.bool()) and torch.allclose(logits_9, logits, atol=1e-5), (
        f"the second source padded with token 9 instead of 0 (same lengths) gave the src_mask\n{src_mask_9}\nand "
        f"{'other logits' if not torch.allclose(logits_9, logits, atol=1e-5) else 'the same logits'}: src_mask must be "
        "True at the first lengths[b] positions of row b whatever the padded positions hold. Build it from lengths "
        "(position < lengths[b]), not from the tokens (src != PAD_ID)"
    )
    with torch.no_grad():
        other = model(src, lengths, torch.tensor([[1, 8, 3], [1, 10, 5]]))
    assert torch.allclose(other[:, :2], logits[:, :2], atol=1e-6), (
        "changing the last target token changed the logits of earlier positions: the decoder layers must be causal"
    )


def assert_embeddings_initialised(model, embed_dim: int) -> None:
    """Both embeddings' entries have standard deviation 1/sqrt(embed_dim) (within 10 %)."""
    for name in ("src_embedding", "tgt_embedding"):
        std = getattr(model, name).weight.detach().std().item()
        assert abs(std * math.sqrt(embed_dim) - 1) < 0.1, (
            f"{name}: with embed_dim = {embed_dim} the entries should be drawn with standard deviation "
            f"1/sqrt({embed_dim}) "
            f"= {embed_dim**-0.5:.3f} (nn.init.normal_(weight, std=embed_dim ** -0.5)), got {std:.3f}"
        )


def _sine_table(T: int, E: int) -> torch.Tensor:
    """The table of Exercise 7.1, entry by entry from the formula: (T, E), float64."""
    return torch.tensor(
        [[(math.sin if j % 2 == 0 else math.cos)(p / 10000 ** ((j - j % 2) / E)) for j in range(E)] for p in range(T)],
        dtype=torch.float64,
    )


def _assembled(parts: dict, src, lengths, tgt_in, scale=True, positions=True, final_norms=True, scale_positions=False):
    """(memory, logits) of the Transformer assembled from torch's modules ``parts``; each flag switches off one
    step, to recognise a common mistake."""
    E = parts["out"].in_features
    layers = sum(name.startswith("encoder_layers.") for name in parts)
    dtype = parts["out"].weight.dtype
    real = torch.arange(src.shape[1])[None, :] < lengths[:, None]  # (B, T_enc), True at real tokens

    def enter(tokens, embedding):  # (B, T) -> (B, T, E)
        x = embedding(tokens) * (math.sqrt(E) if scale else 1.0)
        x = x + _sine_table(tokens.shape[1], E).to(dtype) if positions else x
        return x * math.sqrt(E) if scale_positions else x

    x = enter(src, parts["src_embedding"])
    for i in range(layers):
        x = parts[f"encoder_layers.{i}"](x, src_key_padding_mask=~real)
    memory = parts["encoder_norm"](x) if final_norms else x
    y = enter(tgt_in, parts["tgt_embedding"])
    causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], dtype=dtype)
    for i in range(layers):
        y = parts[f"decoder_layers.{i}"](y, memory, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=~real)
    return memory, parts["out"](parts["decoder_norm"](y) if final_norms else y)


_MISTAKES = {
    "embeddings not multiplied by sqrt(embed_dim)": {"scale": False},
    "no positional encodings": {"positions": False},
    "the positions scaled too, (embedding + P) * sqrt(embed_dim), instead of embedding * sqrt(embed_dim) + P": {
        "scale": False,
        "scale_positions": True,
    },
    "no final layer norms (encoder_norm after the last encoder layer, decoder_norm after the last decoder layer)": {
        "final_norms": False
    },
}


def assert_like_assembled_translator(translator_class, seed: int = 2) -> None:
    """``translator_class(11, 13, 8, 2, 16, 2)`` with weights copied (strictly) from torch's own modules computes the
    memory and the logits of the model assembled from those modules (nn.Embedding, the sine table,
    nn.TransformerEncoderLayer / nn.TransformerDecoderLayer with norm_first=True, nn.LayerNorm, nn.Linear), in float32
    (tolerance 1e-4) and float64 (1e-6). On a difference, the message names the mistake whose logits yours match."""
    E, H, FF, L, n_src, n_tgt = 8, 2, 16, 2, 11, 13
    torch.manual_seed(seed)
    parts = {
        "src_embedding": nn.Embedding(n_src, E),
        "tgt_embedding": nn.Embedding(n_tgt, E),
        "encoder_norm": nn.LayerNorm(E),
        "decoder_norm": nn.LayerNorm(E),
        "out": nn.Linear(E, n_tgt),
    }
    parts.update(
        {
            f"encoder_layers.{i}": nn.TransformerEncoderLayer(E, H, FF, 0.0, batch_first=True, norm_first=True)
            for i in range(L)
        }
    )
    parts.update(
        {
            f"decoder_layers.{i}": nn.TransformerDecoderLayer(E, H, FF, 0.0, batch_first=True, norm_first=True)
            for i in range(L)
        }
    )
    for module in parts.values():
        moved_away(module).eval()
    src = torch.tensor([[4, 5, 6, 7, 2], [8, 9, 2, 0, 0]])  # (B, T_enc) = (2, 5): EOS = 2, PAD = 0
    lengths = torch.tensor([5, 3])
    tgt_in = torch.tensor([[1, 8, 9, 10], [1, 11, 12, 3]])  # (B, T_dec) = (2, 4)
    real = torch.arange(5)[None, :] < lengths[:, None]
    for dtype, tol in [(torch.float32, 1e-4), (torch.float64, 1e-6)]:
        for module in parts.values():
            module.to(dtype)
        state = {
            f"{prefix}.{key}": value for prefix, module in parts.items() for key, value in module.state_dict().items()
        }
        mine = translator_class(n_src, n_tgt, E, H, FF, L).to(dtype)
        load_torch_weights(
            mine,
            state,
            "torch's modules",
            "A table of positions kept with register_buffer is part of the state_dict unless you "
            "register it with persistent=False.",
        )
        mine.eval()
        with torch.no_grad():
            memory_mine, _ = mine.encode(src, lengths)
            logits_mine = mine(src, lengths, tgt_in)
            memory_torch, logits_torch = _assembled(parts, src, lengths, tgt_in)
            hint = (
                "Check the scaling by sqrt(embed_dim), the positions (the same table for source and target, from "
                "position 0), the final layer norms and the masks."
            )
            for mistake, flags in _MISTAKES.items():
                if torch.allclose(logits_mine, _assembled(parts, src, lengths, tgt_in, **flags)[1], atol=tol, rtol=tol):
                    hint = f"Your logits are those of a Transformer with {mistake}."
        assert logits_mine.dtype == dtype, (
            f"with {dtype} weights the logits should be {dtype}, got {logits_mine.dtype} "
            "(move the positions to the embeddings' dtype and device)"
        )
        diff = (logits_mine - logits_torch).abs().max().item()
        assert diff < tol, (
            f"{dtype}: your logits differ from those of the model assembled from torch's modules by up "
            f"to {diff:.3g}. {hint}"
        )
        diff = (memory_mine - memory_torch)[real].abs().max().item()
        assert diff < tol, (
            f"{dtype}: encode's memory differs from torch's by up to {diff:.3g} at real tokens: it should "
            "be the output of encoder_norm after the last encoder layer"
        )
