"""The bake cache: one versioned file per object next to the saved .blend, or memory for an
unsaved file.

Identity. A file belongs to an object through the object's cache id (``obj.verlet.cache_id``, 12
hex digits issued once, see ids.py), never through its name: names are free text ("Cloth A" and
"Cloth_A", "Ткань" and "Сукно" are different objects) and change on rename. The path is
``//verlet_cache/<blend>/<cache id>.vpc``, where <blend> is the .blend's name with only the
characters a file system forbids percent-encoded, so different .blend names never share a folder.

File layout (little endian):
    8 bytes   magic b"VERLETC1"
    4 bytes   uint32 header length L
    L bytes   UTF-8 JSON header: format_version, object (its name when baked), object_id (its
              cache id; absent in files of version 0.1.0, which were named after the object),
              kind, vertex_count, topology_hash, settings_hash, frame_start, frame_end,
              layout ("positions" | "matrices" | "bones"); bones (the bone names, "bones")
    frames    float32, (frames, vertex_count, 3) object-space positions [m] for deforming bodies,
              or (frames, 4, 4) world matrices for rigid bodies, or (frames, bones, 4, 4) the
              world matrices of a ragdoll's bones (vertex_count = bones, layout "bones"):
              12 bytes per vertex per frame (a 10,000-vertex, 250-frame bake is 30 MB; 1M vertices over 250 frames, 3 GB)

Frames are stored uncompressed and exact: playback reads one or two frames with a seek
(FrameReader), so its cost does not depend on the cache's length, and what plays is bit for bit
what was simulated (live preview == bake). Float16 deltas would halve the size but give up that
identity (about 0.5 mm error per metre moved since the last key frame).

Files are written to a temporary name in the same folder and renamed, so a crash or a cancel
never leaves half a cache under the real name.
"""

import json
import os
import struct

import bpy
import numpy as np

MAGIC = b"VERLETC1"
FORMAT_VERSION = 1
CACHE_DIR = "verlet_cache"
EXTENSION = ".vpc"
_PREFIX = len(MAGIC) + 4

# unsaved files: {cache id: (header dict, (frames, ...) float32 array)}
_memory = {}
# parsed headers of files read this session: {path: (stat signature, header, data offset)}
_headers = {}

# characters no file system accepts in a name (Windows' set, the strictest), and '%' (the escape)
_FORBIDDEN = set('<>:"/\\|?*%')


class CacheError(ValueError):
    """A cache file that cannot be used; the message names the file and the cause."""


def folder_name(blend_name):
    """A file-system-safe folder name for a .blend name that keeps every other character
    (Unicode included): forbidden and control characters become %XX, so two different names
    never map to one folder."""
    out = []
    for ch in blend_name:
        if ch in _FORBIDDEN or ord(ch) < 32:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    name = "".join(out)
    return name if name.strip(" .") else name + "%2E"      # "", "." and ".." are no folders


# blend_path (added): the .blend being saved, for save_pre, where bpy.data.filepath is still the
# old one; None = the current file.
def folder(blend_path=None):
    """Absolute cache folder for the current .blend, or None for an unsaved file."""
    blend_path = blend_path or bpy.data.filepath
    if not blend_path:
        return None
    blend = os.path.splitext(os.path.basename(blend_path))[0]
    return os.path.join(os.path.dirname(os.path.abspath(blend_path)), CACHE_DIR,
                        folder_name(blend))


def relative_path(cache_id, blend_path=None):
    """The cache path relative to the .blend (what the object stores, so the .blend can move)."""
    blend = os.path.splitext(os.path.basename(blend_path or bpy.data.filepath))[0]
    return "//" + "/".join((CACHE_DIR, folder_name(blend), cache_id + EXTENSION))


def path_for(cache_id, blend_path=None):
    """Absolute path of the cache with this id beside the (given or current) .blend; None when
    the file is unsaved."""
    f = folder(blend_path)
    return None if f is None else os.path.join(f, cache_id + EXTENSION)


def is_ours(path, blend_path=None):
    """Whether ``path`` is a cache file in the current .blend's own cache folder: the only files
    Free Bake or a new bake may delete (a .blend saved under another name may still read the
    caches of the one it was saved from)."""
    f = folder(blend_path)
    return bool(f and path and path.endswith(EXTENSION)
                and os.path.dirname(os.path.abspath(path)) == os.path.abspath(f))


def write(cache_id, header, frames, blend_path=None):
    """Store a bake: to a file beside the saved .blend (temporary name, then rename), or to
    memory for an unsaved file. ``frames`` is a sequence of per-frame arrays (written one by
    one, never stacked into a second copy) or one array. Returns the path or None. Raises
    CacheError naming the folder when it cannot be written."""
    header = dict(header, format_version=FORMAT_VERSION, object_id=cache_id)
    path = path_for(cache_id, blend_path)
    if path is None:
        _memory[cache_id] = (header, np.ascontiguousarray(np.stack(list(frames)),
                                                          dtype=np.float32))
        return None
    d = os.path.dirname(path)
    tmp = path + ".tmp"
    try:
        os.makedirs(d, exist_ok=True)
        blob = json.dumps(header, sort_keys=True, ensure_ascii=False).encode("utf-8")
        with open(tmp, "wb") as fh:
            fh.write(MAGIC)
            fh.write(struct.pack("<I", len(blob)))
            fh.write(blob)
            for f in frames:
                fh.write(np.ascontiguousarray(f, dtype="<f4").tobytes())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise CacheError(f"{header.get('object', cache_id)}: cannot write the cache in '{d}': "
                         f"{exc.strerror or exc}") from None
    _headers.pop(path, None)
    return path


def _frame_shape(header):
    if header["layout"] == "bones":             # a ragdoll: (bones, 4, 4) world matrices
        return (header["vertex_count"], 4, 4)
    return (4, 4) if header["layout"] == "matrices" else (header["vertex_count"], 3)


class FrameReader:
    """The frames of one cache without loading them: ``len()``, ``reader[i]`` (one (n, 3) or
    (4, 4) float32 frame, read with one seek), ``reader[a:b]`` and ``all()``. For a file every
    access opens, seeks and reads only the bytes asked for, so showing a frame costs the same
    for a 10-frame and a 10,000-frame cache (and no file stays open)."""

    def __init__(self, header, path=None, offset=0, frames=None):
        self.header = header
        self.path = path
        self.offset = offset                 # [bytes] where frame 0 starts in the file
        self._frames = frames                # the in-memory array (unsaved files)
        self.shape = _frame_shape(header)
        self.count = header["frame_end"] - header["frame_start"] + 1
        self.frame_bytes = 4 * int(np.prod(self.shape))

    def __len__(self):
        return self.count

    def _read(self, i, j):
        if self._frames is not None:
            return self._frames[i:j]
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset + i * self.frame_bytes)
                data = np.fromfile(fh, dtype="<f4", count=(j - i) * self.frame_bytes // 4)
        except OSError as exc:
            raise CacheError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        if data.size != (j - i) * self.frame_bytes // 4:
            raise CacheError(f"{self.path}: truncated; bake again")
        return data.reshape((j - i,) + self.shape)

    def __getitem__(self, key):
        if isinstance(key, slice):
            i, j, step = key.indices(self.count)
            return self._read(i, max(i, j))[::step]
        i = int(key)
        if i < 0:
            i += self.count
        if not 0 <= i < self.count:
            raise IndexError(f"frame index {key} outside 0..{self.count - 1}")
        return self._read(i, i + 1)[0]

    def all(self):
        """Every frame, (frames, ...) float32."""
        return self._read(0, self.count)


def _signature(path):
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _read_header(path):
    """(header, data offset) of a file, parsed once per version of the file (its stat)."""
    sig = _signature(path)
    known = _headers.get(path)
    if known is not None and known[0] == sig:
        return known[1], known[2]
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
    if header.get("format_version") != FORMAT_VERSION:
        raise CacheError(f"{path}: cache format {header.get('format_version')} is not "
                         f"{FORMAT_VERSION}; bake again")
    offset = _PREFIX + length
    reader = FrameReader(header, path, offset)
    expected = reader.count * reader.frame_bytes
    if sig[1] - offset != expected:
        raise CacheError(f"{path}: truncated: {(sig[1] - offset) // 4} values where "
                         f"{expected // 4} were expected; bake again")
    _headers[path] = (sig, header, offset)
    return header, offset


def open_frames(cache_id, path=None):
    """A FrameReader over an object's bake (its file, or memory for an unsaved .blend), or None
    if there is none. A damaged or foreign file raises CacheError naming the file and what is
    wrong with it."""
    if path is None and cache_id:
        path = path_for(cache_id)
    if path is None or (cache_id in _memory and folder() is None):
        data = _memory.get(cache_id)
        return None if data is None else FrameReader(data[0], frames=data[1])
    try:
        header, offset = _read_header(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return FrameReader(header, path, offset)


def read(cache_id, path=None):
    """(header, frames) of an object's bake with every frame loaded ((frames, ...) float32), or
    None if there is none (see open_frames)."""
    reader = open_frames(cache_id, path)
    return None if reader is None else (reader.header, reader.all())


def remove(cache_id, stored_path=None):
    """Delete an object's cache: its memory bake, its file in this .blend's cache folder, and
    the file its bake was stored in (a file named after the object, from before cache ids) when
    that lies in this .blend's own folder. Files of another .blend are never touched."""
    _memory.pop(cache_id, None)
    paths = {path_for(cache_id) if cache_id else None, stored_path}
    for path in paths:
        if not path or not is_ours(path) or not os.path.exists(path):
            continue
        os.remove(path)
        _headers.pop(path, None)
        try:
            os.rmdir(os.path.dirname(path))              # only if we emptied our folder
            os.rmdir(os.path.dirname(os.path.dirname(path)))
        except OSError:
            pass


def in_memory(cache_id):
    return cache_id in _memory


def drop_memory(cache_id):
    """Forget one in-memory bake (it is on disk now, beside the saved .blend)."""
    _memory.pop(cache_id, None)


def clear_memory():
    """Forget every in-memory bake (another .blend was loaded: they belonged to the old one)."""
    _memory.clear()
    _headers.clear()
