"""A small Sphinx extension for the course book (listed in _config.yml).

sphinx-thebe adds its inline configuration script through both Sphinx's registry and the
already initialised builder, so every page declares ``const THEBE_JS_URL`` twice, and the
second declaration is a JavaScript error in the reader's console. This extension drops
repeated inline scripts from each page.
"""

from __future__ import annotations


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


def setup(app):
    app.connect("html-page-context", _drop_repeated_inline_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
