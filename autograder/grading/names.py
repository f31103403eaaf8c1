"""Name analysis of cell sources: which names a cell defines, reads, and reads before defining them.

The grader needs it twice: to match a submission's cells to the template by the exercise they
define (:mod:`autograder.grading.sanitize`), and, while grading, to bind to a test cell exactly the
names it reads from the student's namespace (:mod:`autograder.grading.runner`); the wrong-answer
harness of the tests binds names the same way. IPython's magics and shell escapes are blanked
before parsing; a source that does not parse defines and reads nothing.
"""

from __future__ import annotations

import ast
import builtins
import functools


def _python(source: str) -> str:
    """Cell source as plain Python (IPython magics turned into calls), for parsing only."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:
        return source


@functools.lru_cache(maxsize=4096)
def defined_names(source: str) -> frozenset[str]:
    """Top-level functions and classes a cell defines (empty when it does not parse)."""
    try:
        tree = ast.parse(_python(source))
    except (SyntaxError, ValueError):
        return frozenset()
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return frozenset(node.name for node in tree.body if isinstance(node, kinds))


@functools.lru_cache(maxsize=4096)
def loaded_names(source: str) -> frozenset[str]:
    """Every name a cell reads (including inside functions it defines), minus Python's builtins."""
    try:
        tree = ast.parse(_python(source))
    except (SyntaxError, ValueError):
        return frozenset()
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return frozenset(names - set(dir(builtins)))


def _other_binds(nodes) -> set[str]:
    """Names bound inside ``nodes`` by something other than an assignment target, a definition or a
    parameter: ``except E as name`` and ``import m as name`` (neither is an ``ast.Name``)."""
    found = set()
    for node in (n for child in nodes for n in ast.walk(child)):
        if isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    return found


class _FreeReads(ast.NodeVisitor):
    """Walks a cell's top level in execution order: the names it reads before it binds them.

    Statements are visited in order and each one's right-hand side before its targets, so
    ``got = f(H)`` reads ``f`` and ``H`` and binds ``got``. The body of a function, lambda,
    class or comprehension reads, at the time it runs, what it does not bind itself and the
    cell does not bind anywhere at its top level.
    """

    def __init__(self, cell_binds: set[str]):
        self.bound: set[str] = set()
        self.free: set[str] = set()
        self.cell_binds = cell_binds

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            if node.id not in self.bound:
                self.free.add(node.id)
        else:
            self.bound.add(node.id)

    def visit_Assign(self, node):
        self.visit(node.value)
        for target in node.targets:
            self.visit(target)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_AugAssign(self, node):
        self.visit(node.value)
        if isinstance(node.target, ast.Name) and node.target.id not in self.bound:
            self.free.add(node.target.id)
        self.visit(node.target)

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self.visit(node.target)

    def visit_For(self, node):
        self.visit(node.iter)
        self.visit(node.target)
        for statement in (*node.body, *node.orelse):
            self.visit(statement)

    visit_AsyncFor = visit_For

    def visit_Import(self, node):
        for alias in node.names:
            self.bound.add(alias.asname or alias.name.split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node):
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self.bound.add(node.name)
        for statement in node.body:
            self.visit(statement)

    def _scope(self, node, body, parameters=()):
        """A nested scope: what it reads that neither it nor the cell binds."""
        inner = {n.id for child in body for n in ast.walk(child) if isinstance(n, ast.Name)
                 and not isinstance(n.ctx, ast.Load)}  # fmt: skip
        inner |= {n.name for child in body for n in ast.walk(child)
                  if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}  # fmt: skip
        inner |= {n.arg for child in body for n in ast.walk(child) if isinstance(n, ast.arg)}
        inner |= _other_binds(body)
        inner |= set(parameters)
        reads = {n.id for child in body for n in ast.walk(child) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load)}  # fmt: skip
        self.free |= reads - inner - self.cell_binds - self.bound

    def _arguments(self, args):
        for default in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
            self.visit(default)
        return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a]

    def visit_FunctionDef(self, node):
        for decorator in node.decorator_list:
            self.visit(decorator)
        parameters = self._arguments(node.args)
        self.bound.add(node.name)
        self._scope(node, node.body, parameters)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self._scope(node, [node.body], self._arguments(node.args))

    def visit_ClassDef(self, node):
        for expression in (*node.decorator_list, *node.bases, *(k.value for k in node.keywords)):
            self.visit(expression)
        self.bound.add(node.name)
        self._scope(node, node.body)

    def _comprehension(self, node):
        first, *rest = node.generators
        self.visit(first.iter)  # evaluated where the comprehension stands
        body = [g.target for g in node.generators] + [g.iter for g in rest]
        body += [c for g in node.generators for c in g.ifs]
        body += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        self._scope(node, [ast.Expr(b) for b in body])

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension


def free_names(source: str) -> frozenset[str]:
    """The names a cell reads without defining them first (minus Python's builtins).

    Only these can come from the student's namespace: a name the test assigns before it
    reads it is the test's own (``got = f(H)`` reads ``f`` and ``H``, never the student's
    ``got``). A cell that does not parse reads nothing.
    """
    try:
        tree = ast.parse(_python(source))
    except (SyntaxError, ValueError):
        return frozenset()
    cell_binds = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    cell_binds |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    cell_binds |= _other_binds([tree])
    visitor = _FreeReads(cell_binds)
    for statement in tree.body:
        visitor.visit(statement)
    return frozenset(visitor.free - set(dir(builtins)))


def import_statements(source: str) -> list[tuple[str, set[str]]]:
    """The top-level import statements of a cell, with the names each binds."""
    try:
        tree = ast.parse(_python(source))
    except (SyntaxError, ValueError):
        return []
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            bound = {alias.asname or alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not any(alias.name == "*" for alias in node.names):
            bound = {alias.asname or alias.name for alias in node.names}
        else:
            continue
        found.append((ast.unparse(node), bound))
    return found
