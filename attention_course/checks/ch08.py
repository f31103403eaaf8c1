"""Chapter 08's visible-test helpers (attention at scale): what the test cells of Exercises 8.1 to 8.4 call.

Each ``check_*`` function calls the answer it is given (the student's function or module), compares
what comes back with an independent oracle (the softmax formula with the whole score matrix in
float64, autograd through it, ``nn.MultiheadAttention``, the hand-worked rotary table), and raises
``AssertionError`` with a message that says what differs and, where the difference tells, the likely
fix. The memory and cost checks record the call with :func:`attention_course.profiling.record_ops`
(through the class grader the call runs in the student's sandbox and its record comes back; these
helpers run in the grader's process, as the test cell does). Nothing here implements an exercise.

The checks live in one module per exercise: ``ch08_tiled`` (8.1), ``ch08_backward`` (8.2),
``ch08_cache`` (8.3), ``ch08_rotary`` (8.4) and ``ch08_beam`` (8.5, imported from there), which share
``ch08_common``. This module hands on the names that the test cells of Exercises 8.1 to 8.4 import.
"""

from __future__ import annotations

from .ch08_backward import (
    check_backward,
    check_backward_memory,
    check_backward_value_errors,
    check_gradients,
    plain_gradients,
    saved_forward,
)
from .ch08_cache import (
    causal_reference,
    check_cached_keys,
    check_split,
    check_state_dict,
    check_step_cost,
    check_two_sequences,
    mha_with_biases,
)
from .ch08_common import (
    fused_attention_over_all_keys,
    raises_value_error,
)
from .ch08_rotary import (
    check_rotary_base,
    check_rotary_offsets,
    check_rotary_shapes,
    check_rotary_sign,
    check_rotary_table,
)
from .ch08_tiled import (
    check_attention_result,
    check_large_scores,
    check_tiled,
    check_tiled_memory,
    plain_attention,
)

__all__ = [
    "causal_reference",
    "check_attention_result",
    "check_backward",
    "check_backward_memory",
    "check_backward_value_errors",
    "check_cached_keys",
    "check_gradients",
    "check_large_scores",
    "check_rotary_base",
    "check_rotary_offsets",
    "check_rotary_shapes",
    "check_rotary_sign",
    "check_rotary_table",
    "check_split",
    "check_state_dict",
    "check_step_cost",
    "check_tiled",
    "check_tiled_memory",
    "check_two_sequences",
    "fused_attention_over_all_keys",
    "mha_with_biases",
    "plain_attention",
    "plain_gradients",
    "raises_value_error",
    "saved_forward",
]
