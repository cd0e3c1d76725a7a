"""benchmarks/step_parts.py: each variant of the replay leaves out the family it names (the
argument groups' layouts are read by position, so a layout that moves must fail here, not
print a figure for the wrong work)."""

import os
import re
import sys

import numpy as np
import pytest

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


def test_the_ragdolls_without_their_joints_move_otherwise():
    sim, v = _taken("ragdolls", 1, 6)
    assert "without the joints" in v
    same = step_parts.positions_after(sim, v["as it is"])
    apart = step_parts.positions_after(sim, v["without the joints"])
    assert np.abs(apart - same).max() > 1e-6


def _ms(line):
    return float(re.search(r"(-?[0-9.]+) ms", line).group(1))


def test_the_script_prints_the_step_its_kernels_and_its_replays(capsys):
    step_parts.main(["crates", "--size", "4", "--frame", "8", "--repeat", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("4 crates: the step after frame 8 (32 particles")
    step = _ms(next(x for x in lines if "the step " in x and "ms, of which" in x))
    parts = [_ms(x) for x in lines if "calls)" in x or "Python (the rest)" in x]
    assert any("run_substeps" in x for x in lines)
    assert sum(parts) == pytest.approx(step, abs=0.05)     # the step's parts add up to it
    replays = [x for x in lines if x.strip().startswith(("as it is", "without", "  without"))]
    assert replays[0].strip().startswith("as it is")
    assert len(replays) == 4 and all(_ms(x) > 0 for x in replays)
