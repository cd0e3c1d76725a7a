"""Reference half of the cloth benchmark: Blender's built-in Cloth modifier.

This module builds the benchmark scene from scratch with ``bpy`` (Blender as a
Python module), steps Blender's cloth simulation frame by frame, times every
frame and returns the final vertex positions, so that our own solver can be
compared against it on the *same* scene.  The solver side imports the scene
constants and the mesh helpers from here so both halves agree exactly.

Scene (all lengths in metres, world space, +Z up, gravity -9.81 m/s^2 on Z):

* ground plane: a 20 m x 20 m quad at ``z = GROUND_Z`` (0.0) with a Collision
  modifier;
* sphere: a 64 x 32 UV sphere of radius ``SPHERE_RADIUS`` (0.5) centred at
  ``SPHERE_CENTER`` (0, 0, 0.5), i.e. resting on the ground, its top at
  ``SPHERE_TOP_Z`` (1.0), with a Collision modifier;
* cloth: an unpinned, flat, horizontal ``n x n`` vertex grid of side
  ``CLOTH_SIZE`` (2.0) centred on x = y = 0 at the absolute height
  ``CLOTH_Z`` (2.0), i.e. 1 m above the top of the sphere, with a Cloth
  modifier using Blender's default settings (quality = 5 set explicitly,
  default collision settings, self collision off).

Blender cloth defaults worth knowing when matching the other solver (read from
bpy 5.0.1): ``mass`` = 0.3 kg *per vertex* (so total mass grows with n^2),
tension/compression stiffness 15, shear 5, bending 0.5 (angular model),
air damping 1, collision ``distance_min`` 0.015 m, collider friction 5,
Collision-modifier ``thickness_outer`` 0.02 m (so cloth resting on a
collider sits ~0.035 m above its surface).

Time base (measured, bpy 5.0.1): Blender's cloth ignores the scene frame rate.
One frame is ``settings.time_scale`` time units of its solver (split into
``quality`` substeps), with gravity applied as ``0.001 * g`` per unit^2, i.e.
one unit is ``BLENDER_TIME_UNIT`` = sqrt(0.001) s ~= 31.6 ms of gravity time,
whatever ``scene.render.fps`` is.  With quality 80, no air damping and no
collisions the cloth falls 0.5035 m in 10 frames at 24, 25 and 48 fps alike
(0.4905 m is exact free fall over 10 x 31.6 ms); with time_scale =
(1/24 s) / 31.6 ms = 1.318 it falls 0.874 m (0.852 m exact over 10 x 1/24 s).
So "60 frames at 24 fps = 2.5 s" is only nominal at the default time_scale 1:
in gravity terms the 60 frames cover ~1.9 s.

Air damping is a force -0.01 * air_damping * v on every vertex (units of the
solver: kg, m, time units), not scaled by mass: at 0.3 kg the default (1.0)
gives a terminal speed of 0.29 m/frame (measured: 0.096 m/frame at
air_damping 3, predicted 0.098), and the same cloth at a tenth of the mass and
a tenth of the damping falls the same way.  In SI units the drag per vertex is
(0.01 / BLENDER_TIME_UNIT) * air_damping kg/s.

:func:`like_for_like_settings` gives the settings that run Blender's cloth
with another solver's mass, simulated time per frame and air drag (see
benchmarks/cloth_drape.py).  At a light cloth's mass Blender's implicit solve
does not converge with its default stiffness and damping (measured, N = 32,
time_scale 1.318, no air damping, no collisions, 10 frames): at 0.3 kg per
vertex the cloth falls 0.869 m (0.852 m is exact free fall); at 0.6 kg in
all (0.59 g per vertex) it falls 0.172 m; with the spring stiffnesses alone
scaled by the mass ratio 0.231 m, the spring dampings alone 0.409 m, both
0.869 m again, to the bit.  The forces scale with the settings, so only the
ratio of stiffness and damping to mass matters, and at that ratio the solve
stops short.

Run standalone::

    .venv/bin/python benchmarks/blender_cloth.py          # N = 32, 64
    .venv/bin/python benchmarks/blender_cloth.py --big    # N = 32, 64, 128
"""

from __future__ import annotations

import argparse
import time

import numpy as np

# --------------------------------------------------------------------------
# Scene constants (metres).  Shared with our solver's side of the benchmark.
# --------------------------------------------------------------------------
SPHERE_RADIUS = 0.5
SPHERE_CENTER = (0.0, 0.0, 0.5)
SPHERE_TOP_Z = SPHERE_CENTER[2] + SPHERE_RADIUS  # 1.0
SPHERE_SEGMENTS = 64  # UV sphere longitude segments
SPHERE_RINGS = 32  # UV sphere latitude rings
GROUND_Z = 0.0
GROUND_SIZE = 20.0  # side of the square ground quad
CLOTH_Z = 2.0  # absolute z of the (flat) cloth at rest = SPHERE_TOP_Z + 1 m
CLOTH_SIZE = 2.0  # side of the square cloth
CLOTH_QUALITY = 5  # Cloth modifier "Quality Steps" (Blender's default)
BLENDER_TIME_UNIT = 0.001 ** 0.5  # [s] gravity time of one cloth time unit (gravity x 0.001)
BLENDER_DRAG_FACTOR = 0.01  # drag force per vertex = BLENDER_DRAG_FACTOR * air_damping * v


# --------------------------------------------------------------------------
# Mesh helpers (pure numpy, no bpy needed)
# --------------------------------------------------------------------------
def grid_cloth(n: int, size: float = CLOTH_SIZE, height: float = CLOTH_Z):
    """Flat, unpinned square grid of ``n x n`` vertices in the z = height plane.

    Args:
        n: vertices per side (>= 2).
        size: side length of the square, metres.  The grid spans
            ``[-size/2, size/2]`` in both x and y (centred on x = y = 0).
        height: **absolute** world z of the whole grid, metres (the cloth is
            flat, so this is also its lowest point).  The default
            ``CLOTH_Z`` = 2.0 puts the cloth 1 m above the top of the sphere.

    Returns:
        verts: ``(n*n, 3)`` float64, metres.  Row-major: vertex ``i*n + j``
            is at ``x = xs[j]``, ``y = ys[i]`` (i = row along +y, j = column
            along +x), so the middle vertex is ``(n//2)*n + n//2`` and the
            corners are ``0, n-1, n*(n-1), n*n-1``.
        faces: ``((n-1)**2, 4)`` int64 vertex indices of the quads, wound
            counter-clockwise seen from +z (all face normals point +z).
    """
    if n < 2:
        raise ValueError("grid_cloth needs n >= 2")
    coords = np.linspace(-0.5 * size, 0.5 * size, n)
    ys, xs = np.meshgrid(coords, coords, indexing="ij")  # (n, n) each
    verts = np.stack([xs.ravel(), ys.ravel(), np.full(n * n, float(height))], axis=1)

    idx = np.arange(n * n, dtype=np.int64).reshape(n, n)
    v00 = idx[:-1, :-1].ravel()  # (x, y)
    v10 = idx[:-1, 1:].ravel()  # (x + dx, y)
    v11 = idx[1:, 1:].ravel()  # (x + dx, y + dy)
    v01 = idx[1:, :-1].ravel()  # (x, y + dy)
    faces = np.stack([v00, v10, v11, v01], axis=1)
    return verts.astype(np.float64), faces


def edge_pairs(faces: np.ndarray) -> np.ndarray:
    """Unique undirected mesh edges of a quad (or any fixed-arity) face array.

    Only the polygon boundary edges are returned (the "structural" edges an
    artist sees in edit mode); no diagonals / shear or bending pairs.

    Args:
        faces: ``(k, m)`` integer vertex indices, each row one polygon.

    Returns:
        ``(e, 2)`` int64, each row ``(a, b)`` with ``a < b``, rows unique and
        sorted lexicographically.  For an ``n x n`` grid, ``e = 2*n*(n-1)``.
    """
    faces = np.asarray(faces, dtype=np.int64)
    e = np.stack([faces, np.roll(faces, -1, axis=1)], axis=2).reshape(-1, 2)
    e.sort(axis=1)
    return np.unique(e, axis=0)


def edge_strain(x: np.ndarray, x_rest: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Relative length error of every edge, ``|len - rest_len| / rest_len``.

    Args:
        x: ``(v, 3)`` current positions, metres.
        x_rest: ``(v, 3)`` rest positions, metres.
        edges: ``(e, 2)`` integer vertex index pairs.

    Returns:
        ``(e,)`` float64, dimensionless (0.01 = 1 % stretched or compressed).
    """
    x = np.asarray(x, dtype=np.float64)
    x_rest = np.asarray(x_rest, dtype=np.float64)
    a, b = edges[:, 0], edges[:, 1]
    length = np.linalg.norm(x[b] - x[a], axis=1)
    rest = np.linalg.norm(x_rest[b] - x_rest[a], axis=1)
    return np.abs(length - rest) / rest


def strain_summary(strain: np.ndarray) -> dict:
    """Summary statistics of an edge-strain array.

    Args:
        strain: ``(e,)`` dimensionless strains, e.g. from :func:`edge_strain`.

    Returns:
        ``{"max": float, "p99": float}`` (dimensionless; p99 = 99th percentile).
    """
    strain = np.asarray(strain, dtype=np.float64)
    return {"max": float(strain.max()), "p99": float(np.percentile(strain, 99.0))}


def grid_landmarks(n: int) -> dict:
    """Vertex indices of the centre and the four corners of :func:`grid_cloth`.

    Returns:
        ``{"center": int, "corners": (4,) int64 array}``.  For even ``n`` the
        "centre" is the vertex just past the middle on both axes.
    """
    return {
        "center": (n // 2) * n + n // 2,
        "corners": np.array([0, n - 1, n * (n - 1), n * n - 1], dtype=np.int64),
    }


def like_for_like_settings(total_mass: float, vertex_count: int, fps: float,
                           air_drag: float, area: float) -> dict:
    """Cloth-modifier settings that match another solver's scene physically.

    Args:
        total_mass: the other cloth's mass, kg (spread evenly: Blender's mass
            is per vertex).
        vertex_count: the cloth's vertices.
        fps: frames per second of the other solver; one Blender frame then
            simulates 1 / fps seconds of gravity time (``time_scale``).
        air_drag: the other solver's air drag, kg / (m^2 s): force per unit
            area per unit speed.
        area: the cloth's area, m^2.

    Returns:
        ``{"mass": kg per vertex, "time_scale": cloth time units per frame,
        "air_damping": Blender's coefficient}``, each a float (the keys are
        ``ClothSettings`` attributes).
    """
    mass = float(total_mass) / int(vertex_count)
    time_scale = (1.0 / float(fps)) / BLENDER_TIME_UNIT
    # drag per vertex [kg/s] = air_drag * area per vertex = (0.01 / unit) * air_damping
    air_damping = float(air_drag) * float(area) / int(vertex_count) * BLENDER_TIME_UNIT \
        / BLENDER_DRAG_FACTOR
    return {"mass": mass, "time_scale": time_scale, "air_damping": air_damping}


# --------------------------------------------------------------------------
# Blender side
# --------------------------------------------------------------------------
def _mesh_from_arrays(bpy, name: str, verts: np.ndarray, faces: np.ndarray):
    """Create a ``bpy.types.Mesh`` from ``(v,3)`` float verts and ``(k,m)`` int
    faces with the data API (foreach_set, no Python loop; vertex order kept)."""
    faces = np.asarray(faces, dtype=np.int32)
    k, m = faces.shape
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(verts))
    mesh.vertices.foreach_set("co", np.asarray(verts, dtype=np.float32).ravel())
    mesh.loops.add(k * m)
    mesh.loops.foreach_set("vertex_index", faces.ravel())
    mesh.polygons.add(k)
    mesh.polygons.foreach_set("loop_start", np.arange(0, k * m, m, dtype=np.int32))
    mesh.update(calc_edges=True)
    if mesh.validate():
        raise RuntimeError(f"mesh {name!r} was invalid and had to be corrected")
    return mesh


def _uv_sphere_mesh(bpy, name: str):
    """UV sphere mesh (SPHERE_SEGMENTS x SPHERE_RINGS, radius SPHERE_RADIUS)
    centred on its object origin, built with bmesh (no operator context)."""
    import bmesh

    bm = bmesh.new()
    bmesh.ops.create_uvsphere(
        bm, u_segments=SPHERE_SEGMENTS, v_segments=SPHERE_RINGS, radius=SPHERE_RADIUS
    )
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    return mesh


def build_scene(n: int, frames: int = 60, fps: int = 24, threads: int | None = None,
                settings: dict | None = None):
    """Reset Blender to an empty factory file and build the benchmark scene.

    Args:
        n: cloth vertices per side.
        frames: number of simulated (timed) frames; the cloth point cache
            covers frames ``1 .. frames + 1`` (frame 1 = rest state).
        fps: scene frame rate (frames per second, ``fps_base`` = 1).  Has
            no effect on Blender's cloth (see the module docstring).
        threads: ``None`` -> ``render.threads_mode = 'AUTO'``; an int ->
            ``'FIXED'`` with that many threads.  NOTE: this is a *render*
            setting and does not change the cloth solver; see
            :func:`run_blender_cloth`.
        settings: ``ClothSettings`` attributes to set (e.g. from
            :func:`like_for_like_settings`); ``None`` keeps Blender's defaults.

    Returns:
        ``(scene, cloth_obj, rest, faces)``; ``rest`` is the ``(n*n, 3)``
        float64 world-space rest positions (metres), ``faces`` the
        ``((n-1)**2, 4)`` int64 quads from :func:`grid_cloth`.
    """
    import bpy

    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.render.fps = fps
    scene.render.fps_base = 1.0
    scene.frame_start = 1
    scene.frame_end = frames + 1
    scene.use_gravity = True
    scene.gravity = (0.0, 0.0, -9.81)
    if threads is None:
        scene.render.threads_mode = "AUTO"
    else:
        scene.render.threads_mode = "FIXED"
        scene.render.threads = int(threads)

    # Ground: one big quad at z = GROUND_Z, normal +z.
    h = 0.5 * GROUND_SIZE
    ground_v = np.array([[-h, -h, GROUND_Z], [h, -h, GROUND_Z], [h, h, GROUND_Z], [-h, h, GROUND_Z]])
    ground = bpy.data.objects.new("Ground", _mesh_from_arrays(bpy, "Ground", ground_v, [[0, 1, 2, 3]]))
    scene.collection.objects.link(ground)
    ground.modifiers.new("Collision", "COLLISION")

    # Sphere resting on the ground.
    sphere = bpy.data.objects.new("Sphere", _uv_sphere_mesh(bpy, "Sphere"))
    sphere.location = SPHERE_CENTER
    scene.collection.objects.link(sphere)
    sphere.modifiers.new("Collision", "COLLISION")

    # Cloth: identity object transform, vertices already in world space.
    verts, faces = grid_cloth(n, CLOTH_SIZE, CLOTH_Z)
    cloth = bpy.data.objects.new("Cloth", _mesh_from_arrays(bpy, "Cloth", verts, faces))
    scene.collection.objects.link(cloth)
    mod = cloth.modifiers.new("Cloth", "CLOTH")
    mod.settings.quality = CLOTH_QUALITY
    for key, value in (settings or {}).items():
        if not hasattr(mod.settings, key):
            raise ValueError(f"cloth settings: Blender's ClothSettings has no {key!r}")
        setattr(mod.settings, key, value)
    mod.collision_settings.use_collision = True  # default, explicit
    mod.collision_settings.use_self_collision = False  # default, explicit
    mod.point_cache.frame_start = 1
    mod.point_cache.frame_end = frames + 1

    scene.frame_set(scene.frame_start)  # settle depsgraph / reset cache (untimed)
    return scene, cloth, verts, faces


def evaluated_positions(obj, depsgraph) -> np.ndarray:
    """World-space evaluated vertex positions of ``obj``.

    Returns:
        ``(v, 3)`` float64, metres: the evaluated mesh's vertex ``co``
        (read with ``foreach_get`` into float32) transformed by the
        evaluated object's ``matrix_world``.
    """
    obj_eval = obj.evaluated_get(depsgraph)
    mesh = obj_eval.data
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3).astype(np.float64)
    mw = np.array(obj_eval.matrix_world, dtype=np.float64)  # (4, 4)
    return co @ mw[:3, :3].T + mw[:3, 3]


def run_blender_cloth(n: int, frames: int = 60, fps: int = 24, threads: int | None = None,
                      settings: dict | None = None) -> dict:
    """Simulate the benchmark scene with Blender's Cloth modifier and time it.

    The scene is rebuilt from a fresh empty file (see :func:`build_scene`),
    then ``scene.frame_set(f)`` is called for ``f = 1 .. frames + 1`` in
    order.  Frame 1 is the rest state and is not timed; each later
    ``frame_set`` (which evaluates the depsgraph, i.e. runs one frame of
    cloth simulation incl. its ``quality`` substeps and collisions) is timed
    with ``time.perf_counter``.  Nominally ``frames`` = 60 at 24 fps is 2.5 s,
    but Blender's cloth ignores ``fps`` (see the module docstring): ``fps``
    only sets ``scene.render.fps``.  Reading the result afterwards costs
    < 1 ms: the evaluation really happens inside ``frame_set``.

    Threads: ``threads`` sets ``scene.render.threads_mode/threads`` as asked,
    but in the bpy module this is a render-only setting and does NOT affect
    the cloth solver (measured: N = 48 uses ~1.78 CPU-seconds per wall-second
    on 2 cores with threads=1, 2 or AUTO alike).  The solver runs on
    Blender's process-wide TBB scheduler, and neither ``bpy.app`` nor
    ``bpy.utils`` exposes a thread-count control (the module does not parse
    Blender's ``--threads`` command-line flag).  To pin the solver to one core, restrict the process CPU
    affinity before ``import bpy`` (``os.sched_setaffinity(0, {0})`` or
    ``taskset -c 0 python ...``); measured CPU/wall is then 1.00.

    Returns:
        dict with
        ``"ms_per_frame"``: list of ``frames`` floats, wall milliseconds per
        simulated frame;
        ``"median_ms"``: float, median of the above;
        ``"positions"``: ``(n*n, 3)`` float64 world-space evaluated vertex
        positions (metres) at the last frame (``frames + 1``);
        ``"rest"``: ``(n*n, 3)`` float64 rest positions (metres);
        ``"faces"``: ``((n-1)**2, 4)`` int64 quads;
        ``"edges"``: ``(2*n*(n-1), 2)`` int64 unique mesh edges;
        ``"blender_version"``: str, e.g. ``"5.0.1"``;
        ``"settings"``: dict of the cloth's mass (kg per vertex), time_scale,
        air_damping and quality as run.
    """
    import bpy

    scene, cloth, rest, faces = build_scene(n, frames, fps, threads, settings)
    used = {k: getattr(cloth.modifiers["Cloth"].settings, k)
            for k in ("mass", "time_scale", "air_damping", "quality")}

    ms = []
    scene.frame_set(1)  # rest state, untimed
    for f in range(2, frames + 2):
        t0 = time.perf_counter()
        scene.frame_set(f)
        ms.append((time.perf_counter() - t0) * 1e3)

    depsgraph = bpy.context.evaluated_depsgraph_get()
    positions = evaluated_positions(cloth, depsgraph)
    if positions.shape != rest.shape:
        raise RuntimeError(f"evaluated cloth has {positions.shape} verts, expected {rest.shape}")

    return {
        "ms_per_frame": ms,
        "median_ms": float(np.median(ms)),
        "positions": positions,
        "rest": rest,
        "faces": faces,
        "edges": edge_pairs(faces),
        "blender_version": bpy.app.version_string,
        "settings": used,
    }


def _main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--big", action="store_true", help="also run N = 128")
    p.add_argument("--frames", type=int, default=60)
    p.add_argument("--fps", type=int, default=24)
    p.add_argument("--threads", type=int, default=None, help="render threads (FIXED); default AUTO")
    args = p.parse_args(argv)

    sizes = [32, 64] + ([128] if args.big else [])
    for n in sizes:
        t0 = time.perf_counter()
        r = run_blender_cloth(n, frames=args.frames, fps=args.fps, threads=args.threads)
        wall = time.perf_counter() - t0
        s = strain_summary(edge_strain(r["positions"], r["rest"], r["edges"]))
        lm = grid_landmarks(n)
        z = r["positions"][:, 2]
        print(
            f"Blender {r['blender_version']}  N={n:4d}  frames={args.frames}@{args.fps}fps  "
            f"median {r['median_ms']:8.2f} ms/frame  total {sum(r['ms_per_frame']) / 1e3:6.2f} s  "
            f"strain max {s['max']:.4f} p99 {s['p99']:.4f}  "
            f"centre z {z[lm['center']]:.4f}  corners z max {z[lm['corners']].max():.4f}  "
            f"min z {z.min():.4f}  wall {wall:6.2f} s",
            flush=True,
        )


if __name__ == "__main__":
    _main()
