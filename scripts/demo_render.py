"""Rendering for the demo: camera and light, the first engine that renders headless, and a
contact sheet of frames tiled with NumPy and written through bpy's image API."""

import math
import os

import numpy as np


def setup_view(scene):
    """Camera, sun, world and display settings that frame the whole scene."""
    import bpy
    from mathutils import Vector
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.data.lens = 28
    cam.location = (0.3, -6.7, 3.2)
    target = Vector((0.3, 0.45, 1.25))
    cam.rotation_euler = (target - cam.location).to_track_quat("-Z", "Y").to_euler()
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 3.0
    sun.rotation_euler = (math.radians(40), math.radians(10), math.radians(30))
    scene.collection.objects.link(sun)
    world = bpy.data.worlds.new("World")
    world.color = (0.62, 0.72, 0.85)
    scene.world = world


def _try_render(scene, path):
    import bpy
    scene.render.filepath = path
    bpy.ops.render.render(write_still=True)
    if not os.path.exists(path):
        raise RuntimeError("no image written")


def configure_engine(scene, probe_path):
    """Pick the first engine that renders here: Workbench, EEVEE (Next), Cycles on the CPU.
    Returns its name."""
    r = scene.render
    r.resolution_x, r.resolution_y, r.resolution_percentage = 480, 270, 100
    r.image_settings.file_format = "PNG"
    r.image_settings.color_mode = "RGBA"
    r.use_stamp = True                      # burn the frame number into each tile
    for name in ("use_stamp_date", "use_stamp_time", "use_stamp_render_time",
                 "use_stamp_scene", "use_stamp_camera", "use_stamp_filename",
                 "use_stamp_memory", "use_stamp_lens", "use_stamp_marker",
                 "use_stamp_frame_range", "use_stamp_hostname", "use_stamp_sequencer_strip"):
        if hasattr(r, name):
            setattr(r, name, False)
    r.use_stamp_frame = True
    r.stamp_font_size = 14
    errors = []
    for engine in ("BLENDER_WORKBENCH", "BLENDER_EEVEE_NEXT", "BLENDER_EEVEE", "CYCLES"):
        try:
            r.engine = engine           # (the enum's items list only some engines in bpy)
        except TypeError:
            continue                    # not in this Blender (EEVEE Next is EEVEE in 5.x)
        if engine == "BLENDER_WORKBENCH":
            sh = scene.display.shading
            sh.light = "STUDIO"
            sh.color_type = "OBJECT"
            sh.show_shadows = True
            sh.shadow_intensity = 0.4
            sh.show_cavity = False
            sh.show_object_outline = True
            scene.display.render_aa = "8"
        elif engine == "CYCLES":
            scene.cycles.device = "CPU"
            scene.cycles.samples = 8
            scene.cycles.use_denoising = False
        else:
            if hasattr(scene, "eevee"):
                scene.eevee.taa_render_samples = 4
        try:
            _try_render(scene, probe_path)
            os.remove(probe_path)
            return engine
        except Exception as exc:                       # noqa: BLE001 - try the next engine
            errors.append(f"{engine}: {exc}")
    raise RuntimeError("no render engine works headless here: " + "; ".join(errors))


def _read_png(path):
    import bpy
    img = bpy.data.images.load(path, check_existing=False)
    w, h = img.size
    px = np.empty(w * h * 4, dtype=np.float32)
    img.pixels.foreach_get(px)
    bpy.data.images.remove(img)
    return px.reshape(h, w, 4)            # bottom row first (Blender's order)


def render_contact_sheet(scene, frames, path, tmpdir, columns=4, gap=4):
    """Render each frame at 480x270 and tile them (row-major from the top left) into one PNG."""
    import bpy
    os.makedirs(tmpdir, exist_ok=True)
    tiles = []
    for f in frames:
        scene.frame_set(f)
        p = os.path.join(tmpdir, f"frame_{f:04d}.png")
        _try_render(scene, p)
        tiles.append(_read_png(p))
    h, w = tiles[0].shape[:2]
    rows = -(-len(tiles) // columns)
    sheet = np.ones((rows * h + (rows + 1) * gap, columns * w + (columns + 1) * gap, 4),
                    dtype=np.float32)
    for i, t in enumerate(tiles):
        r, c = divmod(i, columns)
        y0 = sheet.shape[0] - (r + 1) * (h + gap)       # pixel rows run bottom-up
        x0 = gap + c * (w + gap)
        sheet[y0:y0 + h, x0:x0 + w] = t
    img = bpy.data.images.new("contact_sheet", sheet.shape[1], sheet.shape[0], alpha=True)
    img.pixels.foreach_set(sheet.ravel())
    img.filepath_raw = path
    img.file_format = "PNG"
    img.save()
    bpy.data.images.remove(img)
    return path
