"""The instructor's grader: ``python -m autograder grade`` (autograder/GRADING.md explains it all).

One submission goes through::

    collect.py    submissions (folder, flat folder, zip) -> (student id, notebook bytes)
    sanitize.py   bytes -> the plan: the student's cells, repaired against solutions/, tests restored
    runner.py     the plan -> grades: student code in the sandbox, tests here
      sandbox.py    the isolated kernel (namespaces, unprivileged user, limits, deadlines)
      rpc.py        the trusted side of the calls: proxies and a strict decoder
      agent.py      the other side, sent into the student's kernel as source
    gradebook.py  nbgrader's gradebook and the autograded notebooks (formgrader, export)
    report.py     grades.csv, details.csv, the feedback pages
    batch.py      the whole class, in parallel workers; cli.py, the command line
"""
