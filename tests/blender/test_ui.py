"""The Physics-tab UI and the settings behind it: properties and their bounds, the stiffness ->
compliance mapping, the panels (poll and draw per kind, disabled while baked) and the presets
menu and operator.

Panels cannot be drawn into a real UILayout without a window, so draw() runs against a recording
stand-in (FakeLayout) that checks every call and keyword against bpy.types.UILayout's own RNA
definition and every drawn property against the data's RNA: a typo in a property name, an
unknown keyword or an unknown icon fails here as it would in Blender.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import import_bpy

bpy = import_bpy()

PANELS = ("PHYSICS_PT_verlet", "PHYSICS_PT_verlet_physical", "PHYSICS_PT_verlet_shape",
          "PHYSICS_PT_verlet_collisions", "PHYSICS_PT_verlet_forces", "PHYSICS_PT_verlet_cache")
KINDS = ("NONE", "CLOTH", "PLANT", "SOFT", "RIGID", "COLLIDER")
EXPORT_OPS = ("verlet.bake_to_shape_keys", "verlet.export_pc2", "verlet.export_alembic")
ALL_OPS = ("verlet.bake", "verlet.free_bake") + EXPORT_OPS

# the Cache panel's kernels line: these tests run where Numba loads (pinned in requirements.txt)
KERNELS = "Solver kernels: compiled (Numba)"


from ui_layout import (FakeLayout, activate, add_object, draw, drawn,  # noqa: E402,F401
                       settings_snapshot, ui)


# ---------------------------------------------------------------------- properties
def test_defaults_and_units(ui):
    obj = add_object("Cloth", "CLOTH")
    s, sc = obj.verlet, bpy.context.scene.verlet
    assert (s.stretch_stiffness, s.shear_stiffness) == (1.0, 1.0)
    assert ui.properties.compliance_from_stiffness(s.bend_stiffness) == pytest.approx(1e-3, rel=1e-5)
    assert (s.restitution, s.damping, s.pressure, s.use_volume) == (0.0, 0.0, 1.0, True)
    assert s.shape_stiffness == pytest.approx(0.5)
    assert (s.taper_group, s.preset) == ("", "")
    assert tuple(sc.wind_direction) == (1.0, 0.0, 0.0)
    assert (sc.wind_strength, sc.wind_turbulence, sc.wind_seed) == (0.0, 0.0, 0)
    assert (sc.air_drag, sc.gravity_scale, sc.damping) == (1.0, 1.0, 0.0)
    assert sc.bl_rna.properties["wind_strength"].unit == "VELOCITY"
    assert sc.bl_rna.properties["wind_direction"].subtype == "DIRECTION"
    # the pre-existing settings are unchanged
    assert (s.mass, s.friction, s.thickness, s.collider_shape) == (1.0, 0.5, 0.0, "AUTO")
    assert (sc.substeps, sc.iterations, sc.use_scene_range) == (40, 1, True)
    assert sc.use_sleep is True                            # the solver's default (issue 9)


def test_every_numeric_property_is_bounded(ui):
    obj = add_object("Body", "SOFT")
    kept_as_they_were = {"frame_start", "frame_end"}     # follow the scene's (Blender's bounds)
    checked = 0
    for settings in (obj.verlet, bpy.context.scene.verlet):
        for p in settings.bl_rna.properties:
            if p.type not in ("FLOAT", "INT") or p.identifier in kept_as_they_were:
                continue
            if p.identifier == "mass":       # no hard minimum: <= 0 is refused by name at build
                assert p.hard_max <= 2**31 - 1 and p.soft_min > 0
                continue
            assert p.hard_min >= -1000 and p.hard_max <= 2**31 - 1, p.identifier
            assert p.hard_min >= 0 or p.identifier == "wind_direction", p.identifier
            value = [-1] * p.array_length if p.array_length else -1
            setattr(settings, p.identifier, value)
            got = getattr(settings, p.identifier)
            got = got[0] if p.array_length else got
            assert got == pytest.approx(max(p.hard_min, -1)), p.identifier
            setattr(settings, p.identifier, [1e12] * p.array_length if p.array_length
                    else (1e12 if p.type == "FLOAT" else 2**31 - 1))
            got = getattr(settings, p.identifier)
            assert (got[0] if p.array_length else got) == pytest.approx(p.hard_max), p.identifier
            checked += 1
    assert checked == 21      # 11 object + 10 scene numeric settings (substeps: at most 1000)
    assert bpy.context.scene.verlet.substeps == 1000


def test_negative_values_clamp_to_their_minimum(ui):
    obj = add_object("Cloth", "CLOTH")
    s, sc = obj.verlet, bpy.context.scene.verlet
    for name in ("stretch_stiffness", "restitution", "damping", "friction", "thickness"):
        setattr(s, name, -1.0)
        assert getattr(s, name) == 0.0, name
    s.mass, s.shape_stiffness, s.pressure = -1.0, -1.0, -1.0
    assert s.mass == 0.0             # then refused by name when built (test_faults)
    assert s.shape_stiffness == pytest.approx(1e-3)
    assert s.pressure == pytest.approx(0.01)
    s.restitution, s.damping = 5.0, 5.0
    assert (s.restitution, s.damping) == (1.0, 1.0)
    for name in ("wind_strength", "wind_turbulence", "air_drag", "gravity_scale", "damping"):
        setattr(sc, name, -1.0)
        assert getattr(sc, name) == 0.0, name
    sc.wind_seed = -5
    assert sc.wind_seed == 0


def test_nan_from_a_script_is_listed_by_invalid_settings(ui):
    obj = add_object("Cloth", "CLOTH")
    assert ui.properties.invalid_settings(obj.verlet) == []
    obj.verlet.damping = float("nan")           # Blender's clamp lets NaN through
    assert math.isnan(obj.verlet.damping)
    assert ui.properties.invalid_settings(obj.verlet) == ["damping"]
    sc = bpy.context.scene.verlet
    sc.wind_direction = (float("nan"), 0.0, 0.0)
    sc.gravity_scale = float("nan")
    assert sorted(ui.properties.invalid_settings(sc)) == ["gravity_scale", "wind_direction"]
    sc.air_drag = float("inf")                  # infinity clamps to the hard max
    assert sc.air_drag == 10000.0


def test_wind_velocity_normalises_the_direction(ui):
    sc = bpy.context.scene.verlet
    sc.wind_direction, sc.wind_strength = (3.0, -4.0, 0.0), 5.0
    assert np.allclose(ui.properties.wind_velocity(sc), [3.0, -4.0, 0.0])
    sc.wind_direction = (0.0, 0.0, 2.0)
    assert np.allclose(ui.properties.wind_velocity(sc), [0.0, 0.0, 5.0])
    sc.wind_direction = (0.0, 0.0, 0.0)
    assert np.array_equal(ui.properties.wind_velocity(sc), np.zeros(3))
    sc.wind_direction, sc.wind_strength = (1.0, 0.0, 0.0), 0.0
    assert np.array_equal(ui.properties.wind_velocity(sc), np.zeros(3))


# ---------------------------------------------------------------------- stiffness <-> compliance
def test_compliance_mapping_endpoints_and_decades(ui):
    c_of, s_of = ui.properties.compliance_from_stiffness, ui.properties.stiffness_from_compliance
    assert c_of(0.0) == 1.0
    assert c_of(1.0) == 0.0                          # inextensible, exactly
    assert s_of(0.0) == 1.0 and s_of(1.0) == 0.0 and s_of(50.0) == 0.0
    s = np.linspace(0.0, 1.0, 201)
    c = c_of(s)
    assert np.all(np.diff(c) < 0)                    # strictly decreasing
    # one decade of compliance per 0.125 of stiffness; the shift that makes stiffness 1 exactly
    # 0 bends this only near the stiff end (10.09 instead of 10 between 0.625 and 0.75)
    for a in (0.0, 0.125, 0.25, 0.375):
        assert c_of(a) / c_of(a + 0.125) == pytest.approx(10.0, rel=1e-4)
    for a in (0.5, 0.625):
        assert c_of(a) / c_of(a + 0.125) == pytest.approx(10.0, rel=1e-2)
    assert c_of(0.375) == pytest.approx(1e-3, rel=1e-4)
    assert c_of(0.5) == pytest.approx(1e-4, rel=1e-3)
    assert c_of(-1.0) == 1.0 and c_of(2.0) == 0.0   # clamped to [0, 1]
    with pytest.raises(ValueError, match="stiffness"):
        c_of(float("nan"))
    with pytest.raises(ValueError, match="compliance"):
        s_of(-1e-3)


def test_compliance_mapping_round_trips(ui):
    c_of, s_of = ui.properties.compliance_from_stiffness, ui.properties.stiffness_from_compliance
    s = np.linspace(0.0, 1.0, 101)
    assert np.allclose(s_of(c_of(s)), s, rtol=0, atol=1e-12)
    for x in s:
        assert s_of(c_of(float(x))) == pytest.approx(float(x), abs=1e-12)
    c = np.array([0.0, 1e-9, 1e-7, 5e-6, 2e-5, 1e-4, 2e-3, 1e-2, 0.5, 1.0])
    assert np.allclose(c_of(s_of(c)), c, rtol=1e-9, atol=1e-20)
    # through a float32 Blender property, a preset compliance survives to 1e-5
    obj = add_object("Cloth", "CLOTH")
    for value in c[1:-1]:
        obj.verlet.bend_stiffness = s_of(value)
        assert c_of(obj.verlet.bend_stiffness) == pytest.approx(value, rel=1e-5)


# ---------------------------------------------------------------------- state
def test_state_reads_the_bake_marks(ui):
    st = ui.state
    obj = add_object("Cloth", "CLOTH")
    scene = bpy.context.scene
    assert (st.has_bake(obj), st.status_text(obj), st.last_error(scene)) == (False, "Not baked", "")
    assert (st.has_bake(None), st.status_text(None), st.last_error(None)) == (False, "Not baked", "")
    obj["verlet_baked"], obj["verlet_status"] = True, "Baked 1-48, on disk"
    scene["verlet_error"] = "Cloth: pin group 'Pins' is empty"
    assert st.has_bake(obj) is True
    assert st.status_text(obj) == "Baked 1-48, on disk"
    assert st.last_error(scene) == "Cloth: pin group 'Pins' is empty"
    del obj["verlet_baked"]
    assert st.has_bake(obj) is False


# ---------------------------------------------------------------------- panels
EXPECTED_PANELS = {
    "NONE": {"PHYSICS_PT_verlet"},
    "CLOTH": set(PANELS),
    "PLANT": set(PANELS),
    "SOFT": set(PANELS),
    "RIGID": set(PANELS) - {"PHYSICS_PT_verlet_shape"},
    "COLLIDER": {"PHYSICS_PT_verlet", "PHYSICS_PT_verlet_collisions", "PHYSICS_PT_verlet_cache"},
}


def test_panels_registered_like_blenders_physics_panels(ui):
    for pid in PANELS:
        cls = getattr(bpy.types, pid)
        assert (cls.bl_space_type, cls.bl_region_type, cls.bl_context) == \
            ("PROPERTIES", "WINDOW", "physics")
        assert getattr(cls, "bl_parent_id", "") == ("" if pid == "PHYSICS_PT_verlet"
                                                    else "PHYSICS_PT_verlet")
    assert bpy.types.PHYSICS_PT_verlet.bl_label == "Verlet Physics"
    labels = [getattr(bpy.types, pid).bl_label for pid in PANELS[1:]]
    assert labels == ["Physical Properties", "Shape", "Collisions", "Forces", "Cache"]
    assert hasattr(bpy.types, "VERLET_MT_presets")
    assert hasattr(bpy.ops.verlet, "apply_preset")


def test_poll_per_kind(ui):
    obj = add_object("Thing")
    for kind in KINDS:
        obj.verlet.kind = kind
        ctx = SimpleNamespace(object=obj, scene=bpy.context.scene)
        shown = {pid for pid in PANELS if getattr(bpy.types, pid).poll(ctx)}
        assert shown == EXPECTED_PANELS[kind], kind
    empty = bpy.data.objects.new("Empty", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.verlet.kind = "CLOTH"
    for target in (empty, None):
        ctx = SimpleNamespace(object=target, scene=bpy.context.scene)
        assert not any(getattr(bpy.types, pid).poll(ctx) for pid in PANELS)


EXPECTED_PROPS = {
    ("PHYSICS_PT_verlet", None): ["kind"],
    ("PHYSICS_PT_verlet_physical", "CLOTH"): ["mass", "damping", "animated",
                                              "stretch_stiffness", "shear_stiffness",
                                              "bend_stiffness"],
    ("PHYSICS_PT_verlet_physical", "PLANT"): ["mass", "damping", "animated",
                                              "stretch_stiffness", "shear_stiffness",
                                              "bend_stiffness"],
    ("PHYSICS_PT_verlet_physical", "SOFT"): ["mass", "damping", "animated", "shape_stiffness",
                                             "stretch_stiffness", "use_volume", "pressure"],
    ("PHYSICS_PT_verlet_physical", "RIGID"): ["mass", "damping", "animated"],
    ("PHYSICS_PT_verlet_collisions", "COLLIDER"): ["collider_shape", "thickness", "friction",
                                                   "restitution"],
    ("PHYSICS_PT_verlet_collisions", "CLOTH"): ["thickness", "friction", "restitution",
                                                "self_collision"],
    ("PHYSICS_PT_verlet_collisions", None): ["thickness", "friction", "restitution"],
    ("PHYSICS_PT_verlet_forces", None): ["gravity_scale", "damping", "air_drag", "wind_strength",
                                         "wind_direction", "wind_turbulence", "wind_seed"],
    ("PHYSICS_PT_verlet_cache", None): ["use_scene_range", "frame_start", "frame_end",
                                        "substeps", "iterations", "contact_iterations",
                                        "use_sleep"],
}


def test_draw_every_panel_for_every_kind(ui):
    obj = add_object("Thing")
    obj.vertex_groups.new(name="Pins")
    for kind in KINDS:
        obj.verlet.kind = kind
        for pid in sorted(EXPECTED_PANELS[kind]):
            log = draw(pid, obj)
            props = drawn(log, "prop")
            if pid == "PHYSICS_PT_verlet_shape":
                assert drawn(log, "prop_search") == (["pin_group", "taper_group"]
                                                     if kind == "PLANT" else ["pin_group"])
                assert all(e.search == (obj, "vertex_groups")
                           for e in log if e.what == "prop_search")
                continue
            expected = EXPECTED_PROPS.get((pid, kind), EXPECTED_PROPS.get((pid, None)))
            assert props == expected, (pid, kind)
            assert all(e.enabled for e in log if e.what in ("prop", "prop_search")), (pid, kind)
            if pid == "PHYSICS_PT_verlet_forces":
                assert all(e.data == bpy.context.scene.verlet for e in log if e.what == "prop")
            if pid == "PHYSICS_PT_verlet_cache":
                keys = ("verlet.bake_to_keyframes",) if kind == "RIGID" else ()
                assert drawn(log, "operator") == list(ALL_OPS[:2] + keys + ALL_OPS[2:])
                labels = [e.name for e in log if e.what == "label"]
                assert labels == (["Colliders follow their animation (not cached)"]
                                  if kind == "COLLIDER" else ["Not baked"]) + [KERNELS]
                assert all(e.enabled for e in log if e.what == "operator")
        header = draw("PHYSICS_PT_verlet", obj, "draw_header_preset")
        assert drawn(header, "menu") == ([] if kind == "COLLIDER" else ["VERLET_MT_presets"])


def test_baked_object_settings_are_disabled(ui):
    obj = add_object("Cloth", "CLOTH")
    obj["verlet_baked"] = True
    obj["verlet_status"] = "Baked 1-48, on disk"
    for pid in EXPECTED_PANELS["CLOTH"]:
        log = draw(pid, obj)
        settings = [e for e in log if e.what in ("prop", "prop_search")]
        assert settings and not any(e.enabled for e in settings), pid
    log = draw("PHYSICS_PT_verlet_cache", obj)
    ops = {e.name: e.enabled for e in log if e.what == "operator"}
    assert ops == {"verlet.bake": False, "verlet.free_bake": True,
                   "verlet.bake_to_shape_keys": True, "verlet.export_pc2": True,
                   "verlet.export_alembic": True}
    assert [(e.name, e.icon) for e in log if e.what == "label"] == \
        [("Baked 1-48, on disk", "CHECKMARK"), (KERNELS, "SETTINGS")]
    header = draw("PHYSICS_PT_verlet", obj, "draw_header_preset")
    assert [e.enabled for e in header if e.what == "menu"] == [False]
    main = draw("PHYSICS_PT_verlet", obj)
    assert [e.icon for e in main if e.what == "label"] == ["LOCKED"]
    del obj["verlet_baked"]
    log = draw("PHYSICS_PT_verlet_physical", obj)
    assert all(e.enabled for e in log if e.what == "prop")


def test_outdated_bake_offers_bake_again(ui):
    """A bake that no longer matches (settings or topology changed, file gone) can be baked
    again from the panel, for its objects and its colliders; it used to need Free Bake first,
    with Bake greyed out and no hint."""
    obj = add_object("Cloth", "CLOTH")
    floor = add_object("Floor", "COLLIDER", location=(0.0, 0.0, -1.0))
    for o in (obj, floor):
        o["verlet_baked"] = True
    obj["verlet_status"] = "Cache outdated: the mesh topology changed since the bake"
    obj["verlet_outdated"] = "unusable"
    for o in (obj, floor):
        log = draw("PHYSICS_PT_verlet_cache", o)
        bake = [(e.enabled, e.text) for e in log if e.name == "verlet.bake"]
        assert bake == [(True, "Bake Again")], o.name
    del obj["verlet_outdated"]
    log = draw("PHYSICS_PT_verlet_cache", obj)
    assert [(e.enabled, e.text) for e in log if e.name == "verlet.bake"] == [(False, "Bake")]


def test_cache_panel_shows_the_last_error(ui):
    obj = add_object("Cloth", "CLOTH")
    scene = bpy.context.scene
    scene["verlet_error"] = ""
    log = draw("PHYSICS_PT_verlet_cache", obj)
    assert [e.icon for e in log if e.what == "label"] == ["INFO", "SETTINGS"]
    message = ("Cloth: step 12: particle 40 became non-finite under stick 7 (stretch); lower "
               "the stiffness or raise the substeps")
    scene["verlet_error"] = message
    log = draw("PHYSICS_PT_verlet_cache", obj)
    errors = [e for e in log if e.what == "label"][2:]
    assert errors[0].icon == "ERROR"
    assert all(e.icon == "NONE" for e in errors[1:])
    assert " ".join(e.name for e in errors) == message
    assert all(len(e.name) <= ui.panels.ERROR_WRAP for e in errors)


# ---------------------------------------------------------------------- presets menu
def test_presets_menu_lists_presets_of_the_objects_kind(ui):
    from verlet_physics.solver.presets import load_presets
    presets = load_presets()
    obj = add_object("Thing")
    for kind in KINDS:
        obj.verlet.kind = kind
        layout = FakeLayout()
        bpy.types.VERLET_MT_presets.draw(SimpleNamespace(layout=layout),
                                         SimpleNamespace(object=obj, scene=bpy.context.scene))
        ops = [e for e in layout.log if e.what == "operator"]
        expected = sorted(n for n, p in presets.items() if kind == "NONE" or p["kind"] == kind)
        assert [e.props.name for e in ops] == expected, kind
        assert all(e.name == "verlet.apply_preset" for e in ops)
        if kind == "COLLIDER":
            assert drawn(layout.log, "label") == ["No presets for Collider"]
    cloth = [n for n, _ in ui.presets_menu.presets_for_kind("CLOTH")]
    assert cloth == ["cotton", "denim", "leather", "rubber_sheet", "silk"]


def _preset_target(name, kind):
    """A suitable object for a preset: a 2 x 3 m plane (6 m^2, non-uniform scale) for surfaces,
    a 1 x 2 x 0.5 m box (1 m^3, rotated) for bodies."""
    if kind in ("CLOTH", "PLANT"):
        obj = add_object(name, primitive="plane", size=1.0)
        obj.scale = (2.0, 3.0, 1.0)
        measure = 6.0
    else:
        obj = add_object(name, primitive="cube", size=1.0, rotation=(0.3, 0.2, 0.1))
        obj.scale = (1.0, 2.0, 0.5)
        measure = 1.0
    bpy.context.view_layer.update()
    return obj, measure


def test_apply_every_preset(ui):
    from verlet_physics.solver.presets import load_presets
    c_of = ui.properties.compliance_from_stiffness
    presets = load_presets()
    assert len(presets) == 9
    for name, preset in presets.items():
        obj, measure = _preset_target(f"obj_{name}", preset["kind"])
        activate(obj)
        assert bpy.ops.verlet.apply_preset(name=name) == {"FINISHED"}
        s = obj.verlet
        assert s.kind == preset["kind"], name
        assert s.preset == name
        assert s.mass == pytest.approx(preset["density"] * measure, rel=1e-5), name
        for key, prop in (("stretch_compliance", "stretch_stiffness"),
                          ("shear_compliance", "shear_stiffness"),
                          ("bend_compliance", "bend_stiffness")):
            if key in preset:
                if preset[key] == 0.0:
                    assert getattr(s, prop) == 1.0, (name, prop)
                else:
                    assert c_of(getattr(s, prop)) == pytest.approx(preset[key], rel=1e-5), \
                        (name, prop)
        for key, prop in (("friction", "friction"), ("damping", "damping"),
                          ("restitution", "restitution"), ("stiffness", "shape_stiffness"),
                          ("pressure", "pressure")):
            if key in preset:
                assert getattr(s, prop) == pytest.approx(preset[key], rel=1e-6), (name, prop)
        if "pressure" in preset:
            assert s.use_volume is True


def test_apply_preset_reports_what_it_left_out(ui):
    obj, _ = _preset_target("Flag", "CLOTH")
    applied, skipped = ui.presets_menu.apply_preset(obj, "silk")
    assert applied["kind"] == "CLOTH"
    assert applied["mass"] == pytest.approx(0.06 * 6.0, rel=1e-5)
    assert set(applied) == {"kind", "mass", "stretch_stiffness", "shear_stiffness",
                            "bend_stiffness", "friction", "damping"}
    assert set(skipped) == {"air_drag"}
    text = ui.presets_menu.describe(obj, "silk", applied, skipped)
    assert text.startswith("Flag: applied preset 'silk': kind CLOTH, mass 0.36 kg")
    assert "not applied: air_drag" in text


def test_apply_preset_keeps_mass_without_faces_or_closed_surface(ui):
    # strands: a plant of edges only has no area
    mesh = bpy.data.meshes.new("Strand")
    mesh.from_pydata([(0, 0, 0), (0, 0, 0.5), (0, 0, 1)], [(0, 1), (1, 2)], [])
    strand = bpy.data.objects.new("Strand", mesh)
    bpy.context.scene.collection.objects.link(strand)
    strand.verlet.mass = 0.25
    applied, skipped = ui.presets_menu.apply_preset(strand, "grass")
    assert strand.verlet.mass == pytest.approx(0.25) and "mass" not in applied
    assert "no faces" in skipped["density"]
    assert strand.verlet.kind == "PLANT"
    # an open sheet as a soft body has no volume
    sheet = add_object("Sheet", primitive="plane")
    sheet.verlet.mass = 3.0
    applied, skipped = ui.presets_menu.apply_preset(sheet, "jelly")
    assert sheet.verlet.mass == pytest.approx(3.0)
    assert "not closed" in skipped["density"]
    assert sheet.verlet.shape_stiffness == pytest.approx(0.3)


def test_area_and_volume_measures(ui):
    pm = ui.presets_menu
    plane = add_object("Plane", primitive="plane", size=2.0)
    assert pm.surface_area(plane) == pytest.approx(4.0)
    assert pm.closed_volume(plane) is None
    plane.scale = (1.5, 1.5, 1.5)                # uniform: the polygons' own area attribute
    bpy.context.view_layer.update()
    assert pm.surface_area(plane) == pytest.approx(9.0, rel=1e-6)
    plane.scale = (2.0, 0.5, 7.0)                # non-uniform: vector areas in world space
    plane.rotation_euler = (0.4, 0.0, 1.0)
    bpy.context.view_layer.update()
    assert pm.surface_area(plane) == pytest.approx(4.0, rel=1e-6)
    sphere = add_object("Ball", primitive="uv_sphere", radius=1.0, segments=64, ring_count=32)
    assert pm.closed_volume(sphere) == pytest.approx(4 / 3 * math.pi, rel=5e-3)
    cube = add_object("Box", primitive="cube", size=2.0)
    cube.scale = (1.0, 2.0, 3.0)
    bpy.context.view_layer.update()
    assert pm.closed_volume(cube) == pytest.approx(48.0, rel=1e-6)
    assert pm.surface_area(cube) == pytest.approx(2 * (2 * 4 + 2 * 6 + 4 * 6), rel=1e-6)


def test_apply_preset_refused_when_baked(ui):
    obj, _ = _preset_target("Cloth", "CLOTH")
    obj.verlet.kind = "CLOTH"
    obj["verlet_baked"] = True
    activate(obj)
    before = settings_snapshot(obj)
    with pytest.raises(RuntimeError, match="Cloth: has a bake"):
        bpy.ops.verlet.apply_preset(name="denim")
    assert settings_snapshot(obj) == before
    del obj["verlet_baked"]
    assert bpy.ops.verlet.apply_preset(name="denim") == {"FINISHED"}
    assert obj.verlet.friction == pytest.approx(0.7)


def test_apply_preset_refuses_another_kind_and_unknown_names(ui):
    obj, _ = _preset_target("Tablecloth", "CLOTH")
    obj.verlet.kind = "CLOTH"
    activate(obj)
    before = settings_snapshot(obj)
    with pytest.raises(RuntimeError, match="Tablecloth: preset 'jelly' is for Soft Body"):
        bpy.ops.verlet.apply_preset(name="jelly")
    with pytest.raises(RuntimeError, match="Tablecloth: unknown preset 'velvet'"):
        bpy.ops.verlet.apply_preset(name="velvet")
    assert settings_snapshot(obj) == before


def test_apply_preset_refuses_an_object_that_kind_cannot_simulate(ui):
    """A Cloth preset on an empty, or a Soft Body preset on an armature, would set a kind the
    bake then refuses: refused at once, naming the object and its type, nothing changed."""
    empty = bpy.data.objects.new("Marker", None)
    bpy.context.scene.collection.objects.link(empty)
    rig = bpy.data.objects.new("Rig", bpy.data.armatures.new("Rig"))
    bpy.context.scene.collection.objects.link(rig)
    for obj, name, words in ((empty, "cotton", "Marker: preset 'cotton' is for Cloth objects, "
                              "which are meshes; this is an empty object"),
                             (rig, "jelly", "Rig: preset 'jelly' is for Soft Body objects, "
                              "which are meshes; this is an armature object")):
        activate(obj)
        before = settings_snapshot(obj)
        with pytest.raises(RuntimeError, match=words):
            bpy.ops.verlet.apply_preset(name=name)
        assert settings_snapshot(obj) == before and obj.verlet.kind == "NONE"


def test_forces_panel_greys_air_drag_and_wind_where_they_do_not_act(ui):
    obj = add_object("Thing")
    bpy.context.scene.verlet.wind_strength = 2.0        # the wind's own settings active
    for kind in ("CLOTH", "PLANT", "SOFT", "RIGID", "RAGDOLL"):
        obj.verlet.kind = kind
        log = draw("PHYSICS_PT_verlet_forces", obj)
        acts = kind in ("CLOTH", "PLANT")
        for e in log:
            if e.what == "prop":
                assert e.active == (acts or e.name in ("gravity_scale", "damping")), (kind, e)
        infos = [e.name for e in log if e.what == "label" and e.icon == "INFO"]
        assert infos == ([] if acts else ["Air drag and wind act on cloth and plants; a Wind "
                                          "force field moves this body"]), kind


def test_field_weights_panel_draws_the_objects_then_the_scenes_weights(ui):
    """Field Weights (under Forces, for simulated kinds): the object's effector collection and
    weights, then the scene's, disabled while the object is baked."""
    cls = bpy.types.PHYSICS_PT_verlet_field_weights
    assert cls.bl_parent_id == "PHYSICS_PT_verlet_forces" and cls.bl_label == "Field Weights"
    obj = add_object("Cloth", "CLOTH")
    names = ["collection", "gravity", "all", "force", "wind", "vortex", "turbulence", "drag"]
    for kind in KINDS:
        obj.verlet.kind = kind
        ctx = SimpleNamespace(object=obj, scene=bpy.context.scene)
        assert cls.poll(ctx) == (kind in ("CLOTH", "PLANT", "SOFT", "RIGID")), kind
    obj.verlet.kind = "CLOTH"
    log = draw("PHYSICS_PT_verlet_field_weights", obj)
    props = [e for e in log if e.what == "prop"]
    assert [e.name for e in props] == names * 2
    assert all(e.data == obj.verlet.effector_weights for e in props[:8])
    assert all(e.data == bpy.context.scene.verlet.effector_weights for e in props[8:])
    assert all(e.enabled for e in props)
    obj["verlet_baked"] = True
    log = draw("PHYSICS_PT_verlet_field_weights", obj)
    assert not any(e.enabled for e in log if e.what == "prop")
