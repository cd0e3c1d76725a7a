"""Cache ids: the one thing that ties an object to its cache file.

Each simulated object gets ``obj.verlet.cache_id`` (12 hex digits, random) the first time it is
baked, and keeps it across renames and re-bakes; its cache file is named after it (cache.py).
Names cannot do this: two objects may have names that differ only in characters a file name
cannot hold, and a rename would orphan the file.

Blender copies every property when an object is duplicated (Shift+D, copy and paste, append of a
sibling file's object), so a copy arrives with its original's id. ``resolve`` finds ids held by
more than one object of the file and gives every copy a new id and no bake: the copy was never
simulated, and if it kept the id, its bake or Free Bake would overwrite or delete the original's
file. Which object is the original: the one that held the id earlier in this session (its
``session_uid``, which a copy never has); failing that (just after opening a file), the first
by name ("Cloth" before its copy "Cloth.001").
"""

import uuid

import bpy

# {cache id: session_uid of the object that held it when last seen}: a copy has another uid
_holder = {}

COPY_STATUS = "Not baked: a copy of '{}' (its bake stays with it); bake to simulate this object"


def _uid(obj):
    return getattr(obj, "session_uid", None) or obj.as_pointer()


def new_id():
    return uuid.uuid4().hex[:12]


def cache_id(obj):
    """The object's cache id, issued now if it has none."""
    cid = obj.verlet.cache_id
    if not cid:
        cid = obj.verlet.cache_id = new_id()
        _holder[cid] = _uid(obj)
    return cid


def _original(holders, cid):
    """Which of the objects holding ``cid`` is the original (see the module docstring)."""
    known = _holder.get(cid)
    for obj in holders:
        if known is not None and _uid(obj) == known:
            return obj
    return min(holders, key=lambda o: o.name)


def resolve():
    """Give every copy (an object holding another one's cache id) a new id and drop its claim to
    the original's bake. Returns [(copy, original)] for the copies found. Cheap when there is
    nothing to do: one pass over the file's objects."""
    by_id = {}
    for obj in bpy.data.objects:
        settings = getattr(obj, "verlet", None)
        if settings is None or not settings.cache_id or obj.library is not None:
            continue
        by_id.setdefault(settings.cache_id, []).append(obj)
    copies = []
    for cid, holders in by_id.items():
        if len(holders) > 1:
            original = _original(holders, cid)
            for obj in holders:
                if obj is original:
                    continue
                obj.verlet.cache_id = new_id()
                for key in ("verlet_baked", "verlet_cache"):
                    if key in obj:
                        del obj[key]
                obj["verlet_status"] = COPY_STATUS.format(original.name)
                _holder[obj.verlet.cache_id] = _uid(obj)
                copies.append((obj, original))
            holders = [original]
        _holder[cid] = _uid(holders[0])
    return copies


def forget():
    """A file was loaded: session uids of the old one mean nothing now."""
    _holder.clear()
