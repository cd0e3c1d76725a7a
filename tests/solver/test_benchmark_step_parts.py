"""benchmarks/step_parts.py: each variant of the replay leaves out the family it names (the
argument groups' layouts are read by position, so a layout that moves must fail here, not
print a figure for the wrong work)."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import step_parts  # noqa: E402


def _taken(scene, size, frames):
    sim, _ = step_parts.build(scene, size)
    for _ in range(frames):
        sim.step(1.0 / step_parts.FPS)
    spent, calls, total, args, rounds = step_parts.timed_step(sim)
    assert args is not None and calls["run_substeps"] == rounds >= 1
    assert total >= sum(spent.values()) > 0
    return sim, dict(step_parts.variants(args))


def test_the_crates_without_their_ground_contacts_sink():
    # four crates of one layer, landed on the ground by frame 6 and awake until frame 20
    sim, v = _taken("crates", 4, 12)
    assert set(v) == {"as it is", "without the rigid solve",
                      "  without its contacts between bodies",
                      "  without its collider candidates"}
    low = {k: step_parts.positions_after(sim, a)[:, 2].min() for k, a in v.items()}
    assert low["as it is"] > -1e-3
    # nothing holds them up over the step: they fall g dt^2 / 2 at least in part
    assert low["  without its collider candidates"] < low["as it is"] - 1e-3
    assert low["without the rigid solve"] < low["as it is"] - 1e-3


def test_the_folded_cloth_without_its_body_contacts_moves_otherwise():
    sim, v = _taken("fold", 16, 10)
    assert "without the body contacts" in v
    same = step_parts.positions_after(sim, v["as it is"])
    assert np.array_equal(same, step_parts.positions_after(sim, v["as it is"]))   # a replay
    apart = step_parts.positions_after(sim, v["without the body contacts"])
    assert np.abs(apart - same).max() > 1e-6


def test_the_script_prints_the_step_and_its_replays(capsys):
    step_parts.main(["crates", "--size", "4", "--frame", "2", "--repeat", "1"])
    out = capsys.readouterr().out
    assert "4 crates: the step after frame 2" in out
    assert "run_substeps" in out and "Python (the rest)" in out
    assert "as it is" in out
