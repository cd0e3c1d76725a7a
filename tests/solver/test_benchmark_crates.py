"""The crate benchmark's drop survey (benchmarks/crates.py --drops): its seed list, its frame
from which every crate stays asleep, and a small survey run through the solver."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import crates  # noqa: E402


def test_drops_parse_ranges_and_lists():
    assert crates._drops("1-3,7") == [1, 2, 3, 7]
    assert crates._drops("5") == [5]
    with pytest.raises(ValueError, match="no drop"):
        crates._drops("5-3")


def test_all_asleep_from_is_the_frame_after_the_last_awake_one():
    assert crates.all_asleep_from(np.array([4, 4, 4]), 4) == 1
    assert crates.all_asleep_from(np.array([0, 4, 4]), 4) == 2
    assert crates.all_asleep_from(np.array([4, 3, 4, 4]), 4) == 3     # woke, slept again
    assert crates.all_asleep_from(np.array([4, 4, 3]), 4) is None      # awake at the end


def test_a_small_survey_reports_each_drop_and_the_means(capsys):
    # four crates of one layer dropped 0.3 m: at rest and asleep well within 3 s
    crates.main(["--drops", "1-2", "--count", "4", "--frames", "72"])
    out = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in out if line.split()[:1] in (["1"], ["2"])]
    assert len(rows) == 2
    for row in rows:
        resting, asleep, start = int(row[2]), int(row[3]), row[5]
        assert resting == asleep == 4
        assert start != "never" and 1 < int(start) <= 72
    assert "every crate asleep by frame 72 in 2 of 2 drops" in out[-1]
