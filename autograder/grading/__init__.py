"""The instructor's grader: ``python -m autograder grade`` (autograder/GRADING.md explains it all).

One submission goes through::

    collect.py    submissions (folder, flat folder, zip) -> (student id, notebook bytes)
    sanitize.py   bytes -> the plan: the student's cells, repaired against solutions/, tests restored
      template.py   what the instructor notebook says a submission must contain (from conventions)
      suspicious.py patterns of code worth an instructor's look (a note, never a score)
      names.py      which names a cell defines and reads (matching cells; binding a test's names)
    runner.py     the plan -> grades: student code in the sandbox, tests here
      startup.py    a ready sandbox: the kernel started, the agent (kernel/) installed, modules imported
      sandbox.py    the kernel process: started, run, called, deadlines, output caps, killed
        jail.py       its jail: namespaces, the unprivileged user, rlimits, cgroups
      spares.py     the next submissions' sandboxes, started while one is graded (one pool per worker)
      rpc.py        the session: the test's requests to the student's kernel
        codec.py      the strict decoder of answers, the pickler of requests
        proxy.py      handles on objects that stay in the student's process
        autograd.py   the autograd bridge
        devices.py    the same devices on both sides; devices a test simulates
        recording.py  recording the student's code where it runs (attention_course.profiling)
      kernel/       the other side, sent into the student's kernel as source: each module the
                    partner of the grader-side module of the same name (kernel/__init__.py):
        rpc.py        the thin agent that dispatches each request; a call's gradient mode, random states
        codec.py      the request's unpickler, what a call changed; answers as plain data, or handles
        devices.py    the devices a test simulates, during the call
        autograd.py   the graphs kept for the grader's backward
        recording.py  the course's recording, run privately
        protocol.py   what both sides agree on (standard library only; the grader imports it too)
      state.py      the grader process's state, put back for each submission
      deadline.py   the time limit on code in the grader's main thread (also the tests' harness's)
    gradebook.py  nbgrader's gradebook and the autograded notebooks (formgrader, export)
    report.py     grades.csv, details.csv, the feedback pages
    feedback.py   what plain nbgrader's feedback must not show (a preprocessor of nbgrader_config.py)
    batch.py      the whole class, in parallel workers; cli.py, the command line
"""
