"""The grader process's global state, put back before and after each submission.

A grading worker runs the tests of one submission after another, in its own process. A test
cell can change global state there and not put it back (it fails half-way, or it never
meant to): the default dtype, the gradient mode, the random generators, warning filters,
print options, matplotlib's rcParams, an attribute it patched on a module or a class. The
next submission must not see any of it: :class:`Baseline` records that state once and
:meth:`Baseline.restore` puts it back.
"""

from __future__ import annotations

import sys
import warnings

_MISSING = object()
# the packages whose module and class attributes a test might patch
_PATCHABLE = ("torch", "numpy", "random", "math", "warnings", "collections", "functools", "itertools",
              "operator", "matplotlib", "autograder", "attention_course", "builtins")  # fmt: skip


def _watched(name: str) -> bool:
    return name.split(".")[0] in _PATCHABLE and not name.startswith("autograder.grading")  # (not the grader itself)


def _class_dicts(module) -> dict:
    """The mutable classes a module defines, with a copy of their attributes."""
    found = {}
    for value in list(vars(module).values()):
        mutable = isinstance(value, type) and not value.__flags__ & (1 << 8)  # Py_TPFLAGS_IMMUTABLETYPE
        if mutable and vars(value).get("__module__") == module.__name__:
            found[value] = dict(vars(value))
    return found


class Baseline:
    """A snapshot of the state a test may leave behind in this process."""

    def __init__(self):
        for lazy in ("numpy.testing", "torch.testing"):  # what tests use, imported lazily otherwise
            if lazy.split(".")[0] in sys.modules:
                __import__(lazy)
        self.modules: dict = {}  # module -> copy of its attributes
        self.classes: dict = {}  # class -> copy of its attributes
        self._capture_modules()
        self.filters = list(warnings.filters)
        self.generic = _generic_state()

    def _capture_modules(self) -> None:
        for name, module in list(sys.modules.items()):
            if module is None or module in self.modules or not _watched(name):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # (deprecated names warn when looked at)
                    self.modules[module] = dict(vars(module))
                    self.classes.update(_class_dicts(module))
            except TypeError:
                continue

    def restore(self) -> None:
        for owner, saved in (*self.modules.items(), *self.classes.items()):
            current = vars(owner)
            for key, value in saved.items():
                if key.startswith("_") and not (key.startswith("__") and isinstance(owner, type)):
                    continue  # private state (caches, counters) changes by itself
                if current.get(key, _MISSING) is not value:
                    try:
                        setattr(owner, key, value)
                    except (AttributeError, TypeError):
                        continue
            for key in [k for k, v in current.items() if k not in saved and not isinstance(v, type(sys))]:
                if not key.startswith("_") or (key.startswith("__") and isinstance(owner, type)):
                    try:  # an attribute a test added (a class's own __eq__ over the inherited one)
                        delattr(owner, key)
                    except (AttributeError, TypeError):
                        continue
        warnings.filters[:] = self.filters
        warnings._filters_mutated()
        _set_generic_state(self.generic)
        self._capture_modules()  # modules imported since (by a test): their state from now on


def _generic_state() -> dict:
    state = {}
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    if torch is not None:
        state["torch"] = dict(
            dtype=torch.get_default_dtype(),
            grad=torch.is_grad_enabled(),
            rng=torch.get_rng_state(),
            deterministic=torch.are_deterministic_algorithms_enabled(),
            anomaly=torch.is_anomaly_enabled(),
            threads=torch.get_num_threads(),
            printing=dict(vars(torch._tensor_str.PRINT_OPTS)),
        )
    if np is not None:
        state["numpy"] = dict(rng=np.random.get_state(), err=np.geterr(), printing=np.get_printoptions())
    if "random" in sys.modules:
        state["random"] = sys.modules["random"].getstate()
    if "matplotlib" in sys.modules:
        state["matplotlib"] = dict(sys.modules["matplotlib"].rcParams)
    return state


def _set_generic_state(state: dict) -> None:
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    if torch is not None and "torch" in state:
        saved = state["torch"]
        torch.set_default_dtype(saved["dtype"])
        torch.set_grad_enabled(saved["grad"])
        torch.set_rng_state(saved["rng"])
        if torch.are_deterministic_algorithms_enabled() != saved["deterministic"]:  # (costly: imports inductor)
            torch.use_deterministic_algorithms(saved["deterministic"])
        if torch.is_anomaly_enabled() != saved["anomaly"]:
            torch.autograd.set_detect_anomaly(saved["anomaly"])
        if torch.get_num_threads() != saved["threads"]:
            torch.set_num_threads(saved["threads"])
        vars(torch._tensor_str.PRINT_OPTS).update(saved["printing"])
    if np is not None and "numpy" in state:
        saved = state["numpy"]
        np.random.set_state(saved["rng"])
        np.seterr(**saved["err"])
        np.set_printoptions(**saved["printing"])
    if "random" in state:
        sys.modules["random"].setstate(state["random"])
    if "matplotlib" in sys.modules:
        matplotlib = sys.modules["matplotlib"]
        if "matplotlib" in state:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                matplotlib.rcParams.update(state["matplotlib"])
        else:
            matplotlib.rcdefaults()
        state.setdefault("matplotlib", dict(matplotlib.rcParams))


_BASELINE: Baseline | None = None


def baseline() -> Baseline:
    """This process's baseline, recorded the first time it is asked for."""
    global _BASELINE
    if _BASELINE is None:
        _BASELINE = Baseline()
    return _BASELINE
