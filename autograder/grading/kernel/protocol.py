"""What both sides of the call protocol must agree on (standard library only; no partner: both use it).

The grader imports this module; startup.py sends its source into the student's kernel,
where the agent's modules (this package) use the same functions. So the formats below exist once:

- a request: ``{"op", "args", "grad", "devices", "rng", "rng_known", "release"}``, pickled
  by the grader (arrays and tensors as persistent ids carrying raw bytes, proxies as handle
  numbers);
- an answer: JSON, ``{"ok", "value" | "error", "mutated", "grads", "graph", "rng",
  "warnings"}``, values tagged as codec.py decodes them;
- the random states of torch, numpy and ``random`` (:func:`rng_states`), their fingerprint;
- the raw bytes of a tensor, and the order in which the tensors of a result are listed (the
  autograd bridge pairs them by position);
- torch's device queries a test may simulate.

numpy and torch are used only when the process has already imported them.
"""

import base64
import hashlib
import json
import sys

# torch's device queries a test may simulate, as paths below the torch module
DEVICE_QUERIES = ("cuda.is_available", "cuda.device_count", "backends.mps.is_available")
# a defaultdict's default factory crosses only when it is one of these builtins
DEFAULT_FACTORIES = ("int", "float", "complex", "str", "bytes", "bool", "list", "tuple", "dict", "set", "frozenset")


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def type_name(cls) -> str:
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', '?')}"


def rng_states(keys=("torch", "numpy", "random")) -> dict:
    """The global random states of torch, numpy and ``random`` (those imported), as JSON-able values."""
    states = {}
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    if "torch" in keys and torch is not None:
        states["torch"] = b64(torch.get_rng_state().numpy().tobytes())
    if "numpy" in keys and np is not None:
        name, state, pos, has_gauss, gauss = np.random.get_state()
        states["numpy"] = [b64(np.asarray(state, dtype="<u4").tobytes()), int(pos), int(has_gauss), float(gauss)]
    if "random" in keys and "random" in sys.modules:
        import array

        version, internal, gauss = sys.modules["random"].getstate()
        states["random"] = [b64(array.array("I", internal[:-1]).tobytes()), internal[-1], gauss]
    return states


def rng_fingerprint(states: dict) -> str:
    return hashlib.sha1(json.dumps(states, sort_keys=True).encode()).hexdigest()


def tensor_bytes(tensor) -> tuple[str, bytes]:
    """(dtype name, raw bytes) of a tensor's values, on the CPU."""
    torch = sys.modules["torch"]
    t = tensor.detach().cpu().resolve_conj().resolve_neg().contiguous()
    if t.dtype == torch.bfloat16:
        return "bfloat16", t.view(torch.int16).numpy().tobytes()
    return str(t.dtype).replace("torch.", ""), t.numpy().tobytes()


def tensors(value, depth=0) -> list:
    """The tensors in a result (inside tuples, lists and dict values), in a fixed order."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return [value]
    if depth < 10 and isinstance(value, (tuple, list)):
        return [t for item in value for t in tensors(item, depth + 1)]
    if depth < 10 and isinstance(value, dict):
        return [t for item in value.values() for t in tensors(item, depth + 1)]
    return []


def device_query(torch, name):
    """``(owner, attribute)`` of one of ``DEVICE_QUERIES``, e.g. ``(torch.cuda, "is_available")``."""
    owner_path, _, attribute = name.rpartition(".")
    owner = torch
    for part in owner_path.split("."):
        owner = getattr(owner, part)
    return owner, attribute
