"""The code sent into the student's kernel: the grader's agent, as source (startup.py installs it).

Each module here is the kernel's side of a grader-side module of the same name one folder up:

    in the grader (grading/)                      in the kernel (grading/kernel/)
    rpc.py        the session, its requests     <->  rpc.py        the agent: each request dispatched
    codec.py      requests out, answers in      <->  codec.py      requests in, answers out
    devices.py    the devices a test simulates  <->  devices.py    those answers, for a call's length
    autograd.py   the autograd bridge           <->  autograd.py   graphs kept for the grader's backward
    recording.py  the record's strict decoder   <->  recording.py  the course's recording, run here
    (both sides)                                     protocol.py   what both agree on (standard library)
    (kernel only)                                    forks.py      a forked copy of the kernel ends

In the kernel, ``autograder`` cannot be imported: startup.py makes each module from its file's source,
with the modules before it in ``MODULES`` among its globals. In the grader (its own tests, the
one-process mode), they are ordinary modules of this package.
"""

# the kernel-side modules, in the order startup.py installs them (each may use those before it)
MODULES = ("protocol", "forks", "codec", "devices", "autograd", "recording", "rpc")
