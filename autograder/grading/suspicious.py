"""Patterns of code a submission should not need (flag ``suspicious_code``).

A match is a note for the instructor in the submission's record and the class report; it never
changes a score, and the sandbox (BOUNDARY.md) does not rely on it: these are the things worth a
human look (process control, native code, the network, patching the interpreter, the grader's own
names, switching off chapter 08's recording of operations). :func:`sanitize.prepare` checks every
code cell of a submission that is not a cell every student received as it is.
"""

from __future__ import annotations

import re

SUSPICIOUS = {
    "process control": r"\bos\s*\.\s*(_exit|fork|kill|system|exec\w*|spawn\w*|setuid)\b|\bsys\s*\.\s*exit\b",
    "native code": r"\bctypes\b|\bcffi\b",
    "subprocesses": r"\bsubprocess\b|\bmultiprocessing\b|\bpty\b",
    "network": r"\bsocket\b|\burllib\b|\brequests\b|\bhttp\.client\b",
    "signals": r"\bsignal\s*\.\s*(signal|alarm|setitimer)\b",
    "patching the interpreter": r"\bbuiltins\b|__builtins__|\b(sys|threading)\s*\.\s*"
    r"(modules|settrace|setprofile|meta_path)\b|\bgc\s*\.\s*(get_objects|get_referrers|get_referents)\b",
    "patching test helpers": r"\b(np|numpy|torch)\s*\.\s*testing\s*\.\s*\w+\s*=|\bsetattr\s*\(\s*(np|numpy|torch)\b",
    "IPython internals": r"\bget_ipython\s*\(\s*\)\s*\.\s*(events|ast_transformers|run_cell|set_custom_exc|user_ns)",
    "grader files": r"\bsolutions\b|\bautograder\b|gradebook",
    "dynamic code": r"(?<![.\w])(exec|eval|compile)\s*\(|__import__\s*\(",
    # what would switch off or fool the recording of chapter 08's tests (attention_course.profiling)
    "switching off the recording": r"\b(_DisableTorchDispatch|DisableTorchFunction\w*|no_dispatch"
    r"|_disable_current_modes|_pop_mode\w*|_push_mode|_python_dispatch|_mode_utils|_unset_dispatch_mode|\w*_torch_(dispatch|function)_stack"
    r"|_get_(dispatch|function)_stack_at|_get_current_(dispatch|function)_mode\w*|_ExcludeDispatchKeyGuard"
    r"|_IncludeDispatchKeyGuard|_dispatch_tls_\w+|_op_dk|redispatch|_unsafe_set_version_counter|_tensor_str"
    r"|TorchDispatchMode|TorchFunctionMode|__torch_dispatch__|__torch_function__)\b",
    "patching the recording": r"\bprofiling\s*\.\s*\w+\s*=(?!=)|\bsetattr\s*\(\s*profiling\b"
    r"|\b(record_ops|largest_created|matmuls|matmul_flops|active_recording|Recording)\s*=(?!=)",
    "the grader's agent": r"__autograder__|\b_autograder_\w+",
}


def suspicious(source: str) -> list[str]:
    """What ``source`` looks like it tries (the keys of :data:`SUSPICIOUS`), in the table's order."""
    return [what for what, pattern in SUSPICIOUS.items() if re.search(pattern, source)]
