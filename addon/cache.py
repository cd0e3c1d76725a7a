"""The bake cache: one versioned file per object next to the saved .blend, or memory for an
unsaved file.

File layout (little endian):
    8 bytes   magic b"VERLETC1"
    4 bytes   uint32 header length L
    L bytes   UTF-8 JSON header: format_version, object, kind, vertex_count, topology_hash,
              settings_hash, frame_start, frame_end, layout ("positions" | "matrices")
    frames    float32, (frames, vertex_count, 3) object-space positions [m] for deforming bodies,
              or (frames, 4, 4) world matrices for rigid bodies

Files are written to a temporary name in the same folder and renamed, so a crash or a cancel
never leaves half a cache under the real name.
"""

import json
import os
import re
import struct

import bpy
import numpy as np

MAGIC = b"VERLETC1"
FORMAT_VERSION = 1
CACHE_DIR = "verlet_cache"

# unsaved files: {object name: (header dict, frames array)}
_memory = {}


class CacheError(ValueError):
    """A cache file that cannot be used; the message names the file and the cause."""


def _safe(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


# blend_path (added): the .blend being saved, for save_pre, where bpy.data.filepath is still the
# old one; None = the current file.
def folder(blend_path=None):
    """Absolute cache folder for the current .blend, or None for an unsaved file."""
    blend_path = blend_path or bpy.data.filepath
    if not blend_path:
        return None
    blend = os.path.splitext(os.path.basename(blend_path))[0]
    return os.path.join(os.path.dirname(os.path.abspath(blend_path)), CACHE_DIR, _safe(blend))


def relative_path(obj_name, blend_path=None):
    """The cache path relative to the .blend (what the object stores, so the .blend can move)."""
    blend = os.path.splitext(os.path.basename(blend_path or bpy.data.filepath))[0]
    return "//" + "/".join((CACHE_DIR, _safe(blend), _safe(obj_name) + ".vpc"))


def path_for(obj_name, blend_path=None):
    f = folder(blend_path)
    return None if f is None else os.path.join(f, _safe(obj_name) + ".vpc")


def write(obj_name, header, frames, blend_path=None):
    """Store a bake: to a file beside the saved .blend (temporary name, then rename), or to
    memory for an unsaved file. Returns the path or None. Raises CacheError naming the folder
    when it cannot be written."""
    frames = np.ascontiguousarray(frames, dtype=np.float32)
    header = dict(header, format_version=FORMAT_VERSION, object=obj_name)
    path = path_for(obj_name, blend_path)
    if path is None:
        _memory[obj_name] = (header, frames.copy())
        return None
    d = os.path.dirname(path)
    tmp = path + ".tmp"
    try:
        os.makedirs(d, exist_ok=True)
        blob = json.dumps(header, sort_keys=True).encode("utf-8")
        with open(tmp, "wb") as fh:
            fh.write(MAGIC)
            fh.write(struct.pack("<I", len(blob)))
            fh.write(blob)
            fh.write(frames.tobytes())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise CacheError(f"{obj_name}: cannot write the cache in '{d}': {exc.strerror or exc}") \
            from None
    return path


def read(obj_name, path=None):
    """(header, frames) of an object's bake, or None if there is none. A damaged or foreign file
    raises CacheError naming the file and what is wrong with it."""
    if obj_name in _memory and (path is None and folder() is None):
        return _memory[obj_name]
    path = path or path_for(obj_name)
    if path is None:
        return _memory.get(obj_name)
    if not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as fh:
            if fh.read(8) != MAGIC:
                raise CacheError(f"{path}: not a Verlet Physics cache (wrong magic)")
            raw = fh.read(4)
            if len(raw) != 4:
                raise CacheError(f"{path}: truncated header")
            (length,) = struct.unpack("<I", raw)
            blob = fh.read(length)
            if len(blob) != length:
                raise CacheError(f"{path}: truncated header")
            try:
                header = json.loads(blob.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise CacheError(f"{path}: damaged header") from None
            data = np.frombuffer(fh.read(), dtype=np.float32)
    except OSError as exc:
        raise CacheError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if header.get("format_version") != FORMAT_VERSION:
        raise CacheError(f"{path}: cache format {header.get('format_version')} is not "
                         f"{FORMAT_VERSION}; bake again")
    count = header["frame_end"] - header["frame_start"] + 1
    shape = (count, 4, 4) if header["layout"] == "matrices" else (count, header["vertex_count"], 3)
    if data.size != int(np.prod(shape)):
        raise CacheError(f"{path}: truncated: {data.size} values where {int(np.prod(shape))} "
                         "were expected; bake again")
    return header, data.reshape(shape)


def remove(obj_name):
    """Delete an object's cache (file or memory). Only our own .vpc file is touched."""
    _memory.pop(obj_name, None)
    path = path_for(obj_name)
    if path and os.path.exists(path):
        os.remove(path)
        try:
            os.rmdir(os.path.dirname(path))              # only if we emptied our folder
            os.rmdir(os.path.dirname(os.path.dirname(path)))
        except OSError:
            pass


def in_memory(obj_name):
    return obj_name in _memory


def clear_memory():
    """Forget every in-memory bake (another .blend was loaded: they belonged to the old one)."""
    _memory.clear()
