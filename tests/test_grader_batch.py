"""How the class grader spreads a batch over its workers (no kernels started: the quick tier)."""

import pytest

from autograder.grading.batch import spares_ahead


@pytest.mark.parametrize("jobs, cores", [(1, 2), (2, 2), (2, 8), (3, 4)])
def test_a_worker_starts_no_more_spares_than_submissions_wait_behind_it(jobs, cores):
    """Each spare sandbox serves one later submission of the same worker: summed over the batch, the
    spares never outnumber the submissions that can take them, and the last submissions start none."""
    total = 40
    ahead = [spares_ahead(position, total, jobs, cores) for position in range(total)]
    assert all(0 <= n <= 2 for n in ahead), ahead
    assert ahead[-jobs:] == [0] * jobs, f"the last {jobs} submission(s) have nothing behind them; got {ahead[-jobs:]}"
    for position, n in enumerate(ahead):
        behind = (total - 1 - position) // jobs  # this worker's share of the submissions still queued
        assert n <= behind, f"submission {position}: {n} spares for {behind} submission(s) behind it"


def test_two_spares_only_where_the_workers_leave_a_core_free():
    """One worker on two cores keeps two sandboxes starting (a start takes longer than a grading); two
    workers on two cores keep one each (a second would only compete with grading)."""
    assert spares_ahead(0, 40, jobs=1, cores=2) == 2
    assert spares_ahead(0, 40, jobs=2, cores=2) == 1
    assert spares_ahead(0, 40, jobs=2, cores=4) == 2
    assert spares_ahead(0, 40, jobs=4, cores=4) == 1
