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


# what on_save_pre changed for a .blend saved into another folder, for on_save_post to undo
# when that save was a copy: {"path": the saved .blend, "restore": [(object name, old path)]}
_saving = {"path": None, "restore": []}


def _remap_cache_paths(filepath):
    """Save As into another folder: each object's cache path is stored relative to the .blend
    ("//verlet_cache/..."), which would point beside the new file, where no cache is; it is
    made relative to the new file instead (as Blender's Remap Relative does for its own paths),
    or absolute where no relative path exists (another drive)."""
    _saving.update(path=os.path.abspath(filepath), restore=[])
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
        _saving["restore"].append((obj.name, rel))
        obj["verlet_cache"] = moved


def on_save_post(filepath=None, *_args):
    """After a save: a Save Copy leaves this session in the old file, so the cache paths that
    on_save_pre made relative to the copy go back to what they were."""
    restore, path = _saving["restore"], _saving["path"]
    _saving.update(path=None, restore=[])
    if not restore or (bpy.data.filepath and os.path.abspath(bpy.data.filepath) == path):
        return
    for name, rel in restore:
        obj = bpy.data.objects.get(name)
        if obj is not None:
            obj["verlet_cache"] = rel


def on_save_pre(filepath=None, *_args):
    if not isinstance(filepath, str) or not filepath:
        return
    _remap_cache_paths(filepath)
    ids.resolve()
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
            cache._memory.pop(cid, None)
            obj["verlet_cache"] = cache.relative_path(cid, blend_path=filepath)
            obj["verlet_status"] = str(obj.get("verlet_status", "")).replace(
                "in memory (save the .blend to keep it)", "on disk")
