"""A small Sphinx extension for the course book (listed in _config.yml).

- sphinx-thebe adds its inline configuration script through both Sphinx's registry and the
  already initialised builder, so every page declares ``const THEBE_JS_URL`` twice, and the
  second declaration is a JavaScript error in the reader's console. This extension drops
  repeated inline scripts from each page.
- Accessibility fixes to the theme's chrome (every page is audited with axe-core by
  tests/test_browser.py): ``book_theme/templates/`` holds the course's copies of theme
  components, put ahead of the theme's own templates so that they replace them (each says
  what it changes and why), and ``book_theme/static/course.css`` is added to every page.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

THEME = Path(__file__).parent / "book_theme"


def _drop_repeated_inline_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        body = getattr(script, "attributes", {}).get("body") if not isinstance(script, str) else None
        if body is not None and body in seen:
            continue
        if body is not None:
            seen.add(body)
        kept.append(script)
    context["script_files"] = kept


def _use_course_theme_files(app, config) -> None:
    # Sphinx looks in templates_path before the theme, in order: first place wins.
    config.templates_path.insert(0, str(THEME / "templates"))
    config.html_static_path.append(str(THEME / "static"))
    # Sphinx copies static files only when it writes a page, and writes pages only when a source,
    # a template or an "html" configuration value changed: a changed stylesheet alone would never
    # reach an already built book. Its digest, as such a value, makes it rewrite them.
    digest = hashlib.sha256()
    for path in sorted(p for p in THEME.rglob("*") if p.is_file()):
        digest.update(path.relative_to(THEME).as_posix().encode() + b"\0" + path.read_bytes())
    config.course_theme_digest = digest.hexdigest()


def setup(app):
    app.add_config_value("course_theme_digest", "", "html")
    app.connect("config-inited", _use_course_theme_files)
    app.add_css_file("course.css")
    app.connect("html-page-context", _drop_repeated_inline_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
