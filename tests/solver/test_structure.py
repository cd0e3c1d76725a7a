"""Structure of the solver package and of what the Builder derives from meshes.

- solver/ never imports Blender (bpy, mathutils, ...): checked statically on the syntax tree of
  every file and dynamically by importing and running it in a fresh interpreter where importing
  any Blender module raises.
- Cloth topology (solver/mesh.py): exact stick counts on quad grids, exact stick sets on
  triangle, quad, n-gon and mixed meshes against an independent reference written here.
- Graph colouring (solver/constraints/coloring.py): no two constraints of one colour share a particle, on
  built cloth Models and on random graphs.
"""

import ast
import importlib.util
import itertools
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from solver import Builder
from solver.constraints.coloring import color_order, greedy_colors
from solver.mesh import cloth_topology, normalize_faces

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOLVER = os.path.join(ROOT, "solver")
BLENDER_MODULES = {"bpy", "mathutils", "bmesh", "bpy_extras", "bpy_types", "gpu", "gpu_extras",
                   "bgl", "blf", "bl_math", "aud", "idprop", "freestyle", "imbuf", "_bpy"}


# ----------------------------------------------------------------------------- no bpy


def solver_files():
    out = []
    for base, dirs, files in os.walk(SOLVER):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        out += [os.path.join(base, f) for f in files if f.endswith(".py")]
    return sorted(out)


def test_solver_files_found():
    names = {os.path.basename(f) for f in solver_files()}
    assert {"__init__.py", "builder.py", "simulation.py", "state.py", "sdf.py", "mesh.py",
            "coloring.py", "model.py", "errors.py"} <= names


def blender_imports(source, depth=0):
    """(line, module) of every import in ``source`` that names a Blender module or reaches
    outside the solver package: import statements, ``from`` imports, relative imports with
    more dots than the file is deep (``depth`` = its folder's depth below solver/), and
    __import__ / importlib.import_module calls with a constant name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level > depth + 1:
                found.append((node.lineno, "." * node.level + (node.module or "")))
            elif node.level == 0:
                found.append((node.lineno, node.module or ""))
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else \
                fn.attr if isinstance(fn, ast.Attribute) else ""
            if name in ("__import__", "import_module") and node.args \
                    and isinstance(node.args[0], ast.Constant):
                found.append((node.lineno, str(node.args[0].value)))
    return [(line, mod) for line, mod in found
            if mod.startswith(".") or mod.split(".")[0] in BLENDER_MODULES]


@pytest.mark.parametrize("path", solver_files(), ids=lambda p: os.path.relpath(p, SOLVER))
def test_no_blender_imports_in_source(path):
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    rel = os.path.relpath(os.path.dirname(path), SOLVER)
    depth = 0 if rel == "." else rel.count(os.sep) + 1
    bad = blender_imports(source, depth)
    assert not bad, f"{os.path.relpath(path, ROOT)} imports {bad}"


@pytest.mark.parametrize("source", [
    "import bpy", "import numpy, mathutils", "from mathutils import Vector",
    "import bmesh.ops as ops", "x = __import__('bpy')", "importlib.import_module('gpu.types')",
    "from .. import addon", "from ..addon.ui import panel",
    "def f():\n    import bpy\n    return bpy",
    "try:\n    import bpy\nexcept ImportError:\n    bpy = None",
])
def test_ast_check_catches_blender_imports(source):
    """The static check is not vacuous: each form it looks for is flagged (also when guarded
    or inside a function), while the solver's own imports are not."""
    assert blender_imports(source)
    assert not blender_imports("import numpy as np\nfrom . import sdf\nfrom .mesh import x\n"
                               "import math, os\nfrom collections import namedtuple")


BLOCKED_RUN = textwrap.dedent("""
    import importlib.abc, sys
    BLOCK = set(sys.argv[1].split(","))
    tried = []

    class NoBlender(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCK:
                tried.append(name)
                raise ImportError(f"blocked: {name}")
            return None

    sys.meta_path.insert(0, NoBlender())
    sys.path.insert(0, sys.argv[2])
    import numpy as np
    import solver
    from solver import Builder, Simulation, SolverError

    n = 4
    u = np.linspace(0.0, 1.0, n)
    x = np.array([[a, b, 1.0] for a in u for b in u])
    faces = [[i * n + j, i * n + j + 1, (i + 1) * n + j + 1, (i + 1) * n + j]
             for i in range(n - 1) for j in range(n - 1)]
    b = Builder()
    ids = b.add_cloth(x, faces)
    b.pin(ids[:1])
    blk = b.add_particles(np.array([[2.0, 0, 1], [2.2, 0, 1], [2.0, 0.2, 1], [2.0, 0, 1.2]]))
    b.add_shape_match(blk)
    b.add_tetra_body(np.array([[3.0, 0, 1], [3.3, 0, 1], [3.0, 0.3, 1], [3.0, 0, 1.3]]),
                     np.array([[3.1, 0.1, 1.1]]))
    for shape in ("plane", "sphere", "box", "cylinder", "capsule"):
        b.add_collider(shape, matrix=np.diag([1.0, 1.0, 1.0, 1.0]) if shape != "plane" else None)
    for backend in sys.argv[3].split(","):
        import os
        os.environ["VERLET_BACKEND"] = backend
        try:
            sim = Simulation(b.build(), substeps=2)
        except ValueError:
            continue                        # numba not installed: numpy alone is checked
        sim.set_wind((1.0, 0.0, 0.0), turbulence=0.3)
        sim.set_collider_matrix(1, np.diag([1.1, 1.1, 1.1, 1.0]))
        sim.step(1 / 24)
        assert np.all(np.isfinite(sim.x)), backend
        print("stepped", sim.backend)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCK)
    print("tried", tried, "loaded", loaded)
    assert not tried and not loaded
""")


def test_import_and_run_with_blender_blocked(tmp_path):
    """In a fresh interpreter where any Blender import raises, solver imports, builds every
    kind of object and steps on each backend, and never even tries to import Blender."""
    env = dict(os.environ)
    env.pop("VERLET_BACKEND", None)
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKED_RUN, ",".join(sorted(BLENDER_MODULES)), ROOT, "numpy,numba"],
        cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "stepped numpy" in proc.stdout
    if importlib.util.find_spec("numba") is not None:      # the compiled kernels too
        assert "stepped numba" in proc.stdout, proc.stdout + proc.stderr
    assert "tried [] loaded []" in proc.stdout


def test_blocker_really_blocks():
    """The same finder does stop a module that imports bpy (so the test above can fail)."""
    src = BLOCKED_RUN.split("import numpy as np")[0] + "import bpy\n"
    proc = subprocess.run([sys.executable, "-c", src, "bpy", ROOT], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0 and "blocked: bpy" in proc.stderr


# ----------------------------------------------------------------------------- cloth topology


def grid(n, m=None):
    """n x m vertex quad grid in the plane z = 0, row-major; faces wound counter-clockwise."""
    m = n if m is None else m
    x = np.array([[i, j, 0.0] for i in range(n) for j in range(m)], dtype=float) * 0.1
    faces = np.array([[i * m + j, i * m + j + 1, (i + 1) * m + j + 1, (i + 1) * m + j]
                      for i in range(n - 1) for j in range(m - 1)], dtype=np.int64)
    return x, faces


def topology(faces, n_vertices):
    c, s, k = normalize_faces(faces, n_vertices)
    return {key: {tuple(p) for p in v.tolist()} | set() for key, v in
            cloth_topology(c, s, k, n_vertices).items()}, cloth_topology(c, s, k, n_vertices)


def reference_topology(faces):
    """Independent reference: stretch = polygon edges, shear = non-adjacent corner pairs of
    each polygon, bend = for every edge shared by exactly two faces and each end e of it, the
    neighbours of e in the two faces that are not on the edge; bends that are already a stretch
    or shear stick are dropped. Pairs as sorted tuples."""
    faces = [list(map(int, f)) for f in faces]
    stretch, shear, bend = set(), set(), set()
    owners = {}
    for fi, f in enumerate(faces):
        k = len(f)
        for i in range(k):
            a, b = f[i], f[(i + 1) % k]
            stretch.add((min(a, b), max(a, b)))
            owners.setdefault((min(a, b), max(a, b)), []).append(fi)
        for i, j in itertools.combinations(range(k), 2):
            if (j - i) % k not in (1, k - 1):
                shear.add((min(f[i], f[j]), max(f[i], f[j])))

    def other_neighbour(f, e, not_this):
        i = f.index(e)
        nb = {f[(i - 1) % len(f)], f[(i + 1) % len(f)]} - {not_this}
        assert len(nb) == 1
        return nb.pop()

    for (a, b), fs in owners.items():
        if len(fs) != 2:
            continue
        fa, fb = faces[fs[0]], faces[fs[1]]
        for e, o in ((a, b), (b, a)):
            p, q = other_neighbour(fa, e, o), other_neighbour(fb, e, o)
            if p != q:
                bend.add((min(p, q), max(p, q)))
    return {"stretch": stretch, "shear": shear - stretch, "bend": bend - stretch - shear}


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_quad_grid_counts(n):
    x, faces = grid(n)
    sets, arrays = topology(faces, n * n)
    assert len(arrays["stretch"]) == 2 * n * (n - 1)
    assert len(arrays["shear"]) == 2 * (n - 1) ** 2
    assert len(arrays["bend"]) == 2 * n * (n - 2)
    # no pair twice, none in two groups, none a particle with itself
    every = np.concatenate(list(arrays.values()))
    assert len({tuple(p) for p in every.tolist()}) == len(every)
    assert np.all(every[:, 0] < every[:, 1])

    # and exactly the expected sticks: neighbours, quad diagonals, second neighbours
    def v(i, j):
        return i * n + j
    stretch = {(v(i, j), v(i, j + 1)) for i in range(n) for j in range(n - 1)} | \
              {(v(i, j), v(i + 1, j)) for i in range(n - 1) for j in range(n)}
    shear = {(v(i, j), v(i + 1, j + 1)) for i in range(n - 1) for j in range(n - 1)} | \
            {(v(i, j + 1), v(i + 1, j)) for i in range(n - 1) for j in range(n - 1)}
    shear = {(min(p), max(p)) for p in shear}
    bend = {(v(i, j), v(i, j + 2)) for i in range(n) for j in range(n - 2)} | \
           {(v(i, j), v(i + 2, j)) for i in range(n - 2) for j in range(n)}
    assert sets["stretch"] == stretch
    assert sets["shear"] == shear
    assert sets["bend"] == bend


def test_rectangular_grid_and_builder_counts():
    """A 5 x 3 grid through Builder.add_cloth: the Model holds every stick once, tagged with its
    source, with the rest length of the mesh."""
    n, m = 5, 3
    x, faces = grid(n, m)
    b = Builder()
    b.add_cloth(x, faces)
    model = b.build()
    src = model.stick_source
    assert (src == 1).sum() == n * (m - 1) + m * (n - 1)
    assert (src == 2).sum() == 2 * (n - 1) * (m - 1)
    assert (src == 3).sum() == n * (m - 2) + m * (n - 2)
    p = model.stick_particles
    assert np.allclose(model.stick_rest_length, np.linalg.norm(x[p[:, 0]] - x[p[:, 1]], axis=1),
                       rtol=0, atol=1e-15)
    assert np.allclose(model.stick_rest_length[src == 1], 0.1, rtol=0, atol=1e-15)
    assert np.allclose(model.stick_rest_length[src == 2], 0.1 * np.sqrt(2), rtol=0, atol=1e-15)
    assert np.allclose(model.stick_rest_length[src == 3], 0.2, rtol=0, atol=1e-15)


def test_two_triangles():
    """Two triangles sharing edge 1-2: five edges, no shear, one bend joining the opposite
    vertices 0 and 3 (either winding of the second triangle)."""
    for faces in ([[0, 1, 2], [2, 1, 3]], [[0, 1, 2], [1, 2, 3]]):
        sets, _ = topology(faces, 4)
        assert sets["stretch"] == {(0, 1), (1, 2), (0, 2), (1, 3), (2, 3)}
        assert sets["shear"] == set()
        assert sets["bend"] == {(0, 3)}


def test_triangulated_grid_matches_reference():
    n = 4
    _, quads = grid(n)
    tris = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])
    sets, arrays = topology(tris, n * n)
    ref = reference_topology(tris)
    assert sets == ref
    assert len(arrays["shear"]) == 0
    # every interior edge (shared by two triangles) gives one bend: the two opposite vertices
    interior = 3 * (n - 1) ** 2 - 2 * (n - 1)
    assert len(ref["bend"]) == interior
    # e.g. the diagonal 0-5 of the first quad: its triangles' opposite vertices are 1 and 4
    assert (1, 4) in sets["bend"]


@pytest.mark.parametrize("k", [5, 6, 8])
def test_single_ngon(k):
    """One k-gon: k edges and every one of the k (k - 3) / 2 diagonals as shear; no bend."""
    ang = np.linspace(0, 2 * np.pi, k, endpoint=False)
    x = np.column_stack([np.cos(ang), np.sin(ang), np.zeros(k)])
    sets, arrays = topology([list(range(k))], k)
    assert sets["stretch"] == {(min(i, (i + 1) % k), max(i, (i + 1) % k)) for i in range(k)}
    assert len(arrays["shear"]) == k * (k - 3) // 2
    assert sets["shear"] == {(i, j) for i in range(k) for j in range(i + 2, k)
                             if not (i == 0 and j == k - 1)}
    assert sets["bend"] == set()
    b = Builder()
    b.add_cloth(x, [list(range(k))])
    assert b.build().stick_count == k + k * (k - 3) // 2


def test_two_hexagons_and_mixed_mesh():
    """Two hexagons sharing edge 1-2, a quad and a triangle sharing edge 1-2: explicit bends."""
    hexes = [[0, 1, 2, 3, 4, 5], [1, 6, 7, 8, 9, 2]]
    sets, _ = topology(hexes, 10)
    # end 1: neighbours 0 (first hexagon) and 6 (second); end 2: 3 and 9
    assert sets["bend"] == {(0, 6), (3, 9)}
    assert len(sets["stretch"]) == 11 and len(sets["shear"]) == 18
    assert sets == reference_topology(hexes)

    mixed = [[0, 1, 2, 3], [1, 4, 2]]
    sets, _ = topology(mixed, 5)
    assert sets["bend"] == {(0, 4), (3, 4)}
    assert sets["shear"] == {(0, 2), (1, 3)}
    assert sets == reference_topology(mixed)


def test_diagonal_that_is_another_faces_edge():
    """A quad whose diagonal 0-2 is also an edge of a neighbouring triangle: one stretch stick
    on 0-2, not a stretch and a shear (was: both, two sticks on one pair)."""
    faces = [[0, 1, 2, 3], [0, 2, 4]]
    sets, arrays = topology(faces, 5)
    assert (0, 2) in sets["stretch"] and sets["shear"] == {(1, 3)}
    every = np.concatenate(list(arrays.values()))
    assert len({tuple(p) for p in every.tolist()}) == len(every)
    x = np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.5, 0.5, 1]])
    b = Builder()
    b.add_cloth(x, faces)
    pairs = np.sort(b.build().stick_particles, axis=1)
    assert np.unique(pairs, axis=0).shape[0] == pairs.shape[0]


def test_mixed_polygon_mesh_and_tube_match_reference():
    """A mesh of triangles, quads, a pentagon and a hexagon, with both windings, and a quad
    tube closed around a seam: the topology equals the independent reference."""
    faces = [[0, 1, 5, 4], [1, 2, 6, 5], [2, 3, 7, 6], [4, 5, 9, 8], [5, 6, 10, 9],
             [6, 7, 11, 10, 14], [8, 9, 13, 12], [9, 10, 13], [10, 14, 15, 16, 17, 13],
             [12, 13, 17, 18]]
    faces[3] = faces[3][::-1]                              # a face with the other winding
    edges = [tuple(sorted((f[i], f[(i + 1) % len(f)]))) for f in faces for i in range(len(f))]
    assert max(edges.count(e) for e in edges) == 2         # manifold: 1 or 2 faces an edge
    sets, arrays = topology(faces, 19)
    assert sets == reference_topology(faces)
    assert len(arrays["bend"]) > 10

    ring, rows = 6, 4                                       # a tube: the seam joins 5 and 0
    tube = [[r * ring + j, r * ring + (j + 1) % ring, (r + 1) * ring + (j + 1) % ring,
             (r + 1) * ring + j] for r in range(rows - 1) for j in range(ring)]
    sets, arrays = topology(tube, ring * rows)
    assert sets == reference_topology(tube)
    assert len(arrays["stretch"]) == ring * rows + ring * (rows - 1)
    assert len(arrays["bend"]) == ring * rows + ring * (rows - 2)   # around and along
    assert (4, 0) in {(max(p), min(p)) for p in sets["bend"]}       # across the seam: 5 +- 1


# ----------------------------------------------------------------------------- colouring


def assert_proper_colouring(model):
    """No two sticks of one batch share a particle; every stick is in exactly one batch; the
    compiled kernel's tasks cover every stick once, the tasks of one group write disjoint
    particles, and each task takes its sticks in batch order (so both backends relax in an
    order that gives the same bits). Returns the batch count."""
    off = model.stick_batch_offsets
    assert off[0] == 0 and off[-1] == model.stick_count and np.all(np.diff(off) > 0)
    for c in range(len(off) - 1):
        members = model.stick_particles[off[c]:off[c + 1]].ravel()
        assert np.unique(members).size == members.size, f"batch {c} shares a particle"
    lo, hi = model.stick_range_lo, model.stick_range_hi
    covered = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)]) if len(lo) else []
    assert sorted(covered) == list(range(model.stick_count))
    tasks, groups = model.stick_task_range_start, model.stick_group_task_start
    batch_of = np.searchsorted(off, np.arange(model.stick_count), side="right") - 1
    for g in range(len(groups) - 1):
        written = set()
        for t in range(groups[g], groups[g + 1]):
            mine = np.concatenate([np.arange(lo[r], hi[r]) for r in range(tasks[t], tasks[t + 1])])
            assert np.all(np.diff(batch_of[mine]) >= 0), f"task {t} out of batch order"
            particles = set(model.stick_particles[mine].ravel().tolist())
            assert not written & particles, f"group {g}: two tasks write one particle"
            written |= particles
    return len(off) - 1


def line_graph_degree(pairs, n):
    deg = np.bincount(pairs.ravel(), minlength=n)
    return int(np.max(deg[pairs[:, 0]] + deg[pairs[:, 1]] - 2))


@pytest.mark.parametrize("n", [3, 8, 16])
def test_cloth_model_colouring(n):
    x, faces = grid(n)
    b = Builder()
    b.add_cloth(x, faces)
    model = b.build()
    colours = assert_proper_colouring(model)
    # greedy first-fit: at most (number of sticks any stick touches) + 1 colours
    assert colours <= line_graph_degree(model.stick_particles, model.particle_count) + 1
    # the Model's sticks are the topology's, reordered
    _, arrays = topology(faces, n * n)
    want = np.concatenate(list(arrays.values()))
    got = np.sort(model.stick_particles, axis=1)
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, want.tolist()))


def test_colouring_with_pins_clusters_and_other_constraints():
    """Pinned-pinned sticks are dropped, the rest stays properly coloured; shape-matching
    clusters of one colour share no particle either."""
    n = 6
    x, faces = grid(n)
    tris = np.concatenate([faces[:, [0, 1, 2]], faces[:, [0, 2, 3]]])
    b = Builder()
    ids = b.add_cloth(x, tris)
    b.pin(ids[:n])                                         # a whole row: its sticks go
    q = b.add_cloth(x + (0, 0, 1), faces)
    b.add_tetra_body(np.array([[5.0, 0, 0], [5.3, 0, 0], [5, 0.3, 0], [5, 0, 0.3]]),
                     np.zeros((1, 3)) + 5.1)
    for k in range(0, n * n - 4, 3):                        # overlapping clusters
        b.add_shape_match(q[k:k + 5])
    model = b.build()
    assert_proper_colouring(model)
    pinned = model.particle_inv_mass == 0
    assert not np.any(pinned[model.stick_particles].all(axis=1))
    assert np.any(pinned[model.stick_particles].any(axis=1))   # pinned-free sticks stay
    off, start = model.shape_color_offsets, model.shape_cluster_start
    assert off[-1] == len(start) - 1
    for c in range(len(off) - 1):
        members = model.shape_particles[start[off[c]]:start[off[c + 1]]]
        assert np.unique(members).size == members.size


def test_greedy_colors_on_random_graphs():
    rng = np.random.default_rng(0)
    for trial in range(20):
        n = int(rng.integers(5, 60))
        pairs = rng.integers(0, n, size=(int(rng.integers(1, 200)), 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        colours = greedy_colors(pairs, n)
        used = np.unique(colours)
        assert np.array_equal(used, np.arange(used.size))              # dense numbering
        for c in used:
            members = pairs[colours == c].ravel()
            assert np.unique(members).size == members.size
        order, offsets = color_order(colours)
        assert np.array_equal(np.sort(order), np.arange(len(pairs)))
        for c in used:
            assert np.all(colours[order[offsets[c]:offsets[c + 1]]] == c)
            assert np.all(np.diff(order[offsets[c]:offsets[c + 1]]) > 0)   # stable
    # ragged groups (clusters)
    groups = [[0, 1, 2], [2, 3], [4, 5, 6, 7], [1, 4], [8, 9], [0, 9, 5]]
    colours = greedy_colors(groups, 10)
    for c in np.unique(colours):
        members = [p for g, k in zip(groups, colours) if k == c for p in g]
        assert len(set(members)) == len(members)


def test_kernel_tables_have_the_same_signatures():
    """One kernel table, the same names and parameters on both backends, so no physics class
    needs to know which one runs."""
    import inspect

    from solver import backend
    from solver.kernels import KERNELS, table
    numpy_table = table("numpy")
    assert sorted(vars(numpy_table)) == sorted(KERNELS + ("backend",))
    if backend.numba_kernels() is None:
        pytest.skip(f"compiled kernels unavailable: {backend.load_error()}")
    numba_table = table("numba")
    for name in KERNELS:
        ours = inspect.signature(getattr(numpy_table, name))
        theirs = inspect.signature(getattr(numba_table, name).py_func)
        assert list(ours.parameters) == list(theirs.parameters), name


def test_kernel_constants_equal_the_numpy_side():
    """A compiled kernel file copies the NumPy side's constants it uses, with the source named in
    a comment (``_TOL = 1e-6  # collision/bodies.TOL``), so the kernel cache's digest covers
    them; every copy must equal its source, or the backends would part."""
    import re
    pattern = re.compile(r"^(\w+) = .*#\s*((?:collision|constraints)/\w+)\.(\w+)\s*$", re.M)
    seen = 0
    for name in sorted(os.listdir(os.path.join(SOLVER, "kernels"))):
        if not name.startswith("compiled") or not name.endswith(".py"):
            continue
        with open(os.path.join(SOLVER, "kernels", name)) as f:
            text = f.read()
        values = {}
        exec(compile("\n".join(m.group(0).split("#")[0] for m in pattern.finditer(text)),
                     name, "exec"), {}, values)
        for m in pattern.finditer(text):
            source = importlib.import_module("solver." + m.group(2).replace("/", "."))
            assert values[m.group(1)] == getattr(source, m.group(3)), (name, m.group(1))
            seen += 1
    assert seen >= 10


def test_physics_classes_do_not_branch_on_the_backend():
    """Only the kernel table and the backend module may name a backend (and the build-time
    colouring, which runs its compiled kernel or its Python reference once per build)."""
    allowed = {os.path.join(SOLVER, "backend.py"), os.path.join(SOLVER, "simulation.py"),
               os.path.join(SOLVER, "constraints", "coloring.py")}
    for path in solver_files():
        if path in allowed or os.sep + "kernels" + os.sep in path:
            continue
        with open(path) as f:
            text = f.read()
        assert "kernels is not None" not in text and '"numba"' not in text, path


@pytest.mark.parametrize("shuffle", [False, True])
def test_stick_partition_waits_a_handful_of_times_per_sweep(shuffle):
    """A 96 x 96 cloth (9216 particles, 36 blocks): its sticks are relaxed in 2 groups of blocks
    for shear and bend, then 2 for stretch, the first phase's last group going on into the
    second's first: 3 waits per sweep instead of one per colour, about 12. With its vertex ids
    shuffled no block locality is left and the partition falls back to colours split into
    chunks. Either way the partition is valid (assert_proper_colouring) and every block relaxes
    its other sticks before any relaxes its stretch (builder._SOURCE_ORDER: stretch last in the
    whole sweep, not only within each block)."""
    n = 96
    x, faces = grid(n)
    if shuffle:
        perm = np.random.default_rng(0).permutation(n * n)
        inverse = np.argsort(perm)
        x, faces = x[perm], inverse[faces]
    b = Builder()
    b.add_cloth(x, faces)
    model = b.build()
    batches = assert_proper_colouring(model)
    groups = len(model.stick_group_task_start) - 1
    from solver.model import STICK_SOURCES
    rank = (model.stick_source == STICK_SOURCES.index("cloth stretch")).astype(int)
    tasks, lo, hi = model.stick_task_range_start, model.stick_range_lo, model.stick_range_hi
    start = model.stick_group_task_start
    last = -1
    for g in range(groups):              # the compiled kernel's order: a group's tasks at once
        ranks = []
        for t in range(start[g], start[g + 1]):          # ... each task's ranges in turn
            mine = rank[np.concatenate([np.arange(lo[r], hi[r])
                                        for r in range(tasks[t], tasks[t + 1])])]
            assert np.all(np.diff(mine) >= 0)
            ranks.append(mine)
        ranks = np.concatenate(ranks)
        assert ranks.min() >= last                      # no shear or bend after stretch
        last = ranks.max()
    off = model.stick_batch_offsets                     # the NumPy kernel's: batches in turn
    batch_rank = rank[off[:-1]]
    assert all(np.all(rank[off[c]:off[c + 1]] == batch_rank[c]) for c in range(len(off) - 1))
    if shuffle:
        assert groups == batches                          # one wait per colour, as before
        assert len(model.stick_range_lo) > groups         # colours split between threads
    else:
        assert groups == 3 and batches > 2 * 8
        assert np.diff(model.stick_group_task_start).tolist() == [18] * 3   # 16 threads busy
