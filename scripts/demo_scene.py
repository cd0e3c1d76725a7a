"""The demo scene's layout and sizes, and how its outcome is measured (shared by demo.py and
tests/blender/test_demo.py)."""

import numpy as np

# scene layout [m]: z up; the camera looks from -Y
TABLE_TOP = 0.75                 # height of the table top's upper surface
TABLE_SIZE = (1.5, 1.1, 0.06)    # full extents of the table top
TABLE_XY = (0.0, 0.4)
BALL_RADIUS = 0.15
BALL_XY = (0.42, 0.55)
POLE_XY = (-2.9, 0.9)
POLE_HEIGHT = 3.0
FLAG_SIZE = (1.2, 0.8)           # along the wind (x), height (z)
GRASS_XY = (-1.5, -1.3)
RAMP_CENTRE = (2.65, 0.4)
RAMP_SIZE = (2.4, 1.6, 0.08)
RAMP_ANGLE = 18.0                # degrees; falls towards +x
CRATE_SIZE = 0.4
JELLY_SIZE = 0.4

# the wind, and what the demo sets when the scene has the property (checked with hasattr)
WIND = {"wind_direction": (1.0, 0.25, 0.0), "wind_strength": 5.0, "wind_turbulence": 0.6,
        "wind_seed": 3}


class Config:
    """Sizes of the run. The defaults are the demo's; Config.small() is the test's."""

    def __init__(self, frames=120, cloth_res=(56, 44), flag_res=(30, 20), jelly_cuts=4,
                 substeps=40, blades=12, blade_segments=6, sheet_res=36, pile_crates=6):
        self.frames = frames
        self.cloth_res = cloth_res           # vertices along x, y of the tablecloth
        self.flag_res = flag_res             # vertices along x (wind), z of the flag
        self.jelly_cuts = jelly_cuts         # subdivision cuts per edge of the jelly cube
        self.substeps = substeps
        self.blades = blades
        self.blade_segments = blade_segments
        self.sheet_res = sheet_res           # vertices along each side of the statue's sheet
        self.pile_crates = pile_crates       # crates dropped into the pile

    @classmethod
    def small(cls, frames=48):
        # the flag 16 x 11: at 12 x 9 (10 cm triangles, 8 mm thick, 20 substeps) it crossed
        # itself by frame 72, and since edge pairs let go beyond their contact distance on
        # their wrong side (2026-11-30) it no longer came near itself in 48 frames (4.0 cm);
        # at 16 x 11 it folds to 1.8 cm and crosses itself in none of 96 frames
        return cls(frames=frames, cloth_res=(22, 18), flag_res=(16, 11), jelly_cuts=2,
                   substeps=20, blades=4, blade_segments=4, sheet_res=14, pile_crates=4)


# ---------------------------------------------------------------------- measuring
def world_frames(ext, obj):
    """(frames, n, 3) world positions of a deforming object's bake, or (frames, 4, 4) world
    matrices of a rigid one, read back through the extension's cache."""
    data = ext.addon.bake.load(obj)
    if data is None:
        raise RuntimeError(f"{obj.name}: no usable bake ({obj.get('verlet_status', '')})")
    header, frames = data
    frames = np.asarray(frames, dtype=np.float64)
    if header["layout"] == "matrices":
        return frames
    m = np.array(obj.matrix_world, dtype=np.float64)     # deforming objects do not move
    return frames @ m[:3, :3].T + m[:3, 3]


def _tris(obj):
    out = []
    for p in obj.data.polygons:
        v = list(p.vertices)
        out += [(v[0], v[k], v[k + 1]) for k in range(1, len(v) - 1)]
    return np.array(out, dtype=np.int64)


def _volume(x, tris):
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    return abs(float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum()) / 6.0)


def _rebound(z):
    """The height a falling body regains after its first impact, as a fraction of its drop:
    (highest centre after the first impact - final) / (start - final). With no restitution it
    should stay near 0; well above it the contact added energy."""
    z = np.asarray(z, dtype=np.float64)
    drop = z[0] - z[-1]
    if drop <= 1e-6:
        return 0.0
    impact = int(np.argmax(np.diff(z) > -1e-4))        # the first frame that stops falling
    return float((z[impact:].max() - z[-1]) / drop)


def measure(ext, objs):
    """Physics facts of the baked scene, as numbers (see the keys); reads the bake cache."""
    fps = 24.0
    facts = {}
    # tablecloth over the table
    cloth = objs["tablecloth"]
    xc = world_frames(ext, cloth)
    rest = xc[0]
    tx, ty = TABLE_XY
    centre = int(np.argmin(np.hypot(rest[:, 0] - tx, rest[:, 1] - ty)))
    last = xc[-1]
    sx, sy, _ = TABLE_SIZE
    over = (np.abs(last[:, 0] - tx) <= sx / 2) & (np.abs(last[:, 1] - ty) <= sy / 2)
    bx, by = BALL_XY
    near_ball = np.hypot(last[:, 0] - bx, last[:, 1] - by) < BALL_RADIUS
    facts["cloth_centre_above_top"] = float(last[centre, 2] - TABLE_TOP)
    facts["cloth_fraction_hanging"] = float(np.mean(last[:, 2] < TABLE_TOP - 0.05))
    facts["cloth_lowest"] = float(last[:, 2].min())
    facts["cloth_peak_over_ball"] = float(last[near_ball, 2].max()) if near_ball.any() else 0.0
    facts["cloth_on_top_gap"] = float(np.median(last[over & ~near_ball, 2]) - TABLE_TOP) \
        if np.any(over & ~near_ball) else float("nan")
    facts["cloth_speed_end"] = float(np.abs(xc[-1] - xc[-2]).max() * fps)
    e = np.array([ed.vertices[:] for ed in cloth.data.edges])
    l0 = np.linalg.norm(rest[e[:, 0]] - rest[e[:, 1]], axis=1)
    l1 = np.linalg.norm(last[e[:, 0]] - last[e[:, 1]], axis=1)
    facts["cloth_max_strain"] = float(np.max(np.abs(l1 / l0 - 1.0)))
    facts["cloth_p99_strain"] = float(np.percentile(np.abs(l1 / l0 - 1.0), 99))

    # the flag
    flag = objs["flag"]
    xf = world_frames(ext, flag)
    fr = xf[0]
    tip = np.nonzero(np.isclose(fr[:, 0], fr[:, 0].max()))[0]   # the free edge
    pin = np.nonzero(np.isclose(fr[:, 0], fr[:, 0].min()))[0]
    disp = np.linalg.norm(xf[:, tip] - fr[tip], axis=2).mean(axis=1)   # (frames,)
    half = len(xf) // 2
    facts["flag_tip_disp_end"] = float(disp[-1])
    facts["flag_tip_disp_max"] = float(disp.max())
    facts["flag_tip_disp_std_2nd_half"] = float(disp[half:].std())
    wd = np.array(WIND["wind_direction"], dtype=np.float64)
    wd /= np.linalg.norm(wd)
    # how far the free edge stands out from the pole along the wind (rest = the flag's width)
    facts["flag_reach_along_wind"] = float(((xf[-1, tip] - xf[-1, pin].mean(axis=0)) @ wd).mean())
    facts["flag_tip_height_drop"] = float(fr[tip, 2].mean() - xf[-1, tip, 2].mean())
    facts["flag_pin_error"] = float(np.abs(xf[:, pin] - fr[pin]).max())

    # grass
    grass = objs["grass"]
    xg = world_frames(ext, grass)
    g0 = xg[0]
    tips = np.nonzero(g0[:, 2] > g0[:, 2].max() - 0.25)[0]
    roots = np.nonzero(np.isclose(g0[:, 2], 0.0))[0]
    sway = np.linalg.norm(xg[:, tips] - g0[tips], axis=2).mean(axis=1)
    facts["grass_tip_sway_max"] = float(sway.max())
    facts["grass_tip_sway_range_2nd_half"] = float(np.ptp(sway[half:]))
    facts["grass_tip_height_ratio"] = float(xg[-1, tips, 2].mean() / g0[tips, 2].mean())
    facts["grass_root_error"] = float(np.abs(xg[:, roots] - g0[roots]).max())

    # crate: on the ramp or the ground, at rest
    crate = objs["crate"]
    mc = world_frames(ext, crate)                  # (frames, 4, 4)
    h = CRATE_SIZE / 2
    corners = np.array([[a, b, c, 1.0] for a in (-h, h) for b in (-h, h) for c in (-h, h)])
    # the cache holds the crate object's world matrix per frame; its mesh is a cube of
    # CRATE_SIZE centred on the origin, so its corners are (+-h, +-h, +-h) in object space
    ramp = objs["ramp"]
    mr = np.array(ramp.matrix_world, dtype=np.float64)
    n_ramp = mr[:3, 2] / np.linalg.norm(mr[:3, 2])
    top_point = mr[:3, 3] + n_ramp * RAMP_SIZE[2] / 2

    def rest_gap(m):
        w = (corners @ m.T)[:, :3]
        over_ramp = np.abs(((w - mr[:3, 3]) @ (mr[:3, 0] / np.linalg.norm(mr[:3, 0])))).min() \
            <= RAMP_SIZE[0] / 2
        gap_ramp = float(((w - top_point) @ n_ramp).min())
        gap_ground = float(w[:, 2].min())
        return over_ramp, gap_ramp, gap_ground

    over_ramp, gap_ramp, gap_ground = rest_gap(mc[-1])
    on_ramp = over_ramp and abs(gap_ramp) < abs(gap_ground)
    facts["crate_on"] = "ramp" if on_ramp else "ground"
    facts["crate_gap"] = gap_ramp if on_ramp else gap_ground
    facts["crate_speed_end"] = float(np.linalg.norm(mc[-1, :3, 3] - mc[-2, :3, 3]) * fps)
    facts["crate_drop"] = float(mc[0, 2, 3] - mc[-1, 2, 3])
    facts["crate_rebound"] = _rebound(mc[:, 2, 3])
    # a bounce leaves the surface; a tumble about an edge raises the centre but keeps a corner
    # on it: the largest gap of the lowest corner over the ramp from the first touch on
    gaps = np.array([rest_gap(m)[1] for m in mc])
    touched = np.nonzero(gaps < 0.01)[0]
    facts["crate_lift"] = float(gaps[touched[0]:].max()) if len(touched) else float("inf")
    facts["crate_slide"] = float(np.linalg.norm(mc[-1, :2, 3] - mc[0, :2, 3]))
    # rigidity: the corner-to-corner distances of the rigid transform are exact by construction;
    # the determinant shows the matrix stays a rotation
    facts["crate_det"] = float(np.linalg.det(mc[-1, :3, :3]))

    # jelly: volume kept, resting
    jelly = objs["jelly"]
    xj = world_frames(ext, jelly)
    tris = _tris(jelly)
    vols = np.array([_volume(x, tris) for x in xj])
    facts["jelly_volume_ratio_end"] = float(vols[-1] / vols[0])
    facts["jelly_volume_ratio_min"] = float(vols.min() / vols[0])
    facts["jelly_volume_ratio_max"] = float(vols.max() / vols[0])
    jl = xj[-1]
    facts["jelly_gap_ground"] = float(jl[:, 2].min())
    facts["jelly_lowest"] = float(jl[:, 2].min())
    facts["jelly_rebound"] = _rebound(xj[:, :, 2].mean(axis=1))
    facts["jelly_speed_end"] = float(np.abs(xj[-1] - xj[-2]).max() * fps)
    # wobble: how far the jelly is from a rigid motion of its rest shape (RMS over vertices)
    rigid = ext.solver.geometry.rigid_transform
    dev = []
    for x in xj:
        m = rigid(xj[0], x)
        dev.append(np.sqrt(np.mean(np.sum((xj[0] @ m[:3, :3].T + m[:3, 3] - x) ** 2, axis=1))))
    facts["jelly_wobble_max"] = float(max(dev) / JELLY_SIZE)
    facts["jelly_wobble_end"] = float(dev[-1] / JELLY_SIZE)
    return facts
