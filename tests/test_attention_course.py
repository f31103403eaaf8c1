"""Unit tests of the student-facing package (not an exercise, so tested here directly)."""

from __future__ import annotations

import ast

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import attention_course  # noqa: E402
from attention_course import BOS_ID, EOS_ID, PAD_ID, copy_task, reversal_task, token_vocabulary  # noqa: E402
from attention_course.plotting import ATTENTION_CMAP, plot_matrices  # noqa: E402
from autograder import conventions, course  # noqa: E402


def test_special_ids_are_distinct_and_first():
    assert sorted({PAD_ID, BOS_ID, EOS_ID}) == [0, 1, 2]


def test_token_vocabulary_names_every_id_once():
    names = token_vocabulary(3 + 30)
    assert names[:5] == ["<pad>", "<bos>", "<eos>", "a", "b"]
    assert names[3 + 25] == "z" and names[3 + 26] == "aa"
    assert len(set(names)) == len(names) == 33
    with pytest.raises(ValueError):
        token_vocabulary(3)


@pytest.mark.parametrize("task", [copy_task, reversal_task])
def test_tasks_are_deterministic_and_in_range(task):
    pairs = task(200, 4, 9, vocab_size=12, seed=5)
    assert pairs == task(200, 4, 9, vocab_size=12, seed=5)
    assert pairs != task(200, 4, 9, vocab_size=12, seed=6)
    lengths = {len(src) for src, _ in pairs}
    assert lengths == set(range(4, 10)), f"lengths should cover 4..9, got {sorted(lengths)}"
    tokens = {t for src, tgt in pairs for t in src + tgt}
    assert min(tokens) >= 3 and max(tokens) < 12, "content tokens must avoid the special ids"


def test_copy_and_reversal_targets():
    for (src, tgt), (rsrc, rtgt) in zip(copy_task(20, 1, 6, 10, seed=1), reversal_task(20, 1, 6, 10, seed=1)):
        assert tgt == src and src is not tgt
        assert rsrc == src and rtgt == list(reversed(src))


@pytest.mark.parametrize("bad", [dict(min_len=0, max_len=3), dict(min_len=5, max_len=4)])
def test_tasks_reject_bad_lengths(bad):
    with pytest.raises(ValueError):
        copy_task(3, vocab_size=10, **bad)


def test_plot_matrices_draws_each_matrix_with_labels():
    first = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    second = first[::-1]
    figure, axes = plot_matrices([first, second], titles=["a", "b"], row_labels=["x", "y", "z"], col_labels=["p", "q"])
    assert len(axes) == 2
    for ax, matrix, title in zip(axes, [first, second], ["a", "b"]):
        image = ax.get_images()[0]
        np.testing.assert_array_equal(image.get_array(), matrix)
        assert image.get_cmap().name == ATTENTION_CMAP
        assert ax.get_title() == title
        assert [t.get_text() for t in ax.get_xticklabels()] == ["p", "q"]
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["x", "y", "z"]
    assert axes[0].get_ylim()[0] > axes[0].get_ylim()[1], "row 0 must be drawn at the top"
    matplotlib.pyplot.close(figure)


def test_plot_matrices_rejects_bad_input():
    with pytest.raises(ValueError):
        plot_matrices([np.zeros(3)])
    with pytest.raises(ValueError):
        plot_matrices([np.zeros((2, 2))], titles=["one", "two"])


def _graded_names() -> set[str]:
    names = set()
    for assignment in course.assignments():
        for cell in conventions.instructor(assignment).answers.values():
            tree = ast.parse(cell.source)
            names |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return names


def test_package_implements_no_graded_function():
    """The package students receive must not contain any exercise's implementation."""
    graded = _graded_names()
    assert graded, "found no exercises to compare with"
    defined = set()
    for path in (course.ROOT / "attention_course").rglob("*.py"):
        tree = ast.parse(path.read_text())
        defined |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert not defined & graded, f"attention_course defines graded functions: {sorted(defined & graded)}"
    assert set(attention_course.__all__) <= set(dir(attention_course))
