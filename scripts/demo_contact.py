"""The demo's contact scenes (issue 9): a sheet draped over a statue that is a mesh collider
(Suzanne on a plinth: no primitive, so AUTO reads it as MESH), a pile of crates (RIGID bodies
dropped onto each other), and the flag's self-collision (demo.py turns it on; measured here: how
near its folds come to each other, and how many of its edges pass through it in the worst
frame). Shared by demo.py and tests/blender/test_demo.py, as demo_ragdoll.py is.
"""

import numpy as np

from demo_scene import _tris

STATUE_XY = (1.55, -1.45)      # the plinth's centre [m]
PLINTH_SIZE = (0.45, 0.4, 0.8)  # its full extents; Suzanne sits on it
STATUE_SIZE = 0.6              # primitive_monkey_add's size: about 0.8 m ear to ear
SHEET_SIZE = 1.3               # the draped sheet, square [m]
SHEET_THICKNESS = 0.01         # [m] its collision offset
SHEET_DROP = 0.15              # [m] from the statue's top
SHEET_DENSITY = 0.4            # [kg/m^2] a linen: the gusts ruffle it, do not blow it off
PILE_XY = (-0.55, -1.45)       # where the crates fall
PILE_CRATE = 0.3               # [m] their edge
PILE_LAYERS = (3, 2, 1)        # crates per layer, bottom up (then one per layer)
PILE_SEED = 5                  # their offsets and turns
REST_SPEED = 0.05              # [m/s] a body rests when every vertex (or corner) is slower
FLAG_THICKNESS = 0.008         # [m] the flag's collision offset (self-collision needs one)
FOLD_APART = 0.2               # [m] two flag vertices this far apart at rest are not neighbours


def add(cfg, kind):
    """The statue and its sheet, and the crate pile: {role: object}. kind(obj, k, **settings)
    is demo.build_scene's, which sets an object's Verlet kind and settings."""
    import bpy
    objs = {}
    sx, sy = STATUE_XY
    pw, pd, ph = PLINTH_SIZE
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(sx, sy, ph / 2))
    plinth = bpy.context.view_layer.objects.active
    plinth.name = "Plinth"
    plinth.scale = (pw, pd, ph)
    kind(plinth, "COLLIDER", friction=0.6)
    plinth.color = (0.55, 0.55, 0.58, 1.0)
    objs["plinth"] = plinth
    # Suzanne faces -Y (the camera); her lowest vertex on the plinth's top
    bpy.ops.mesh.primitive_monkey_add(size=STATUE_SIZE, location=(sx, sy, 0.0))
    statue = bpy.context.view_layer.objects.active
    statue.name = "Statue"
    bpy.ops.object.shade_smooth()
    low = min(v.co.z for v in statue.data.vertices)
    statue.location.z = ph - low
    kind(statue, "COLLIDER", friction=0.6)      # collider_shape AUTO: a mesh collider
    statue.color = (0.8, 0.75, 0.6, 1.0)
    objs["statue"] = statue
    top = ph - low + max(v.co.z for v in statue.data.vertices)
    n = cfg.sheet_res
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=n - 1, y_subdivisions=n - 1, size=1.0,
                                    location=(sx, sy, top + SHEET_DROP))
    sheet = bpy.context.view_layer.objects.active
    sheet.name = "Sheet"
    sheet.scale = (SHEET_SIZE, SHEET_SIZE, 1.0)
    bpy.ops.object.transform_apply(location=False, rotation=False, scale=True)
    bpy.ops.object.shade_smooth()
    # it folds onto itself where it gathers about the statue's neck and the plinth
    kind(sheet, "CLOTH", mass=SHEET_DENSITY * SHEET_SIZE ** 2, thickness=SHEET_THICKNESS,
         friction=0.6, self_collision=True)
    sheet.color = (0.75, 0.2, 0.45, 1.0)
    objs["sheet"] = sheet

    # the crates: dropped in layers (three, two, one), each a little off and turned, so
    # they land on each other and settle into a pile
    rng = np.random.default_rng(PILE_SEED)
    px, py = PILE_XY
    layer, slot, sizes = 0, 0, list(PILE_LAYERS)
    for i in range(cfg.pile_crates):
        if slot == (sizes[layer] if layer < len(sizes) else 1):
            layer, slot = layer + 1, 0
        size = sizes[layer] if layer < len(sizes) else 1
        x = px + (slot - (size - 1) / 2) * (PILE_CRATE + 0.1)
        z = PILE_CRATE / 2 + 0.05 + layer * (PILE_CRATE + 0.15)
        off = rng.uniform(-0.03, 0.03, 2)
        yaw, tilt = rng.uniform(-0.2, 0.2), rng.uniform(-0.08, 0.08, 2)
        bpy.ops.mesh.primitive_cube_add(size=PILE_CRATE, location=(x + off[0], py + off[1], z),
                                        rotation=(tilt[0], tilt[1], yaw))
        crate = bpy.context.view_layer.objects.active
        crate.name = f"PileCrate{i}"
        kind(crate, "RIGID", mass=5.0, friction=0.6)
        crate.color = (0.62 - 0.04 * (i % 3), 0.4, 0.18, 1.0)
        objs[f"pile{i}"] = crate
        slot += 1
    return objs


def _statue_distance(ext, statue, x):
    """(n,) [m] unsigned distance of world points x (n, 3) to the statue's surface (its
    triangles in world space; the solver's closest point on a triangle)."""
    m = np.array(statue.matrix_world, dtype=np.float64)
    v = np.array([vt.co[:] for vt in statue.data.vertices]) @ m[:3, :3].T + m[:3, 3]
    t = _tris(statue)
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    closest = ext.solver.collision.mesh_query.tri_closest
    best = np.full(len(x), np.inf)
    for lo in range(0, len(x), 256):           # 256 points x every triangle at a time
        q = x[lo:lo + 256, None, :]
        d2 = closest(q[..., 0], q[..., 1], q[..., 2], a[:, 0], a[:, 1], a[:, 2],
                     b[:, 0], b[:, 1], b[:, 2], c[:, 0], c[:, 1], c[:, 2])[0]
        best[lo:lo + 256] = np.sqrt(d2.min(axis=1))
    return best


def _crossings(ext, frames, tris):
    """The most mesh edges that pass through one of the mesh's own triangles in any frame (0:
    no layer crossed another; an edge through two triangles counts once)."""
    cross = ext.solver.geometry.self_intersections
    return max(len(np.unique(cross(x, tris)[:, 0])) for x in frames)


def _closest_fold(frames, rest, apart):
    """[m] the nearest any two vertices come that are at least ``apart`` from each other at
    rest (parts of the cloth that meet only by folding onto each other), over all frames."""
    far = np.linalg.norm(rest[:, None] - rest[None], axis=2) >= apart
    return float(min(np.linalg.norm(x[:, None] - x[None], axis=2)[far].min() for x in frames))


def measure(ext, objs, world_frames):
    """Facts of the contact scenes, as numbers (see the keys). world_frames is
    demo_scene.world_frames (the bake read back)."""
    fps = 24.0
    f = {}
    # the flag folds onto itself: how near its parts come, and that none passes another
    flag = objs["flag"]
    xf = world_frames(ext, flag)
    f["flag_crossings_max"] = _crossings(ext, xf, _tris(flag))
    f["flag_fold_closest"] = _closest_fold(xf, xf[0], FOLD_APART)

    # the sheet over the statue
    sheet, statue = objs["sheet"], objs["statue"]
    xs = world_frames(ext, sheet)
    last = xs[-1]
    d = _statue_distance(ext, statue, last)
    near = d < 3 * SHEET_THICKNESS
    f["sheet_statue_gap_min"] = float(d.min())
    f["sheet_on_statue_fraction"] = float(np.mean(near))
    top = max(v.co.z for v in statue.data.vertices) * statue.scale.z + statue.location.z
    f["statue_top"] = float(top)
    f["sheet_peak"] = float(last[:, 2].max())
    f["sheet_lowest"] = float(last[:, 2].min())
    f["sheet_crossings_max"] = _crossings(ext, xs, _tris(sheet))
    f["sheet_speed_end"] = float(np.abs(xs[-1] - xs[-2]).max() * fps)
    e = np.array([ed.vertices[:] for ed in sheet.data.edges])
    l0 = np.linalg.norm(xs[0][e[:, 0]] - xs[0][e[:, 1]], axis=1)
    l1 = np.linalg.norm(last[e[:, 0]] - last[e[:, 1]], axis=1)
    f["sheet_max_strain"] = float(np.max(np.abs(l1 / l0 - 1.0)))

    # the crate pile: every crate at rest, some on others, no crate's corner inside another
    keys = sorted((k for k in objs if k.startswith("pile")), key=lambda k: int(k[4:]))
    mats = np.stack([world_frames(ext, objs[k]) for k in keys])      # (c, frames, 4, 4)
    h = PILE_CRATE / 2
    cube = np.array([[a, b, c] for a in (-h, h) for b in (-h, h) for c in (-h, h)])
    rot, centre = mats[:, :, :3, :3], mats[:, :, :3, 3]
    corners = centre[:, :, None, :] + np.einsum("cfij,vj->cfvi", rot, cube)  # (c, f, 8, 3)
    speed = np.linalg.norm(corners[:, -1] - corners[:, -2], axis=2).max(axis=1) * fps
    f["pile_crates"] = len(keys)
    f["pile_resting"] = int(np.sum(speed < REST_SPEED))
    # on another crate: its lowest corner clear of the ground by more than a quarter edge (one
    # on the ground reads about 0, one on another crate about an edge)
    f["pile_stacked"] = int(np.sum(corners[:, -1, :, 2].min(axis=1) > 0.5 * h))
    f["pile_lowest"] = float(corners[:, :, :, 2].min())
    # the deepest corner of one crate inside another, over every frame (crate k's frame)
    depth = 0.0
    for k in range(len(keys)):
        # every crate's corners in crate k's frame, every frame
        q = np.einsum("fji,cfvj->cfvi", rot[k], corners - centre[k][None, :, None, :])
        inside = h - np.abs(q).max(axis=-1)                            # > 0: inside crate k
        inside[k] = -np.inf
        depth = max(depth, float(inside.max()))
    f["pile_overlap"] = max(depth, 0.0)
    return f


def lines(f):
    """The report's lines for these facts."""
    cm = 100.0
    return [
        f"    flag folding onto itself: its parts {FOLD_APART:.1f} m apart at rest came within "
        f"{f['flag_fold_closest'] * cm:.1f} cm (contact distance {2 * FLAG_THICKNESS * cm:.1f} "
        f"cm); edges through it at worst {f['flag_crossings_max']}",
        f"    sheet on the statue (a mesh collider): {f['sheet_on_statue_fraction'] * 100:.0f} % "
        f"lies on it, nearest {f['sheet_statue_gap_min'] * cm:.1f} cm (thickness "
        f"{SHEET_THICKNESS * cm:.1f} cm); peak {f['sheet_peak']:.2f} m (statue top "
        f"{f['statue_top']:.2f} m), hem down to {f['sheet_lowest']:.2f} m; edges through it "
        f"at worst {f['sheet_crossings_max']}, strain max {f['sheet_max_strain'] * 100:.1f} %",
        f"    crate pile: {f['pile_resting']} of {f['pile_crates']} at rest, "
        f"{f['pile_stacked']} on other crates, the deepest corner "
        f"{f['pile_overlap'] * 1e3:.1f} mm inside another",
    ]
