"""axe-core's accessibility audit in a page of the book, for tests/test_browser.py: the rules run (WCAG
2.0 to 2.2 at levels A and AA, and axe's best practices; in dark mode only the colour rules), the
impacts that fail, and the scripts the test evaluates in the page (mark repeated code tokens, configure
the contrast rule, run axe, wait until the theme's colour transitions have settled).

axe-core itself is npm's package, installed by scripts/setup.sh into .venv/npm and injected from there.
"""

from __future__ import annotations

from autograder import course

AXE_SCRIPT = course.ROOT / ".venv" / "npm" / "node_modules" / "axe-core" / "axe.min.js"
# WCAG 2.0, 2.1 and 2.2 at levels A and AA, and axe's best practices.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa", "best-practice"]
# The rules whose outcome depends on the colours: the only ones run again in dark mode.
AXE_COLOUR_RULES = ["color-contrast", "link-in-text-block"]
AXE_FAILING_IMPACTS = ("critical", "serious")
AXE_PASSES = (("light", {"type": "tag", "values": AXE_TAGS}), ("dark", {"type": "rule", "values": AXE_COLOUR_RULES}))
# Syntax-highlighted code is thousands of <span>s per chapter (6,855 of chapter 04's 16,012
# elements) drawn in a few dozen colour pairs, and axe's contrast check spends most of its time
# on them. A span whose chain of ancestors (tags, classes, inline styles) is the same as an
# earlier span's gets exactly the same colours on exactly the same background, so the contrast
# check reads only the first of each: the others are marked here, and the rule's selector
# (AXE_CONFIGURE) leaves them out. (axe.run's `exclude` would too, but it compares every element
# with every excluded one: slower than checking them all.)
MARK_REPEATED_CODE_TOKENS = """() => {
    const seen = new Set();
    let marked = 0;
    for (const span of document.querySelectorAll('div.highlight pre span')) {
        let key = '';
        for (let e = span; e && e !== document.body; e = e.parentElement) {
            key = `${e.tagName}.${e.getAttribute('class') || ''}[${e.getAttribute('style') || ''}]>${key}`;
        }
        if (seen.has(key)) {
            span.setAttribute('data-axe-repeat', '');
            marked++;
        } else {
            seen.add(key);
        }
    }
    return marked;
}"""
# MathJax draws its glyphs with CSS (no text nodes), which axe's contrast check cannot read: it
# finds the 6,500 elements of chapter 04's math "inapplicable", after 2 s of looking. They are left
# out of that one rule too.
AXE_CONFIGURE = """() => axe.configure({rules: [
    {id: 'color-contrast', selector: '*:not([data-axe-repeat]):not(mjx-container *)'}]})"""
RUN_AXE = """options => axe.run(document, options).then(results => results.violations.map(
    v => ({rule: v.id, impact: v.impact, help: v.help,
           nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 200)}))})))"""


# The theme's buttons fade between colours (CSS transitions of 0.15 s): after a change of mode, wait
# until no transition runs, or the contrast check would read colours half-way.
SETTLED = "() => !document.getAnimations().some(a => a instanceof CSSTransition && a.playState === 'running')"
