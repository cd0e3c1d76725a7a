"""Baking and playback: the one place that steps a SceneSim over frames.

Both the bake operator and the live playback handler go through here, so what an artist sees
while pressing play is what the bake writes (preview equals bake). A re-entrancy guard keeps
Blender's own frame changes (frame_set during a bake, render, Alembic export) from stepping.
"""

import contextlib
import hashlib
import json
import time

import bpy
import numpy as np

from ..solver import SolverError
from . import bridge, cache
from . import kernels as compiled
from .bridge import BridgeError
from .simscene import DEFORMING, SIMULATED, SceneSim

# module state: guard against re-entrant frame changes, and "read only" while Blender drives
# frames for its own purposes (render, export); the live-playback run
_guard = {"busy": False, "read_only": 0}
_live = {"sim": None, "frames": {}, "start": None, "last": None, "scene": None}

SCENE_SETTINGS = ("substeps", "iterations", "wind_direction", "wind_strength", "wind_turbulence",
                  "wind_seed", "air_drag", "gravity_scale", "damping", "effector_weights")


@contextlib.contextmanager
def guarded(read_only=False):
    """Run with the frame handler disabled (or read-only: it shows the cache but never steps)."""
    prev = _guard["busy"]
    if read_only:
        _guard["read_only"] += 1
    else:
        _guard["busy"] = True
    try:
        yield
    finally:
        if read_only:
            _guard["read_only"] -= 1
        else:
            _guard["busy"] = prev


def settings_hash(scene):
    """A hash of every setting that changes the result (scene and simulated objects)."""
    data = {k: _plain(getattr(scene.verlet, k, None)) for k in SCENE_SETTINGS}
    data["gravity"] = list(scene.gravity) if scene.use_gravity else [0, 0, 0]
    data["fps"] = scene.render.fps / scene.render.fps_base
    for obj in sorted((o for o in scene.objects if getattr(o, "verlet", None) is not None
                       and o.verlet.kind != "NONE"), key=lambda o: o.name):
        data[obj.name] = {p.identifier: _plain(getattr(obj.verlet, p.identifier))
                          for p in obj.verlet.bl_rna.properties if p.identifier not in ("rna_type", "name", "preset")}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _plain(v):
    # nested settings (effector_weights) by value and a datablock (its collection) by name:
    # their default str() holds a memory address, which differs in every session
    if isinstance(v, bpy.types.ID):
        return v.name
    if isinstance(v, bpy.types.PropertyGroup):
        return {p.identifier: _plain(getattr(v, p.identifier)) for p in v.bl_rna.properties
                if p.identifier not in ("rna_type", "name")}
    try:
        return list(v) if not isinstance(v, str) else v
    except TypeError:
        return v


def simulated_objects(scene):
    return [o for o in scene.objects if getattr(o, "verlet", None) is not None
            and o.verlet.kind in SIMULATED]


@contextlib.contextmanager
def display_muted(scene):
    """Mute our display shape keys and display modifiers (and put rigid bodies back at rest) so
    the evaluated meshes are the user's own, as the simulation must start from them."""
    muted = []
    objs = simulated_objects(scene)
    for obj in objs:
        keys = obj.data.shape_keys if obj.type == "MESH" else None
        if keys is not None and bridge.DISPLAY_KEY in keys.key_blocks:
            kb = keys.key_blocks[bridge.DISPLAY_KEY]
            if not kb.mute:
                kb.mute = True
                muted.append(kb)
        if obj.verlet.kind == "RIGID":
            # Changed: back to rest only while the object is where we last put it (if the user
            # has moved it since, where it is now is the new rest), and through its exact
            # location/rotation/scale: a matrix_world round trip changed the last bits, so two
            # bakes of the same scene differed.
            shown = obj.get("verlet_shown_matrix")
            here = np.array(obj.matrix_world, dtype=np.float64).ravel()
            if shown is None or np.allclose(here, shown, rtol=0, atol=1e-6):
                if "verlet_rest_basis" in obj:
                    _restore_basis(obj, obj["verlet_rest_basis"])
                elif "verlet_rest_matrix" in obj:
                    obj.matrix_world = _matrix(obj["verlet_rest_matrix"])
            obj["verlet_rest_basis"] = _basis(obj)
    with bridge.display_modifiers_off(objs):
        bpy.context.view_layer.update()
        try:
            yield
        finally:
            for kb in muted:
                kb.mute = False


_BASIS = ("location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "scale")


def _basis(obj):
    """An object's own transform channels, exactly (ID properties store them as doubles)."""
    d = {k: [float(v) for v in getattr(obj, k)] for k in _BASIS}
    d["rotation_mode"] = obj.rotation_mode
    return d


def _restore_basis(obj, d):
    obj.rotation_mode = str(d["rotation_mode"])
    for k in _BASIS:
        setattr(obj, k, list(d[k]))


def _matrix(flat):
    from mathutils import Matrix
    m = np.array(flat, dtype=np.float64).reshape(4, 4)
    return Matrix(m.tolist())


class BakeResult:
    def __init__(self):
        self.frames = {}          # {object name: list of (n, 3) or (4, 4) arrays}
        self.kinds = {}
        self.hashes = {}
        self.counts = {}
        self.start = None
        self.last = None
        self.cancelled = False
        self.error = None
        self.seconds = 0.0


def run(context, frame_start, frame_end, should_cancel=None, progress=None):
    """Simulate frames frame_start..frame_end of the context's scene. Returns a BakeResult with
    every frame computed (all of them, or those before a cancel or a solver error). Raises
    BridgeError (bad input: nothing was computed) with a message naming the object."""
    res = BakeResult()
    steps = iterate(context, frame_start, frame_end, res, progress)
    try:
        for _ in steps:
            if should_cancel is not None and should_cancel():
                res.cancelled = True
                break
    finally:
        steps.close()
    return res


def iterate(context, frame_start, frame_end, res, progress=None):
    """The bake as a generator filling ``res``: the first resumption builds the simulation at
    frame_start, each later one computes one more frame. It pauses (yields) before every frame
    after the first, where the caller may stop it (close()) and keep the frames computed.

    run() drives it to the end; the modal operator drives it one frame per timer tick so that
    Esc can cancel in the middle of a bake. (Added: the modal operator used to run the whole bake
    in its first timer event, so Esc could never interrupt it.) While it is suspended the frame
    handler stays guarded; closing it returns the scene to the frame it was on. When the
    compiled kernels still have to be compiled (the first bake after install), it also pauses
    once before building, having put "compiling solver kernels" in the status bar, so that the
    interface draws the message before the compile holds it up."""
    scene = context.scene
    if frame_end < frame_start:
        raise BridgeError(f"{scene.name}: the frame range {frame_start}..{frame_end} is empty")
    if compiled.pending():
        compiled.status(compiled.MESSAGE)
        yield frame_start
    t0 = time.perf_counter()
    frame_before = scene.frame_current
    with guarded():
        try:
            scene.frame_set(frame_start)
            with display_muted(scene):
                depsgraph = context.evaluated_depsgraph_get()
                ss = SceneSim(scene, depsgraph)
            res.start = res.last = frame_start
            for body in ss.bodies:
                res.frames[body.name] = [ss.result(body)]
                res.kinds[body.name] = body.kind
                res.hashes[body.name] = body.topology_hash
                res.counts[body.name] = len(body.ids)
            for f in range(frame_start + 1, frame_end + 1):
                yield f
                scene.frame_set(f)
                try:
                    ss.step_to(context.evaluated_depsgraph_get())
                except SolverError as exc:
                    res.error = f"frame {f}: {exc}"
                    break
                for body in ss.bodies:
                    res.frames[body.name].append(ss.result(body))
                res.last = f
                if progress is not None:
                    progress(f)
        finally:
            scene.frame_set(frame_before)
            res.seconds = time.perf_counter() - t0


def store(scene, res):
    """Write every object's frames to its cache and mark the objects baked. Returns the paths."""
    shash = settings_hash(scene)
    paths = []
    for obj in scene.objects:              # colliders too: their settings lock with the bake
        if getattr(obj, "verlet", None) is not None and obj.verlet.kind == "COLLIDER":
            obj["verlet_baked"] = True
            obj["verlet_status"] = "Collider of a baked simulation"
    for name, frames in res.frames.items():
        obj = scene.objects[name]
        rigid = res.kinds[name] == "RIGID"
        header = {"kind": res.kinds[name], "vertex_count": res.counts[name],
                  "topology_hash": res.hashes[name], "settings_hash": shash,
                  "frame_start": res.start, "frame_end": res.last,
                  "layout": "matrices" if rigid else "positions"}
        path = cache.write(name, header, np.stack(frames))
        paths.append(path)
        obj["verlet_baked"] = True
        obj["verlet_cache"] = cache.relative_path(name) if path else ""
        if rigid:                       # changed: always the rest this bake started from
            obj["verlet_rest_matrix"] = np.array(frames[0], dtype=np.float64).ravel().tolist()
        where = "in memory (save the .blend to keep it)" if path is None else "on disk"
        partial = " (cancelled: frames kept)" if res.cancelled else ""
        obj["verlet_status"] = f"Baked {res.start}-{res.last}{partial}, {where}"
    return paths


def free(scene, objs=None):
    """Remove our caches, display data (key, or attribute, modifier and node group) and marks
    (only what the product created)."""
    for obj in scene.objects:
        if getattr(obj, "verlet", None) is not None and obj.verlet.kind == "COLLIDER":
            for key in ("verlet_baked", "verlet_status"):
                if key in obj:
                    del obj[key]
    for obj in objs or simulated_objects(scene):
        cache.remove(obj.name)
        if obj.type == "MESH":
            bridge.remove_display(obj)
        if obj.verlet.kind == "RIGID" and "verlet_rest_basis" in obj:
            _restore_basis(obj, obj["verlet_rest_basis"])
        elif obj.verlet.kind == "RIGID" and "verlet_rest_matrix" in obj:
            obj.matrix_world = _matrix(obj["verlet_rest_matrix"])
        for key in ("verlet_baked", "verlet_cache", "verlet_status", "verlet_rest_matrix",
                    "verlet_shown_matrix", "verlet_rest_basis"):
            if key in obj:
                del obj[key]
    stop_live()


def load(obj):
    """(header, frames) of an object's bake, or None; an unusable cache (outdated topology,
    damaged file) gives None and a status saying why."""
    try:
        data = cache.read(obj.name, bpy.path.abspath(obj["verlet_cache"])
                          if obj.get("verlet_cache") else None)
    except cache.CacheError as exc:
        obj["verlet_status"] = f"Cache unusable: {exc}"
        return None
    if data is None:
        # Added: a bake whose cache is gone (deleted, left behind when the .blend moved, or a
        # Free Bake undone) says so instead of silently showing nothing.
        where = bpy.path.abspath(obj["verlet_cache"]) if obj.get("verlet_cache") else "memory"
        obj["verlet_status"] = f"Cache missing: {obj.name}: no cache in {where}; bake again"
        return None
    header, frames = data
    # Added: a cache of another kind of body (e.g. a rigid body's matrices copied over a
    # cloth's file) used to be shown and fail inside the frame handler.
    layout = "matrices" if obj.verlet.kind == "RIGID" else "positions"
    if header.get("layout") != layout:
        obj["verlet_status"] = (f"Cache unusable: {obj.name}: the cache holds "
                                f"{header.get('layout')} of the {header.get('kind')} body "
                                f"'{header.get('object')}', not this object's; bake again")
        return None
    if obj.type == "MESH" and header["layout"] == "positions":
        mesh = obj.data
        if len(mesh.vertices) != header["vertex_count"] or \
                bridge.topology_hash(len(mesh.vertices), bridge.faces(mesh)) != header["topology_hash"]:
            obj["verlet_status"] = "Cache outdated: the mesh topology changed; bake again"
            return None
    return header, frames


def sample(header, frames, frame):
    """The cached state at a (possibly fractional) frame: linear between samples, held outside."""
    f = min(max(frame, header["frame_start"]), header["frame_end"]) - header["frame_start"]
    i = int(np.floor(f))
    t = f - i
    if t <= 0 or i + 1 >= len(frames):
        return np.asarray(frames[min(i, len(frames) - 1)], dtype=np.float64)
    a, b = frames[i].astype(np.float64), frames[i + 1].astype(np.float64)
    if header["layout"] == "matrices":
        # blend the rigid motion, not the matrix entries: mathutils' Matrix.lerp interpolates
        # the polar decomposition (rotation by quaternion slerp, translation and scale linearly)
        from mathutils import Matrix
        return np.array(Matrix(a.tolist()).lerp(Matrix(b.tolist()), t))
    return a + (b - a) * t


def show(obj, state):
    """Put a frame's state on the object: our display (shape key or Geometry Nodes modifier,
    see bridge.py), or the transform for RIGID."""
    if obj.verlet.kind == "RIGID":
        obj.matrix_world = _matrix(np.asarray(state).ravel())
        # added: remember where we put it, so that a move by the user can be told apart
        obj["verlet_shown_matrix"] = np.array(obj.matrix_world, dtype=np.float64).ravel().tolist()
    else:
        bridge.write_display(obj, state)


# ------------------------------------------------------------------ file events
# Added: handlers for file events (registered in operators.py). The live run holds references to
# the scene's data, which a file load or an undo replaces: it is dropped then (playback restarts
# at the start frame). A bake made before the .blend had a file lives in memory; saving the
# file now writes it beside the .blend (its status said "save the .blend to keep it", but the
# bake used to be lost on save).
def on_load_post(*_args):
    stop_live()
    cache.clear_memory()


def on_undo_redo(*_args):
    stop_live()


def on_save_pre(filepath=None, *_args):
    if not isinstance(filepath, str) or not filepath:
        return
    for scene in bpy.data.scenes:
        for obj in simulated_objects(scene):
            if not obj.get("verlet_baked") or obj.get("verlet_cache") \
                    or not cache.in_memory(obj.name):
                continue
            header, frames = cache._memory[obj.name]
            try:
                cache.write(obj.name, header, frames, blend_path=filepath)
            except cache.CacheError as exc:
                obj["verlet_status"] = f"Bake kept in memory only: {exc}"
                _report(str(exc))
                continue
            cache._memory.pop(obj.name, None)
            obj["verlet_cache"] = cache.relative_path(obj.name, blend_path=filepath)
            obj["verlet_status"] = str(obj.get("verlet_status", "")).replace(
                "in memory (save the .blend to keep it)", "on disk")


# ------------------------------------------------------------------ playback
def stop_live():
    _live.update(sim=None, frames={}, start=None, last=None, scene=None)


def on_frame_change(scene, depsgraph=None):
    """The frame-change handler (Blender Cloth's contract, see the module docstring)."""
    if _guard["busy"]:
        return
    _guard["busy"] = True
    try:
        frame = scene.frame_current_final
        baked = {o.name: load(o) for o in simulated_objects(scene) if o.get("verlet_baked")}
        for name, data in baked.items():
            if data is not None:
                show(scene.objects[name], sample(data[0], data[1], frame))
        if baked:
            return
        # Changed: also read-only when Blender drives frames itself (render, Alembic export,
        # subframes): it used to step the live run from inside a render or an export.
        if _guard["read_only"] or blender_drives(scene, depsgraph, frame):
            _live_playback(scene, int(round(frame)), step=False)
            return
        if _live_playback(scene, int(round(frame))):
            scene["verlet_error"] = ""      # changed: cleared only by a reset or step that ran
    except (BridgeError, SolverError, cache.CacheError) as exc:
        scene["verlet_error"] = str(exc)
        stop_live()
        _report(str(exc))
    except Exception as exc:        # added: a frame handler must never raise into Blender;
        msg = f"playback failed: {type(exc).__name__}: {exc}"   # report it like the others
        try:
            scene["verlet_error"] = msg
        except ReferenceError:
            pass
        stop_live()
        _report(msg)
    finally:
        _guard["busy"] = False


def blender_drives(scene, depsgraph, frame):
    """True when Blender evaluates frames for its own purposes rather than for the viewport: a
    subframe (motion blur, Alembic samples), or a depsgraph that is not one of the scene's view
    layers' (a render, an exporter). The handler then only reads, it never steps."""
    if frame != int(frame):
        return True
    if depsgraph is None:
        return False
    try:
        if depsgraph.mode == "RENDER":
            return True
        return not any(depsgraph == vl.depsgraph for vl in scene.view_layers)
    except (AttributeError, ReferenceError):
        return False


def _live_playback(scene, frame, step=True):
    objs = simulated_objects(scene)
    if not objs:
        return
    s = scene.verlet
    start = s.frame_start
    if step and (frame == start or (_live["scene"] != scene.name)):
        if frame != start:
            return
        stop_live()
        with display_muted(scene):
            ss = SceneSim(scene, bpy.context.evaluated_depsgraph_get())
        _live.update(sim=ss, start=start, last=start, scene=scene.name,
                     frames={start: {b.name: ss.result(b) for b in ss.bodies}})
        # Added: show the start state (the user's mesh), as Blender Cloth does at its start
        # frame; the display used to keep the last frame played. Rigid bodies remember their
        # rest so that the next reset starts from it, not from where they landed.
        for b in ss.bodies:
            obj = scene.objects[b.name]
            if b.kind == "RIGID":
                obj["verlet_rest_matrix"] = b.rest_matrix.ravel().tolist()
            show(obj, _live["frames"][start][b.name])
        return True
    if _live["sim"] is None or _live["scene"] != scene.name:
        return False
    stepped = False
    if step and frame == _live["last"] + 1 and frame <= s.frame_end:
        ss = _live["sim"]
        ss.step_to(bpy.context.evaluated_depsgraph_get())
        _live["frames"][frame] = {b.name: ss.result(b) for b in ss.bodies}
        _live["last"] = frame
        stepped = True
    held = _live["frames"].get(min(max(frame, _live["start"]), _live["last"]))
    for name, state in (held or {}).items():
        if name in scene.objects:
            show(scene.objects[name], state)
    return stepped


def _report(message):
    print(f"Verlet Physics: {message}")
    wm = bpy.context.window_manager
    if wm is not None and getattr(bpy.context, "workspace", None) is not None:
        try:
            bpy.context.workspace.status_text_set(f"Verlet Physics: {message}")
        except (AttributeError, RuntimeError):
            pass
