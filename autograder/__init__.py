"""The course's build and grading tools.

``python -m autograder --help`` lists the commands. The flow is::

    solutions/NN/NN.ipynb  (instructor notebook: the one source of every solution and test)
        -> chapters/NN/NN.ipynb               (student notebook, by nbgrader's generate_assignment)
        -> autograder/reference/chNN.py       (reference module the hidden tests import)
        -> _build/student, _build/instructor  (the two editions of the book)

Nothing here is imported by student notebooks; keep this module free of heavy imports.
"""
