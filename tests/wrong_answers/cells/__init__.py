"""The wrong and valid answers that rewrite an answer cell whole, one module per chapter (chNN.py), as real Python:
see tests/wrong_answers/__init__.py (``wrong``, ``valid``, ``cell_text``)."""
