"""Scene builders shared by the Blender tests: small meshes built from NumPy arrays (no operator
context needed), so every test runs headless in a few seconds.

Everything here works on ``bpy.context.scene`` of the session the ``extension`` fixture prepared
(factory settings, empty, the extension registered).
"""

import bpy  # noqa: I001  (bpy first: bmesh is importable only once bpy is)
import bmesh
import numpy as np

# lowered from the product default (40) where the tests' physics allows: small, slow scenes
SUBSTEPS = 10


def link(obj):
    bpy.context.scene.collection.objects.link(obj)
    return obj


def grid_mesh(name, n=10, size=1.0, z=0.0):
    """An n x n vertex grid of quads, ``size`` metres square, centred on the origin at height
    z (object space)."""
    u = np.linspace(-size / 2, size / 2, n)
    xs, ys = np.meshgrid(u, u)
    verts = np.column_stack([xs.ravel(), ys.ravel(), np.full(n * n, z)])
    idx = np.arange(n * n).reshape(n, n)
    quads = np.stack([idx[:-1, :-1], idx[:-1, 1:], idx[1:, 1:], idx[1:, :-1]], -1).reshape(-1, 4)
    me = bpy.data.meshes.new(name)
    me.from_pydata(verts.tolist(), [], quads.tolist())
    me.update()
    return me


def cloth(name="Cloth", n=10, size=1.0, location=(0.0, 0.0, 1.0), **settings):
    """A CLOTH grid object; extra keywords go to obj.verlet."""
    obj = link(bpy.data.objects.new(name, grid_mesh(name, n, size)))
    obj.location = location
    obj.verlet.kind = "CLOTH"
    for k, v in settings.items():
        setattr(obj.verlet, k, v)
    return obj


def _bmesh_object(name, build, location, kind, rotation=(0.0, 0.0, 0.0)):
    bm = bmesh.new()
    build(bm)
    me = bpy.data.meshes.new(name)
    bm.to_mesh(me)
    bm.free()
    obj = link(bpy.data.objects.new(name, me))
    obj.location = location
    obj.rotation_euler = rotation
    obj.verlet.kind = kind
    return obj


def sphere(name="Ball", radius=0.5, location=(0.0, 0.0, 0.5), kind="COLLIDER"):
    return _bmesh_object(name, lambda bm: bmesh.ops.create_uvsphere(
        bm, u_segments=16, v_segments=8, radius=radius), location, kind)


def cube(name="Cube", size=0.4, location=(0.0, 0.0, 1.0), kind="RIGID", rotation=(0.0, 0.0, 0.0)):
    return _bmesh_object(name, lambda bm: bmesh.ops.create_cube(bm, size=size), location, kind,
                         rotation)


def ground(name="Ground", size=10.0, z=0.0):
    obj = link(bpy.data.objects.new(name, grid_mesh(name, 2, size)))
    obj.location.z = z
    obj.verlet.kind = "COLLIDER"
    return obj


def set_range(start, end, substeps=SUBSTEPS, iterations=1):
    """The scene's frame range (the Verlet range follows it) and the solver's step settings."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = start, end
    scene.frame_set(start)
    scene.verlet.substeps = substeps
    scene.verlet.iterations = iterations
    return scene


def drape_scene(n=12, frames=(1, 24), substeps=SUBSTEPS):
    """A 1.5 m cloth 0.3 m above a 0.5 m ball resting on the ground. Returns (cloth, ball)."""
    set_range(*frames, substeps=substeps)
    ground()
    ball = sphere(radius=0.5, location=(0.0, 0.0, 0.5))
    c = cloth(n=n, size=1.5, location=(0.0, 0.0, 1.3))
    return c, ball


def rigid_scene(frames=(1, 24), substeps=SUBSTEPS, rotation=(0.0, 0.0, 0.0)):
    """A 0.4 m rigid cube dropped from 0.6 m (its centre) onto the ground. Returns the cube."""
    set_range(*frames, substeps=substeps)
    ground()
    return cube(size=0.4, location=(0.0, 0.0, 0.6), rotation=rotation)


TILT = (0.35, 0.2, 0.1)      # [rad] a tilted cube lands on a corner and tumbles: real rotations


def mixed_scene(n=8, frames=(1, 16), substeps=SUBSTEPS, rotation=TILT):
    """Cloth on a ball plus a tilted rigid cube to one side: (cloth, cube)."""
    c, _ = drape_scene(n=n, frames=frames, substeps=substeps)
    box = cube(size=0.4, location=(2.0, 0.0, 0.6), rotation=rotation)
    return c, box


def add_user_data(obj):
    """Give a mesh the user's own data our hash covers: a shape key with an offset, and a vertex
    group over its first row (also usable as a pin group). Returns the group name."""
    obj.shape_key_add(name="Basis", from_mix=False)
    kb = obj.shape_key_add(name="UserKey", from_mix=False)
    co = np.empty(len(kb.data) * 3, dtype=np.float32)
    kb.data.foreach_get("co", co)
    co[2::3] += 0.05
    kb.data.foreach_set("co", co)
    kb.value = 0.0                         # keep the rest shape the simulated one
    vg = obj.vertex_groups.new(name="Pins")
    n = int(round(np.sqrt(len(obj.data.vertices))))
    vg.add(list(range(n)), 1.0, "REPLACE")
    return vg.name


def evaluated_positions(obj, world=False):
    """(n, 3) float64 positions of obj's evaluated mesh (object space, or world)."""
    dg = bpy.context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(dg)
    me = ev.to_mesh()
    try:
        x = np.empty(len(me.vertices) * 3, dtype=np.float32)
        me.vertices.foreach_get("co", x)
        x = x.reshape(-1, 3).astype(np.float64)
        if world:
            m = np.array(ev.matrix_world, dtype=np.float64)
            x = x @ m[:3, :3].T + m[:3, 3]
        return x
    finally:
        ev.to_mesh_clear()


def display_key(obj):
    """(n, 3) positions stored in our "Verlet" shape key (None if absent)."""
    keys = obj.data.shape_keys
    if keys is None or "Verlet" not in keys.key_blocks:
        return None
    kb = keys.key_blocks["Verlet"]
    co = np.empty(len(kb.data) * 3, dtype=np.float32)
    kb.data.foreach_get("co", co)
    return co.reshape(-1, 3)


def bake_op():
    """verlet.bake synchronously; returns the operator result set."""
    return bpy.ops.verlet.bake("EXEC_DEFAULT")


def user_hashes(*objs):
    """{name: user_data_hash} of mesh objects: what must not change (bridge.user_data_hash)."""
    from verlet_physics.addon import bridge
    return {o.name: bridge.user_data_hash(o) for o in objs}


def world(obj, local):
    """(n, 3) local positions of obj to world space by its current matrix."""
    m = np.array(obj.matrix_world, dtype=np.float64)
    return np.asarray(local, dtype=np.float64) @ m[:3, :3].T + m[:3, 3]


def hashed(scene):
    """What addon/validity.settings_hash(scene) hashes: its data dict, with "objects" decoded to
    each object's settings dict (the marks such as restitution_acts included), so a test can
    check which marks a scene takes."""
    import json
    from verlet_physics.addon import validity
    seen, dumps = [], validity.json.dumps
    validity.json.dumps = lambda data, **kw: (seen.append(data), dumps(data, **kw))[1]
    try:
        validity.settings_hash(scene)
    finally:
        validity.json.dumps = dumps
    data = dict(seen[-1])
    data["objects"] = [json.loads(e) for e in data["objects"]]
    return data


def keyed_friction(scene, obj, low, high, last):
    """Keys obj's Friction at low on frame 1 and high on frame ``last``, simulates frames 1 to
    ``last`` (simscene.SceneSim, as a bake does) and returns its body's particles' Coulomb
    coefficients in the solver at frame 1 and at ``last``: ((n,), (n,)) float64."""
    from verlet_physics.addon import simscene
    obj.verlet.friction = low
    obj.keyframe_insert("verlet.friction", frame=1)
    obj.verlet.friction = high
    obj.keyframe_insert("verlet.friction", frame=last)
    scene.frame_set(1)
    ss = simscene.SceneSim(scene, bpy.context.evaluated_depsgraph_get())
    ids = next(b.ids for b in ss.bodies if b.name == obj.name)
    first = ss.sim.control.particle_friction[ids].copy()
    for f in range(2, last + 1):
        scene.frame_set(f)
        ss.step_to(bpy.context.evaluated_depsgraph_get())
    return first, ss.sim.control.particle_friction[ids].copy()
