"""Baking and playback: the one place that steps a SceneSim over frames.

Both the bake operator and the live playback handler go through here, so what an artist sees
while pressing play is what the bake writes (preview equals bake). A re-entrancy guard keeps
Blender's own frame changes (frame_set during a bake, render, Alembic export) from stepping.
"""

import contextlib
import os
import time

import bpy
import numpy as np

from ..solver import SolverError
from . import bridge, cache, ids, validity
from . import kernels as compiled
from .bridge import BridgeError
from .simscene import DEFORMING, SIMULATED, SceneSim

settings_hash = validity.settings_hash     # the name scripts and tests know

# module state: guard against re-entrant frame changes, and "read only" while Blender drives
# frames for its own purposes (render, export); the live-playback run
_guard = {"busy": False, "read_only": 0}
_live = {"sim": None, "frames": {}, "start": None, "last": None, "scene": None}

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
        if obj.verlet.kind == "RAGDOLL" and obj.type == "ARMATURE":
            from .ragdoll_pose import remember_rest
            try:
                remember_rest(obj)
            except BridgeError:
                pass                    # no bones: SceneSim says so by name
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


def stored(ss, body):
    """A body's current state as it is kept until written: deforming positions as float32 (the
    cache's precision: 12 bytes per vertex per frame in memory, not 24), rigid matrices as
    float64 (their rest matrix is taken from the first)."""
    state = ss.result(body)
    return state if body.kind == "RIGID" else state.astype(np.float32)


class ProgressPrinter:
    """progress(frame) for a bake on the command line: one line every ``every`` frames and at
    the last, with the time per frame since the previous line (a farm log shows the bake
    moving and how fast)."""

    def __init__(self, frame_start, frame_end, every=10, out=print):
        self.start, self.end, self.every, self.out = frame_start, frame_end, max(1, every), out
        self.t0 = self.t = time.perf_counter()
        self.last = frame_start

    def __call__(self, frame):
        if (frame - self.start) % self.every and frame != self.end:
            return
        now = time.perf_counter()
        ms = 1000.0 * (now - self.t) / max(1, frame - self.last)
        total = self.end - self.start
        self.out(f"verlet: frame {frame} ({frame - self.start}/{total}, "
                 f"{100.0 * (frame - self.start) / max(1, total):.0f}%): {ms:.1f} ms/frame, "
                 f"{now - self.t0:.1f} s elapsed", flush=True)
        self.t, self.last = now, frame


class BakeResult:
    def __init__(self):
        self.frames = {}          # {object name: list of (n, 3) or (4, 4) arrays}
        self.kinds = {}
        self.hashes = {}
        self.counts = {}
        self.bones = {}           # {ragdoll name: bone names}, the order of its frames
        self.start = None
        self.last = None
        self.cancelled = False
        self.error = None
        self.warnings = []        # [(object name, message)] from building the simulation
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
    if compiled.will_compile():
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
            res.warnings = list(ss.warnings)
            res.start = res.last = frame_start
            for body in ss.bodies:
                res.frames[body.name] = [stored(ss, body)]
                res.kinds[body.name] = body.kind
                res.hashes[body.name] = body.topology_hash
                res.counts[body.name] = getattr(body, "count", len(body.ids))
                if body.kind == "RAGDOLL":
                    res.bones[body.name] = list(body.bones)
            for f in range(frame_start + 1, frame_end + 1):
                yield f
                scene.frame_set(f)
                try:
                    ss.step_to(context.evaluated_depsgraph_get())
                except (SolverError, BridgeError) as exc:    # keep the frames before it
                    res.error = f"frame {f}: {exc}"
                    break
                for body in ss.bodies:
                    res.frames[body.name].append(stored(ss, body))
                res.last = f
                if progress is not None:
                    progress(f)
        finally:
            scene.frame_set(frame_before)
            res.seconds = time.perf_counter() - t0


def earlier_bakes(scene, res):
    """Names of the objects in ``res`` whose earlier bake (a cache still on disk or in memory)
    storing ``res`` would replace. A bake stopped by an error or cancelled replaces none of
    them: the guide's rule is that a failed or cancelled operation loses nothing."""
    names = []
    for name in res.frames:
        obj = scene.objects.get(name)
        # a bake that can no longer be shown (its cache damaged, its mesh's topology changed)
        # is nothing to keep
        if obj is None or not obj.get("verlet_baked") or \
                obj.get(validity.OUTDATED_KEY) in ("unusable", "missing"):
            continue
        path = validity.stored_path(obj)
        if (path and os.path.isfile(path)) or cache.in_memory(obj.verlet.cache_id):
            names.append(name)
    return names


def store(scene, res):
    """Write every object's frames to its cache and mark the objects baked. Returns the paths."""
    ids.resolve()                          # a copy must not overwrite its original's file
    for name in res.frames:
        ids.cache_id(scene.objects[name])
    shash = validity.settings_hash(scene)
    paths = []
    for obj in scene.objects:              # colliders too: their settings lock with the bake
        if getattr(obj, "verlet", None) is not None and obj.verlet.kind == "COLLIDER":
            obj["verlet_baked"] = True
            obj["verlet_status"] = "Collider of a baked simulation"
    for name, frames in res.frames.items():
        obj = scene.objects[name]
        cid = obj.verlet.cache_id
        rigid = res.kinds[name] == "RIGID"
        header = {"object": name, "kind": res.kinds[name], "vertex_count": res.counts[name],
                  "topology_hash": res.hashes[name], "settings_hash": shash,
                  "frame_start": res.start, "frame_end": res.last,
                  # the simulation range the bake was made in (a command-line bake of a
                  # range of its own leaves it as it was: validity._uncovered)
                  "scene_range": [int(scene.verlet.frame_start), int(scene.verlet.frame_end)],
                  "layout": "matrices" if rigid else "positions"}
        if name in res.bones:
            header.update(layout="bones", bones=res.bones[name])
        before = validity.stored_path(obj)
        path = cache.write(cid, header, frames)
        paths.append(path)
        # a cache of 0.1.0 was named after the object: gone once the new one is written
        if before and path and os.path.abspath(before) != os.path.abspath(path):
            cache.remove(None, before)
        obj["verlet_baked"] = True
        obj["verlet_cache"] = cache.relative_path(cid) if path else ""
        keys = obj.data.shape_keys if obj.type == "MESH" else None
        if keys is not None and bridge.DISPLAY_KEY in keys.key_blocks:
            # muted by an earlier Bake to Shape Keys: the new bake shows (net of those keys)
            keys.key_blocks[bridge.DISPLAY_KEY].mute = False
        if rigid:                       # changed: always the rest this bake started from
            obj["verlet_rest_matrix"] = np.array(frames[0], dtype=np.float64).ravel().tolist()
        where = "in memory (save the .blend to keep it)" if path is None else "on disk"
        partial = " (cancelled: frames kept)" if res.cancelled else \
            f" (stopped at frame {res.last + 1}: frames kept)" if res.error else ""
        notes = "".join(f"; warning: {msg}" for owner, msg in res.warnings if owner == name)
        obj["verlet_status"] = f"Baked {res.start}-{res.last}{partial}, {where}{notes}"
        validity.set_outdated(obj, None)
        validity.forget(name)
    validity.settle(scene, shash)
    return paths


def free(scene, objs=None):
    """Remove our caches, display data (key, or attribute, modifier and node group) and marks
    (only what the product created)."""
    ids.resolve()                          # Free Bake on a copy must not delete the original's
    for obj in scene.objects:
        if getattr(obj, "verlet", None) is not None and obj.verlet.kind == "COLLIDER":
            for key in ("verlet_baked", "verlet_status"):
                if key in obj:
                    del obj[key]
    # every simulated object, and every other one that still carries a bake of ours (its Kind
    # set to None or Collider after it was baked: it was left showing the bake's last frame,
    # with its cache and marks)
    for obj in objs or simulated_objects(scene) + [
            o for o in scene.objects if marked(o) and o.verlet.kind not in SIMULATED]:
        # by its id and the path it stored, never by its name: after a rename the name points
        # at no file (or at another object's)
        cache.remove(obj.verlet.cache_id, validity.stored_path(obj))
        # a body no longer simulated goes back to its transform at the bake only from where the
        # bake showed it (a Shift+D copy of a baked rigid body, carrying its marks and set to
        # Collider, stays where the user put it)
        put_back(obj, forget=True, anywhere=obj.verlet.kind in SIMULATED)
        for key in ("verlet_baked", "verlet_cache", "verlet_status", "verlet_rest_matrix",
                    "verlet_shown_matrix", "verlet_rest_basis", validity.OUTDATED_KEY,
                    LIVE_MARK):
            if key in obj:
                del obj[key]
        validity.forget(obj.name)
    bridge.forget_weights()
    stop_live()


# LIVE_MARK: an object live playback showed (its display key or attribute holds a played
# frame), so that setting its Kind to None puts it back as it does a baked one
LIVE_MARK = "verlet_live"
_MARKS = ("verlet_baked", "verlet_cache", "verlet_rest_basis", "verlet_rest_matrix",
          "verlet_shown_matrix", LIVE_MARK)


def marked(obj):
    """Whether obj carries a bake of ours: its marks (ID properties a bake writes; a shape key
    or modifier merely named as ours may be the user's own)."""
    return getattr(obj, "verlet", None) is not None and any(k in obj for k in _MARKS)


def put_back(obj, forget=False, anywhere=False):
    """Show obj as its own again: our display data removed (shape key, or attribute, modifier
    and node group), a ragdoll's rest pose on its bones, a rigid body's own transform. With
    forget (Free Bake) the ragdoll's rest pose is forgotten; without (its Kind changed: the
    bake and marks stay, to show again if the Kind comes back) only its bones still as the bake
    showed them go back. The transform goes back to the bake's start with anywhere (Free Bake
    of a simulated body), else only while the object is where the bake last put it: moved
    since, where it is now is the user's."""
    if LIVE_MARK in obj:
        del obj[LIVE_MARK]
    if obj.type == "MESH":
        bridge.remove_display(obj)
    if obj.type == "ARMATURE":
        from .ragdoll_pose import restore_rest
        restore_rest(obj, forget=forget)
    shown = obj.get("verlet_shown_matrix")
    if not anywhere and (shown is None or not np.allclose(
            np.array(obj.matrix_world, dtype=np.float64).ravel(), shown, rtol=0, atol=1e-6)):
        return          # not where the bake put it (or put back already): the user's, or keys'
    if _keyed_transform(obj):
        return          # keyframes own the transform (Bake to Keyframes)
    if "verlet_rest_basis" in obj:
        _restore_basis(obj, obj["verlet_rest_basis"])
    elif "verlet_rest_matrix" in obj:
        obj.matrix_world = _matrix(obj["verlet_rest_matrix"])
    if "verlet_shown_matrix" in obj:
        del obj["verlet_shown_matrix"]          # once: playback puts back a missing bake each frame


def _keyed_transform(obj):
    """Whether keyframes drive obj's location, rotation or scale."""
    anim = obj.animation_data
    return anim is not None and any(fc.data_path in _BASIS
                                    for fc in validity._fcurves(anim))


def load(obj):
    """(header, frames) of an object's bake with every frame read ((frames, ...) float32), or
    None; an unusable cache (outdated topology, damaged file) gives None and a status saying
    why. For exports and tests; playback reads frames one at a time (open_bake)."""
    ids.resolve()
    shash = validity.settings_hash(obj.users_scene[0]) if obj.users_scene else None
    data = validity.open_bake(obj, shash)
    if data is None:
        return None
    try:
        return data[0], data[1].all()
    except cache.CacheError as exc:
        validity.set_status(obj, f"Cache unusable: {exc}")
        return None


def sample(header, frames, frame):
    """The cached state at a (possibly fractional) frame: linear between samples, held outside."""
    f = min(max(frame, header["frame_start"]), header["frame_end"]) - header["frame_start"]
    i = int(np.floor(f))
    t = f - i
    if t <= 0 or i + 1 >= len(frames):
        return np.asarray(frames[min(i, len(frames) - 1)], dtype=np.float64)
    a, b = frames[i].astype(np.float64), frames[i + 1].astype(np.float64)
    if header["layout"] == "bones":
        from mathutils import Matrix
        return np.stack([np.array(Matrix(p.tolist()).lerp(Matrix(q.tolist()), t))
                         for p, q in zip(a, b)])
    if header["layout"] == "matrices":
        # blend the rigid motion, not the matrix entries: mathutils' Matrix.lerp interpolates
        # the polar decomposition (rotation by quaternion slerp, translation and scale linearly)
        from mathutils import Matrix
        return np.array(Matrix(a.tolist()).lerp(Matrix(b.tolist()), t))
    return a + (b - a) * t


def show(obj, state, bones=None):
    """Put a frame's state on the object: our display (shape key or Geometry Nodes modifier,
    see bridge.py), the transform for RIGID, or the pose for RAGDOLL (bones: the names of its
    (k, 4, 4) matrices; default its deforming bones)."""
    if obj.verlet.kind == "RAGDOLL":
        from . import ragdoll, ragdoll_pose
        if obj.type == "ARMATURE":
            ragdoll_pose.show(obj, bones or ragdoll.deform_bones(obj), state)
        return
    if obj.verlet.kind == "RIGID":
        obj.matrix_world = _matrix(np.asarray(state).ravel())
        # added: remember where we put it, so that a move by the user can be told apart
        obj["verlet_shown_matrix"] = np.array(obj.matrix_world, dtype=np.float64).ravel().tolist()
    else:
        bridge.write_display(obj, state)


# ------------------------------------------------------------------ playback
def in_live_run(obj):
    """Whether the live run (playback without a bake) simulates obj."""
    return _live["sim"] is not None and any(b.name == obj.name for b in _live["sim"].bodies)


def stop_live():
    _live.update(sim=None, frames={}, start=None, last=None, scene=None)


def on_frame_change(scene, depsgraph=None):
    """The frame-change handler (Blender Cloth's contract, see the module docstring)."""
    if _guard["busy"]:
        return
    _guard["busy"] = True
    try:
        frame = scene.frame_current_final
        if any(o.get("verlet_baked") for o in simulated_objects(scene)):
            ids.resolve()              # a copy (Shift+D) must not play its original's bake
        objs = [o for o in simulated_objects(scene) if o.get("verlet_baked")]
        # (made again only when a setting changed: validity.current_hash)
        shash = validity.current_hash(scene) if objs else None
        baked = {o.name: validity.open_bake(o, shash) for o in objs}
        for name, data in baked.items():
            if data is not None:
                show(scene.objects[name], sample(data[0], data[1], frame), data[0].get("bones"))
            else:
                # Changed: a bake that cannot be shown (missing, damaged, another topology)
                # used to leave the last frame shown frozen on the mesh; the object shows its
                # own mesh and transform instead, and its status says why
                put_back(scene.objects[name])
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
        report(str(exc))
    except Exception as exc:        # added: a frame handler must never raise into Blender;
        msg = f"playback failed: {type(exc).__name__}: {exc}"   # report it like the others
        try:
            scene["verlet_error"] = msg
        except ReferenceError:
            pass
        stop_live()
        report(msg)
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
                     frames={start: {b.name: stored(ss, b) for b in ss.bodies}})
        for _, msg in ss.warnings:
            report(msg)
        # Added: show the start state (the user's mesh), as Blender Cloth does at its start
        # frame; the display used to keep the last frame played. Rigid bodies remember their
        # rest so that the next reset starts from it, not from where they landed.
        for b in ss.bodies:
            obj = scene.objects[b.name]
            obj[LIVE_MARK] = True
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
        _live["frames"][frame] = {b.name: stored(ss, b) for b in ss.bodies}
        _live["last"] = frame
        stepped = True
    held = _live["frames"].get(min(max(frame, _live["start"]), _live["last"]))
    for name, state in (held or {}).items():
        if name in scene.objects:
            show(scene.objects[name], state)
    return stepped


def report(message):
    print(f"Verlet Physics: {message}")
    wm = bpy.context.window_manager
    if wm is not None and getattr(bpy.context, "workspace", None) is not None:
        try:
            bpy.context.workspace.status_text_set(f"Verlet Physics: {message}")
        except (AttributeError, RuntimeError):
            pass
