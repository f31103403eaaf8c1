"""A forked copy of the student's kernel ends instead of coming back to IPython (kernel side only).

A cell that forks (``os.fork()``, on purpose or in a fork bomb) leaves copies of the kernel behind:
each one returns from the fork into the cell, then into IPython, where it prints its traceback on the
parent's channels and waits forever. Until the sandbox closes they hold the processes its limit
allows, and how long the cell takes to fail depended on the machine's load (a fork bomb's grade with
it: its cell could run past the call limit on a busy worker).

:func:`install` makes every copy made after it end once its code is done: at the end of the cell
(IPython's ``post_run_cell`` event), at its traceback, or when it would answer one of the grader's
requests (:func:`is_copy`, checked by the agent). A child that execs another program, or that
``multiprocessing`` runs and ends itself, is not concerned.
"""

import os

_PARENT = [os.getpid()]  # the kernel's own pid (install sets it)


def is_copy() -> bool:
    """True in a process forked from the kernel after :func:`install`."""
    return os.getpid() != _PARENT[0]


def end_copy(*args, **kwargs):
    os._exit(0)


def install(ip) -> None:
    """Register, in the kernel whose IPython shell is ``ip``, the hook that ends its forked copies."""
    _PARENT[0] = os.getpid()

    def in_child():
        ip.showtraceback = lambda *args, **kwargs: os._exit(1)
        ip.events.register("post_run_cell", end_copy)

    os.register_at_fork(after_in_child=in_child)
