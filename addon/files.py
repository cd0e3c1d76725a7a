"""File events (the handlers are registered in operators.py): loading a file, undo and redo,
and saving.

The live run holds references to the scene's data, which a file load or an undo replaces: it
is dropped then (playback restarts at the start frame). A bake made before the .blend had a file
lives in memory; saving the file writes it beside the .blend (its status said "save the .blend
to keep it", but the bake used to be lost on save). Save As into another folder keeps the cache
paths pointing at the caches (_remap_cache_paths).
"""

import os

import bpy

from . import bake, bridge, cache, ids, validity


def on_load_post(*_args):
    bake.stop_live()
    cache.clear_memory()
    ids.forget()
    validity.forget()
    bridge.forget_weights()


def on_undo_redo(*_args):
    bake.stop_live()
    validity.forget()
    bridge.forget_weights()


# What on_save_pre wrote for the .blend being saved, for on_save_post to undo when the save was
# a copy (this session stays in the old file) or failed: {"path": the .blend being saved,
# "restore": [(object name, property, value before or None, value written)], "memory": [cache
# ids written from memory, dropped from memory once the save is known to be this file's]}
_saving = {"path": None, "restore": [], "memory": []}


def _set(obj, key, value):
    """obj[key] = value, remembered for _undo."""
    _saving["restore"].append((obj.name, key, obj.get(key), value))
    obj[key] = value


def _remap_cache_paths(filepath):
    """Save As into another folder: each object's cache path is stored relative to the .blend
    ("//verlet_cache/..."), which would point beside the new file, where no cache is; it is
    made relative to the new file instead (as Blender's Remap Relative does for its own paths),
    or absolute where no relative path exists (another drive)."""
    old_dir = os.path.dirname(os.path.abspath(bpy.data.filepath)) if bpy.data.filepath else None
    new_dir = os.path.dirname(os.path.abspath(filepath))
    if old_dir is None or old_dir == new_dir:
        return
    for obj in bpy.data.objects:
        rel = obj.get("verlet_cache")
        if not isinstance(rel, str) or not rel.startswith("//"):
            continue
        path = bpy.path.abspath(rel)            # still resolved against the file being left
        if not os.path.isfile(path):
            continue
        try:
            moved = "//" + os.path.relpath(path, new_dir).replace(os.sep, "/")
        except ValueError:                      # another drive (Windows)
            moved = path
        _set(obj, "verlet_cache", moved)


def _undo():
    """Put back what on_save_pre wrote, where it is still what it wrote (a later change, e.g.
    a bake in a save_post handler of another add-on, stays)."""
    for name, key, before, written in reversed(_saving["restore"]):
        obj = bpy.data.objects.get(name)
        if obj is None or obj.get(key) != written:
            continue
        if before is None:
            del obj[key]
        else:
            obj[key] = before


def on_save_post(filepath=None, *_args):
    """After a save: a Save Copy leaves this session in the old file, so what on_save_pre wrote
    for the copy (cache paths relative to it, a bake moved from memory to beside it) is put
    back, and the bake stays in memory; a save of this file drops the memory copies."""
    path, memory = _saving["path"], _saving["memory"]
    this_file = bool(bpy.data.filepath) and os.path.abspath(bpy.data.filepath) == path
    if this_file:
        for cid in memory:
            cache.drop_memory(cid)
    else:
        _undo()
    _saving.update(path=None, restore=[], memory=[])


def on_save_post_fail(*_args):
    """A save that failed (a folder that is not there, a full disk): nothing was saved, so
    whatever on_save_pre wrote is put back."""
    _undo()
    _saving.update(path=None, restore=[], memory=[])


def on_save_pre(filepath=None, *_args):
    if not isinstance(filepath, str) or not filepath:
        return
    _saving.update(path=os.path.abspath(filepath), restore=[], memory=[])
    ids.resolve()                   # first: a Shift+D copy's claim on its original's cache goes
    _remap_cache_paths(filepath)
    for scene in bpy.data.scenes:
        for obj in bake.simulated_objects(scene):
            cid = obj.verlet.cache_id
            if not obj.get("verlet_baked") or obj.get("verlet_cache") or not cache.in_memory(cid):
                continue
            header, frames = cache._memory[cid]
            try:
                cache.write(cid, header, frames, blend_path=filepath)
            except cache.CacheError as exc:
                obj["verlet_status"] = f"Bake kept in memory only: {exc}"
                bake.report(str(exc))
                continue
            _saving["memory"].append(cid)
            _set(obj, "verlet_cache", cache.relative_path(cid, blend_path=filepath))
            _set(obj, "verlet_status", str(obj.get("verlet_status", "")).replace(
                "in memory (save the .blend to keep it)", "on disk"))
