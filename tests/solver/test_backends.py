"""The compiled (Numba) and NumPy backends agree bit for bit.

Every kernel that exists in both backends performs the same floating-point operations in the
same order (solver/kernels/compiled.py, kernels/compiled_contact.py), so positions after 60
frames must be identical, not merely close, on every scenario here. The rest of the solver
suite also runs once per backend (scripts/test.sh runs tests/solver with VERLET_BACKEND=numpy
after the default run, leaving this file out: it names both backends itself, whatever
VERLET_BACKEND says).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from solver import Simulation, backend


from backend_scenarios import (  # noqa: E402  (tests/solver is on the path)
    cloth_on_sphere_in_wind,
    pinned_cloth_speed_clamp,
    ropes_and_limits,
    bodies_on_a_ramp,
    balloon_and_moving_collider,
    cloth_on_elliptic_colliders,
    moving_elliptic_colliders,
    tetra_bodies_on_colliders,
    damped_soft_bodies_and_odd_clusters,
    started_inside_colliders,
    soft_pinned_cloth,
    tree_of_strands_in_wind,
    animated_settings,
    fast_particles_plates_and_sleep,
    contact_between_bodies,
    pile_of_boxes,
    bouncy_boxes,
    ragdoll_on_stairs,
    cloth_and_bodies_on_deforming_meshes)


SCENARIOS = [ragdoll_on_stairs, pile_of_boxes, bouncy_boxes, cloth_and_bodies_on_deforming_meshes,
             fast_particles_plates_and_sleep, contact_between_bodies,
             animated_settings, started_inside_colliders, soft_pinned_cloth,
             tree_of_strands_in_wind, cloth_on_sphere_in_wind, pinned_cloth_speed_clamp,
             ropes_and_limits, bodies_on_a_ramp,
             balloon_and_moving_collider, cloth_on_elliptic_colliders, moving_elliptic_colliders,
             tetra_bodies_on_colliders, damped_soft_bodies_and_odd_clusters]


def _run(build, name):
    b, kw, control = build()
    sim = Simulation(b.build(), backend=name, **kw)
    assert sim.backend == name
    for frame in range(60):
        if control is not None:
            control(sim)
        sim.step(1 / 24)
    return np.array(sim.x)


def test_numba_kernels_load():
    assert backend.numba_kernels() is not None, backend.load_error()


@pytest.mark.parametrize("build", SCENARIOS, ids=lambda f: f.__name__)
def test_backends_bit_identical(build):
    a = _run(build, "numpy")
    b = _run(build, "numba")
    assert np.all(np.isfinite(a))
    assert np.array_equal(a, b), f"largest difference {np.abs(a - b).max():.3e} m"


def test_backend_choice(monkeypatch):
    monkeypatch.setenv("VERLET_BACKEND", "numpy")
    assert backend.choose() == "numpy"
    monkeypatch.setenv("VERLET_BACKEND", "numba")
    assert backend.choose() == "numba"
    monkeypatch.setenv("VERLET_BACKEND", "cuda")
    with pytest.raises(ValueError, match="VERLET_BACKEND"):
        backend.choose()
    monkeypatch.delenv("VERLET_BACKEND")
    assert backend.choose() == "numba"           # the fastest available by default


@pytest.mark.parametrize("build", [cloth_on_sphere_in_wind, contact_between_bodies,
                                   ragdoll_on_stairs, bodies_on_a_ramp, pile_of_boxes,
                                   bouncy_boxes],
                         ids=lambda f: f.__name__)
def test_thread_count_does_not_change_results(build):
    """Parallel loops only run over items that touch disjoint particles (or, for the rigid
    bodies' collider contacts, disjoint bodies), so one thread and all cores give the same bits;
    configure(threads=...) sets the count the kernels use."""
    import numba
    backend.numba_kernels()                  # configure applies the count to loaded kernels
    top = numba.config.NUMBA_NUM_THREADS
    try:
        backend.configure(threads=1)
        assert numba.get_num_threads() == 1
        one = _run(build, "numba")
        backend.configure(threads=top)
        assert numba.get_num_threads() == top
        many = _run(build, "numba")
    finally:
        backend.configure(threads=0)          # back to the default: VERLET_THREADS or all cores
    assert np.array_equal(one, many)


def test_cold_compile_cache_is_per_import_name(tmp_path):
    """Kernels compile into the configured cache folder, in a subfolder per import name (the
    solver is imported as "solver" here and as "<extension>.solver" inside Blender). One small
    kernel is compiled: a whole warm_up() compiles cold for about four and a half minutes on 2
    cores, which the zips' build (tests/blender/test_install.py) already pays."""
    code = ("import numpy as np; from solver import backend; k = backend.numba_kernels(); "
            "X = np.zeros((3, 2)); k.predict(X, X.copy(), X.copy(), np.ones(2), np.zeros(0)); "
            "print(backend._state['cache_dir'])")
    env = dict(os.environ, VERLET_CACHE_DIR=str(tmp_path))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True,
                         text=True, check=True)
    folder = out.stdout.strip().splitlines()[-1]
    # <cache>/solver/<digest>/<target>: no shipped kernels here, so tuned for this CPU
    assert os.path.basename(folder) == "host"
    folder = os.path.dirname(folder)
    assert os.path.dirname(os.path.dirname(folder)) == str(tmp_path)
    assert os.path.basename(os.path.dirname(folder)) == "solver"
    cached = list((tmp_path / "solver").rglob("*predict*.nbi"))
    assert cached, "no kernel index written to the cache folder"
    # filed under <target>/kernels, not a hash of the source's path: a copy stays valid
    assert all(p.parent.name == "kernels" for p in cached), cached


def test_warm_up_compiles_what_the_scenarios_use():
    """backend.warm_up() (what the add-on runs, with "compiling solver kernels" showing, and
    what the shipped kernels are compiled from) must compile every kernel signature a scene
    needs: a kernel compiled later would freeze the first play of such a scene without the
    message (the layout of an array is part of the signature, e.g. Fortran-ordered weights
    once cost a second compile). Every kernel of the table counts, the substep loop and those
    Python calls between its calls (the collide stages, the rigid bodies' order, a round's
    merge, the bodies' frames: order_rigid, merge_round and body_frames once compiled at the
    demo's first bake, 7 s): the scenarios, the bodies' frames of each, and the flag of
    test_rounds.py until a step runs again in rounds. In a fresh process: here, earlier tests have
    already compiled whatever the scenarios use."""
    code = """
import json, sys
sys.path.insert(0, "tests/solver")
from solver import Simulation, backend
from solver.kernels import KERNELS
import test_backends as tb
import test_rounds as tr
kernels = backend.numba_kernels()
backend.warm_up()
sigs = lambda: {n: [str(s) for s in getattr(kernels, n).signatures] for n in KERNELS}
before = sigs()
for build in tb.SCENARIOS:
    b, kw, control = build()
    sim = Simulation(b.build(), backend="numba", **kw)
    for _ in range(3):
        if control is not None:
            control(sim)
        sim.step(1 / 24)
    sim.body_frames()
flag, _ = tr._flag("numba")
for _ in range(48):                # until a step ran again in rounds
    flag.step(1 / 24)
    if flag.reruns:
        break
assert flag.reruns > 0
print("RESULT " + json.dumps([before, sigs()]))
"""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         check=True)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    before, after = json.loads(line[len("RESULT "):])
    assert before["run_substeps"], before
    late = {n: sorted(set(after[n]) - set(before[n])) for n in after if after[n] != before[n]}
    assert not late, f"compiled after the warm-up: {late}"
