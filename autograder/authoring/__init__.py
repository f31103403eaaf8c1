"""Authoring the course: from the instructor notebooks in ``solutions/`` to what is generated from them.

The modules::

    generate.py          chapters/ (student notebooks) with nbgrader's generate_assignment
      setup_cell.py        the setup cell nbgrader adds at the top of every student notebook
    publishing.py        where the course is published (repository, hub, version in _config.yml and
                         attention_course) and what derives from it: the release's wheel, the plan
                         .github/workflows/course.yml follows
    reference_export.py  autograder/reference/chNN_name.py from each notebook's solution cells
    execute.py           the book's outputs: the instructor notebook's one graded run (check.py's cache)
    check.py             both ways through the class grader's runner: the reference earns every
                         point, the untouched stub none (``python -m autograder check``)
    book.py              the student and instructor editions of the book (``python -m autograder book``)
      book_extension.py  the book's Sphinx extension
"""
