"""Reference implementations imported by the hidden tests.

Each ``chNN_name.py`` here is GENERATED from ``solutions/NN_name/NN_name.ipynb`` by
``python -m autograder generate`` (see ``autograder/authoring/reference_export.py``). Students never
receive this folder.
"""
