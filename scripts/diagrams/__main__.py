"""``python -m scripts.diagrams [NAME ...] [--png FOLDER]``: redraw the diagrams (see the package's docstring)."""

from . import main

main()
