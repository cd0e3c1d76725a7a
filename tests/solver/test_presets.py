"""Every shipped material preset loads and drives a stable simulation of its kind."""

import json

import numpy as np
import pytest

from solver import Builder, Simulation
from solver.presets import load_presets

REQUIRED = {"cotton", "silk", "denim", "leather", "rubber_sheet", "grass", "branch", "jelly", "wood"}


def test_required_presets_present():
    assert REQUIRED <= set(load_presets())


def _sheet(n=8, size=0.5):
    u, v = np.meshgrid(np.linspace(0, size, n), np.linspace(0, size, n))
    x = np.column_stack([u.ravel(), v.ravel(), np.full(n * n, 1.0)])   # horizontal
    idx = np.arange(n * n).reshape(n, n)
    return x, np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1, 4)


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_preset_simulates(name):
    """A hanging sheet (surfaces) or a dropped cube (bodies) stays finite and where physics
    puts it: the sheet hangs below its pins, the body rests on the ground."""
    p = load_presets()[name]
    b = Builder()
    if p["kind"] in ("CLOTH", "PLANT"):
        x, f = _sheet()
        ids = b.add_cloth(x, f, density=p["density"], stretch_compliance=p["stretch_compliance"],
                          shear_compliance=p["shear_compliance"], bend_compliance=p["bend_compliance"])
        b.pin(ids[np.isclose(x[:, 0], 0.0)])                  # one edge held
    else:
        g = np.linspace(-0.1, 0.1, 3)
        x = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3) + [0, 0, 0.5]
        ids = b.add_particles(x, mass=p["density"] * 0.008 / len(x))
        b.add_shape_match(ids, stiffness=p["stiffness"])
    b.add_collider("plane", friction=p["friction"], restitution=p.get("restitution", 0.0))
    sim = Simulation(b.build(), damping=p["damping"], air_drag=p.get("air_drag", 0.0),
                     substeps=10)
    for _ in range(24):
        sim.step(1 / 24)
    assert np.all(np.isfinite(sim.x))
    if p["kind"] in ("CLOTH", "PLANT"):
        assert sim.x[:, 2].min() < 1.0 - 0.2                 # it swung down under gravity
    else:
        assert abs(sim.x[:, 2].min()) < 2e-3                 # resting on the ground


def test_bad_preset_file_is_named(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"x": {"kind": "CLOTH", "density": -1}}))
    with pytest.raises(ValueError, match="preset 'x'.*density"):
        load_presets(str(bad))
    bad.write_text(json.dumps({"y": {"kind": "GAS"}}))
    with pytest.raises(ValueError, match="preset 'y'.*kind"):
        load_presets(str(bad))
