"""The course's tools: authoring the course, and grading a class.

``python -m autograder --help`` lists the commands. The package has three parts::

    authoring/   from the one source to everything generated from it (generate, check, book):
                 solutions/NN/NN.ipynb -> chapters/NN/NN.ipynb (student notebooks, nbgrader)
                                       -> autograder/reference/chNN.py (reference modules)
                                       -> _build/student, _build/instructor (the two editions)
    grading/     the class grader (``grade``): sandboxed student code, tests in the grader
    reference/   GENERATED reference modules that the hidden tests import (never edit)

and what both parts share: ``course.py`` (where things live), ``conventions.py`` (the course
notebook: cell kinds, markers, regions, secret lines, and the one parsed model of a notebook
that every reader uses), ``nbgrader_course.py`` and ``nbgrader_config.py`` (the course as an
nbgrader course). Runtime state lives outside the package: the execution cache and books in
``_build/``, a class's grading in ``_grading/``.

Nothing here is imported by student notebooks; keep this module free of heavy imports.
"""
