"""Helpers of chapter 05's visible tests of Exercises 5.1 and 5.6: picking the device, and one training step.

Imagined machines for the device questions (:func:`simulated_machine`), a toy batch and its loss, one
SGD step with clipping computed by hand on a copy of the model, the loss under autocast, and the step on
an imagined machine whose model stays on the CPU. Each helper raises ``AssertionError`` with a message
(expected vs got, the likely fix) and prints nothing when the answer is right; the yardsticks are
PyTorch's own (``F.cross_entropy``, ``torch.autograd.grad``). The test cells import these names from
:mod:`attention_course.checks.ch05`, which holds the other exercises' helpers.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from attention_course.translation import BagOfWordsTranslator

__all__ = [
    "assert_autocast_step",
    "assert_clipped_sgd_step",
    "assert_picks",
    "assert_refuses",
    "assert_step_on_the_models_device",
    "simulated_machine",
    "toy_batch",
    "toy_loss",
]


# --- Exercise 5.1: devices --------------------------------------------------------------------


@contextlib.contextmanager
def simulated_machine(cuda_devices: int, mps: bool | None = None):
    """An imagined machine for the duration of the block: ``torch.cuda.is_available()`` answers
    ``cuda_devices > 0``, ``torch.cuda.device_count()`` answers ``cuda_devices`` and (unless ``mps`` is
    None) ``torch.backends.mps.is_available()`` answers ``mps``. The three functions are put back after.

    Only these three questions are imagined: an answer that looks at the machine another way sees the
    real one (the statement of Exercise 5.1 says so)."""
    saved = (torch.cuda.is_available, torch.cuda.device_count, torch.backends.mps.is_available)
    try:
        torch.cuda.is_available, torch.cuda.device_count = (lambda: cuda_devices > 0), (lambda: cuda_devices)
        if mps is not None:
            torch.backends.mps.is_available = lambda: mps
        yield
    finally:
        torch.cuda.is_available, torch.cuda.device_count, torch.backends.mps.is_available = saved


def _call(pick_device, prefer):
    """``pick_device()`` or ``pick_device(prefer)``; a TypeError becomes an AssertionError with a hint."""
    call = "pick_device()" if prefer is None else f"pick_device({prefer!r})"
    try:
        return pick_device() if prefer is None else pick_device(prefer)
    except NotImplementedError:
        raise
    except TypeError as error:
        raise AssertionError(
            f"{call} failed with {error!r}"
            + (": torch.device('cuda').index is None, which means the first card (index 0)" if prefer == "cuda" else "")
        ) from None


def assert_picks(pick_device, prefer, expected: str, why: str) -> None:
    """``pick_device(prefer)`` (``pick_device()`` when ``prefer`` is None) returns a torch.device of type
    ``expected`` ("cpu" must be exactly ``torch.device("cpu")``); ``why`` says what was expected and why."""
    got = _call(pick_device, prefer)
    assert isinstance(got, torch.device), f"{why}: pick_device should return a torch.device, got {got!r}"
    right = got == torch.device("cpu") if expected == "cpu" else got.type == expected
    assert right, f"{why}; got {got!r}"


def assert_refuses(pick_device, prefer: str, why: str) -> None:
    """``pick_device(prefer)`` raises a RuntimeError whose message names the device type."""
    call = f"pick_device({prefer!r})"
    try:
        got = pick_device(prefer)
    except NotImplementedError:
        raise
    except RuntimeError as error:
        kind = torch.device(prefer).type
        assert kind in str(error), (
            f"the error for an unavailable device should name it ({kind!r}), got the message {str(error)!r}"
        )
        return
    except Exception as error:
        raise AssertionError(
            f"{call} should raise a RuntimeError ({why}), got {type(error).__name__}: {error}"
        ) from None
    raise AssertionError(f"{call} should raise a RuntimeError ({why}), got {got!r}")


# --- Exercise 5.6: one training step ----------------------------------------------------------


def toy_batch() -> dict:
    """Two sentences for a BagOfWordsTranslator of 10 words (pad_id 0): src, lengths, tgt_in, tgt_out."""
    return {
        "src": torch.tensor([[3, 4, 2], [5, 2, 0]]),
        "lengths": torch.tensor([3, 2]),
        "tgt_in": torch.tensor([[1, 6, 7], [1, 8, 0]]),
        "tgt_out": torch.tensor([[6, 7, 2], [8, 2, 0]]),
    }


def toy_loss(model, batch: dict, pad_id: int = 0) -> torch.Tensor:
    """The mean cross-entropy over the real target tokens (F.cross_entropy with ignore_index=pad_id)."""
    logits = model(batch["src"], batch["lengths"], batch["tgt_in"])
    return F.cross_entropy(
        logits.float().reshape(-1, logits.shape[-1]), batch["tgt_out"].reshape(-1), ignore_index=pad_id
    )


def assert_clipped_sgd_step(train_step, model, batch: dict, clip_norm: float, lr: float = 0.5) -> None:
    """One ``train_step`` with SGD(lr) moves each parameter p to p - lr * g * min(1, clip_norm / ||g||), g the loss's
    gradient computed by hand on a copy of the model; gradients left over before the step must not count."""
    twin = BagOfWordsTranslator(*model.embedding.weight.shape)
    twin.load_state_dict(model.state_dict())
    start = [p.detach().clone() for p in model.parameters()]
    grads = torch.autograd.grad(toy_loss(twin, batch), list(twin.parameters()))
    norm = float(torch.sqrt(sum((g**2).sum() for g in grads)))
    factor = min(1.0, clip_norm / (norm + 1e-6))
    for p in model.parameters():
        p.grad = torch.full_like(p, 5.0)  # gradients left over from an earlier step: they must not count
    train_step(model, batch, torch.optim.SGD(model.parameters(), lr=lr), pad_id=0, clip_norm=clip_norm)
    for (name, p), p0, g in zip(model.named_parameters(), start, grads):
        expected = p0 - lr * factor * g
        assert torch.allclose(p.detach(), expected, atol=1e-5), (
            f"clip_norm={clip_norm} (the gradient's norm is {norm:.3f}): after one SGD step (lr {lr}) {name} should be "
            f"p - lr * g * min(1, clip_norm / ||g||); the largest difference is "
            f"{float((p.detach() - expected).abs().max()):.3g}. Check the order: optimizer.zero_grad() (old gradients "
            "must not add up), backward(), clip_grad_norm_(model.parameters(), clip_norm), optimizer.step()"
        )


def assert_autocast_step(train_step, batch: dict) -> None:
    """With amp_dtype=torch.bfloat16 the loss is that of the forward pass under autocast, computed in float32; without
    amp_dtype, the float32 loss. Weights that are multiples of 1/8 make every float32 product exact, and logits near
    256 keep no fraction in bfloat16, so the two losses differ by a known amount."""
    gen = torch.Generator().manual_seed(2)
    model = BagOfWordsTranslator(10, 4)
    with torch.no_grad():
        model.embedding.weight.copy_(torch.randint(-8, 9, (10, 4), generator=gen) / 8)
        model.out.weight.copy_(torch.randint(-8, 9, (10, 4), generator=gen) / 4)
        model.out.bias.copy_(256 + torch.randint(0, 8, (10,), generator=gen) / 8)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            bf16_logits = model(batch["src"], batch["lengths"], batch["tgt_in"])
        fp32_loss = float(toy_loss(model, batch))
        bf16_loss = float(
            F.cross_entropy(bf16_logits.float().reshape(-1, 10), batch["tgt_out"].reshape(-1), ignore_index=0)
        )
    loss = train_step(model, batch, torch.optim.SGD(model.parameters(), lr=0.0), 0, amp_dtype=torch.bfloat16)
    if abs(loss - bf16_loss) < 0.05:
        hint = (
            "That is the bfloat16 forward pass, but a loss rounded to bfloat16: compute "
            "masked_cross_entropy(logits.float(), ...) outside the autocast block"
        )
    else:
        hint = (
            "Run the forward pass inside torch.autocast(device_type=device.type, dtype=amp_dtype, "
            "enabled=amp_dtype is not None), device.type taken from the model's parameters"
        )
    assert abs(loss - bf16_loss) < 1e-3, (
        f"with amp_dtype=torch.bfloat16 the loss should be {bf16_loss:.4f}: the forward pass under "
        f"torch.autocast(device_type='cpu', dtype=torch.bfloat16), then the loss of its logits in float32 (in float32 "
        f"throughout it is {fp32_loss:.4f}); got {loss:.4f}. {hint}"
    )
    loss = train_step(model, batch, torch.optim.SGD(model.parameters(), lr=0.0), 0)
    assert abs(loss - fp32_loss) < 1e-5, (
        f"without amp_dtype the forward pass runs in float32 (loss {fp32_loss:.5f}), got {loss:.5f}: is autocast "
        "still on from the call before?"
    )


def assert_step_on_the_models_device(train_step, batch: dict) -> None:
    """On an imagined machine with one GPU (torch.cuda.is_available() True, device_count() 1) and the model on its
    CPU, the step runs where the model's parameters are and returns the loss."""
    model = BagOfWordsTranslator(10, 4)
    with torch.no_grad():
        expected = float(toy_loss(model, batch))
    with simulated_machine(cuda_devices=1):
        try:
            loss = train_step(model, batch, torch.optim.SGD(model.parameters(), lr=0.0), 0)
        except NotImplementedError:
            raise
        except Exception as error:
            raise AssertionError(
                "on an imagined machine where torch.cuda.is_available() is True but the model is on the CPU, "
                f"train_step failed ({type(error).__name__}: {error}): take the device from the model's parameters, "
                "next(model.parameters()).device, and move the batch there, not to 'cuda' because a GPU exists"
            ) from None
    assert isinstance(loss, float) and abs(loss - expected) < 1e-5, (
        f"with the model on the CPU of a machine with a GPU, train_step should return the loss {expected:.5f}, "
        f"got {loss!r}"
    )
