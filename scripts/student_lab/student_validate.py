"""Validate in the student's own JupyterLab: nbgrader's, with messages that say what is left to do.

nbgrader's Validate reports an empty written answer as "You did not provide a response.", below
the placeholder text of the cell, without saying which question it is, or that every code
exercise passes its visible tests. This Jupyter Server extension serves Validate's two URLs
(nbgrader's own handlers, subclassed) with :class:`StudentValidator`, nbgrader's ``Validator``
whose messages for unanswered written questions name the question and, when nothing else
failed, say that the code passes. Everything else (running the notebook, checksums, the
dialog) is nbgrader's. jupyter_server_config.py switches nbgrader's own Validate extension off
and this one on.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path

from jupyter_server.utils import url_path_join
from nbconvert.filters import ansi2html
from nbgrader.nbgraderformat import SchemaTooNewError, SchemaTooOldError
from nbgrader.server_extensions.validate_assignment.handlers import NbGraderVersionHandler, ValidateAssignmentHandler
from nbgrader.validator import Validator
from tornado import web


def question_title(cells, index: int) -> str:
    """The heading of the question cell just above cell ``index`` ("Written question 1.1: the 1:1 tagger")."""
    for cell in reversed(cells[:index]):
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("#"):
            heading = cell.source.lstrip().splitlines()[0].lstrip("#").strip()
            return re.sub(r"\s*\(\d+(?:\.\d+)? points?\)$", "", heading)
    return "a written question"


class StudentValidator(Validator):
    """nbgrader's Validator; unanswered written questions are named, and the code's state said."""

    def _get_failed_cells(self, nb):
        failed = super()._get_failed_cells(nb)
        self._written = {
            id(cell): question_title(nb.cells, nb.cells.index(cell)) for cell in failed if cell.cell_type == "markdown"
        }
        self._failed = failed
        return failed

    def validate(self, filename):
        self._failed, self._written = [], {}
        results = super().validate(filename)
        entries = results.get("failed")
        if not entries or len(entries) != len(self._failed):
            return results
        only_written = all(id(cell) in self._written for cell in self._failed)
        first = True
        for entry, cell in zip(entries, self._failed):
            if id(cell) not in self._written:
                continue
            message = (
                f"{self._written[id(cell)]} has no answer yet: write yours in this cell, in place of the text "
                "shown above. Validate cannot check written answers; your instructor grades them."
            )
            if only_written and first:
                message = "Your code passes every visible test; only written answers are missing.\n\n" + message
            first = False
            entry["raw_error"] = message
            entry["error"] = ansi2html(message)
        return results


class StudentValidateHandler(ValidateAssignmentHandler):
    """nbgrader's handler, validating with :class:`StudentValidator`."""

    def validate_notebook(self, path):
        root = Path(self.root_dir).resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise web.HTTPError(403, "Access denied: path outside allowed directory")
        try:
            result = StudentValidator(config=self.load_config()).validate(str(target))
        except (SchemaTooOldError, SchemaTooNewError):
            return super().validate_notebook(path)  # nbgrader's own advice for old or new metadata
        except Exception:
            self.log.error(traceback.format_exc())
            return {"success": False, "value": traceback.format_exc()}
        return {"success": True, "value": result}


def _load_jupyter_server_extension(serverapp):
    web_app = serverapp.web_app
    web_app.settings["root_dir"] = serverapp.root_dir
    base_url = web_app.settings["base_url"]
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base_url, "/assignments/validate"), StudentValidateHandler),
            (url_path_join(base_url, "/nbgrader_version"), NbGraderVersionHandler),
        ],
    )


def _jupyter_server_extension_points():
    return [{"module": "student_validate"}]
