"""Blender data <-> NumPy arrays: one bulk foreach_get / foreach_set per array.

Reading goes through the evaluated object (modifiers and animation applied) so that pins follow
an armature or keyframes. Positions cross the boundary as float32 (Blender's storage) and become
float64 for the solver. Nothing here writes to the user's mesh: display goes through our own
named data, and every other output is our own named data too.

Display has two paths, because the simulation starts from (and pins follow) the EVALUATED mesh,
modifiers applied:
- no enabled modifier of the user's (the common case): our shape key DISPLAY_KEY. Shape keys act
  before the modifier stack, which is then empty, so the key shows exactly the cached positions.
- any modifier of the user's enabled in the viewport or the render (Displace, Armature...): a
  shape key would go under those modifiers and be deformed a second time. The positions go
  instead into our point attribute DISPLAY_ATTRIBUTE (one foreach_set), which our Geometry Nodes
  modifier DISPLAY_MODIFIER, kept LAST in the stack, writes over the position. The key is not
  used then (it is removed). Reading the evaluated mesh for the simulation (reset, pins) happens
  with that modifier off, and our key muted (display_modifiers_off), so the user's own stack is
  what is read.
"""

import contextlib
import hashlib
import re

import bpy
import numpy as np

DISPLAY_KEY = "Verlet"          # the one shape key the playback handler writes
DISPLAY_MODIFIER = "Verlet Display"     # our Geometry Nodes modifier (objects with modifiers)
DISPLAY_GROUP = "Verlet Display"        # its node group (marked ours by GROUP_MARK)
DISPLAY_ATTRIBUTE = "verlet_position"   # point FLOAT_VECTOR attribute it reads
GROUP_MARK = "verlet_display"
PC2_MODIFIER = "Verlet PC2"             # ours too: verlet.export_pc2's Mesh Cache modifier
OUR_MODIFIERS = (DISPLAY_MODIFIER, PC2_MODIFIER)
FRAME_KEY = re.compile(r"Verlet -?\d{4,}$")   # ours too: verlet.bake_to_shape_keys, one per frame


class BridgeError(ValueError):
    """Bad input found while reading Blender data; the message names the object and the cause."""


def evaluated_mesh(obj, depsgraph):
    """The evaluated mesh of obj (modifiers applied) and the evaluated object; call
    ``obj_eval.to_mesh_clear()`` when done with it."""
    if obj.type != "MESH":
        kind = obj.type.lower().replace("_", " ")
        article = "an" if kind[:1] in "aeiou" else "a"
        raise BridgeError(f"{obj.name}: is {article} {kind} object, not a mesh; only meshes can "
                          "be simulated (set its Verlet kind to None, or convert it to a mesh)")
    if obj.mode == "EDIT":
        raise BridgeError(f"{obj.name}: is in Edit Mode; leave Edit Mode to simulate it")
    obj_eval = obj.evaluated_get(depsgraph)
    return obj_eval.to_mesh(), obj_eval


def positions(mesh):
    """(n, 3) float64 vertex positions [m] in the mesh's own (object) space."""
    n = len(mesh.vertices)
    if n == 0:          # an empty mesh has no position attribute at all
        return np.zeros((0, 3))
    buf = np.empty(n * 3, dtype=np.float32)
    mesh.attributes["position"].data.foreach_get("vector", buf)
    return buf.reshape(n, 3).astype(np.float64)


def polygon_corners(mesh):
    """(loop_start (p,), loop_total (p,), corner vertex (l,)) int64 arrays of the mesh's
    polygons, one bulk read each."""
    p = len(mesh.polygons)
    start = np.empty(p, dtype=np.int64)
    total = np.empty(p, dtype=np.int64)
    mesh.polygons.foreach_get("loop_start", start)
    mesh.polygons.foreach_get("loop_total", total)
    corner = np.empty(len(mesh.loops), dtype=np.int64)
    mesh.loops.foreach_get("vertex_index", corner)
    return start, total, corner


def faces(mesh):
    """Polygons: a (k, s) int64 array when all have s corners, else a list of int64 arrays."""
    start, total, corner = polygon_corners(mesh)
    p = len(start)
    if p == 0:
        return []
    if np.all(total == total[0]):
        return corner.reshape(p, int(total[0]))
    return [corner[s:s + t] for s, t in zip(start, total)]


def edges(mesh):
    """(e, 2) int64 vertex pairs of the mesh edges."""
    e = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    mesh.edges.foreach_get("vertices", e)
    return e.reshape(-1, 2).astype(np.int64)


def to_world(matrix_world, x):
    m = np.array(matrix_world, dtype=np.float64)
    return x @ m[:3, :3].T + m[:3, 3]


def to_local(matrix_world, x):
    m = np.linalg.inv(np.array(matrix_world, dtype=np.float64))
    return x @ m[:3, :3].T + m[:3, 3]


def group_weights(obj, mesh, name):
    """(n,) float64 weights of vertex group ``name`` (0 where unassigned). Build-time only: vertex
    group membership has no bulk accessor, so this walks the vertices once."""
    vg = obj.vertex_groups.get(name)
    if vg is None:
        raise BridgeError(f"{obj.name}: vertex group '{name}' does not exist")
    gi = vg.index
    w = np.zeros(len(mesh.vertices))
    for v in mesh.vertices:
        for g in v.groups:
            if g.group == gi:
                w[v.index] = g.weight
    return w


# {(object name, group name): (signature, (n,) float64 weights)}; see display_group_weights
_weights = {}


def display_group_weights(obj, name):
    """group_weights for the display path (a user's shape key restricted to a vertex group, on
    every shown frame): read once, then again only when they may have changed: another mesh
    or vertex count, the group renamed or reindexed, or the object in a mode where weights are
    painted or edited (then read every frame). forget_weights() drops them (undo, file load)."""
    vg = obj.vertex_groups.get(name)
    mesh = obj.data
    sig = (mesh.as_pointer(), len(mesh.vertices), None if vg is None else vg.index)
    key = (obj.name, name)
    known = _weights.get(key)
    if known is not None and known[0] == sig and obj.mode == "OBJECT":
        return known[1]
    w = group_weights(obj, mesh, name)
    _weights[key] = (sig, w)
    return w


def forget_weights():
    _weights.clear()


def topology_hash(n_vertices, face_list):
    """A hash of the vertex count and the faces, to tell when a cache no longer fits the mesh."""
    h = hashlib.sha256(str(int(n_vertices)).encode())
    if isinstance(face_list, np.ndarray):
        h.update(np.ascontiguousarray(face_list, dtype=np.int64).tobytes())
    else:
        for f in face_list:
            h.update(np.asarray(f, dtype=np.int64).tobytes())
            h.update(b"|")
    return h.hexdigest()[:16]


def ensure_display_key(obj):
    """Our display shape key (created with a Basis if the mesh has none). Returns the key."""
    mesh = obj.data
    if mesh.shape_keys is None or DISPLAY_KEY not in mesh.shape_keys.key_blocks:
        if mesh.shape_keys is None:
            obj.shape_key_add(name="Basis", from_mix=False)
            mesh.shape_keys["verlet_added_basis"] = True     # ours: removed with our key
        key = obj.shape_key_add(name=DISPLAY_KEY, from_mix=False)
        key.value = 1.0
    return mesh.shape_keys.key_blocks[DISPLAY_KEY]


def user_modifiers(obj):
    """Names of the object's modifiers other than ours that are enabled in the viewport or the
    render: any of them means a shape key would be deformed again (see the module docstring)."""
    return [m.name for m in obj.modifiers
            if m.name not in OUR_MODIFIERS and (m.show_viewport or m.show_render)]


def write_display(obj, local_positions):
    """Show (n, 3) object-space positions: through our shape key, or through our attribute and
    Geometry Nodes modifier when the object has enabled modifiers of its own (module docstring).
    Switching paths removes the other one's data."""
    x = np.asarray(local_positions, dtype=np.float64)
    keys = obj.data.shape_keys
    ours = keys.key_blocks.get(DISPLAY_KEY) if keys is not None else None
    if ours is not None and ours.mute:
        if any(FRAME_KEY.match(kb.name) for kb in keys.key_blocks):
            # Bake to Shape Keys muted it: its keyed per-frame keys show the bake now (and
            # what Blender's exporters read); writing ours would only get in their way
            return
        ours.mute = False               # those keys deleted since: ours shows the bake again
    if user_modifiers(obj) or keys_hide_ours(obj):
        remove_display_key(obj)
        write_display_attribute(obj, x)
        return
    remove_display_modifier(obj)
    key = ensure_display_key(obj)
    # changed: net of what the user's other active shape keys add, so that the mix shows exactly
    # these positions (a user key at 0.5 used to be added on top of the simulated shape)
    off = other_keys_offset(obj, key)
    if off is not None:
        x = x - off
    key.data.foreach_set("co", x.astype(np.float32).ravel())
    key.value = 1.0
    obj.data.update()


def keys_hide_ours(obj):
    """Whether a shape key of ours would not show: Shape Key Lock (the pin) shows the active
    key alone, and absolute keys (Relative off) are played by their Evaluation Time, where a key
    added among them would change the user's own animation. The bake then shows through our
    attribute and modifier, which act after every shape key."""
    keys = obj.data.shape_keys
    return bool(obj.show_only_shape_key) or (keys is not None and not keys.use_relative)


def write_display_attribute(obj, local_positions):
    """Write positions into our point attribute (one foreach_set) and make sure our display
    modifier is the last of the stack, so it shows them over every modifier of the user's."""
    ensure_display_modifier(obj)
    mesh = obj.data
    attr = mesh.attributes.get(DISPLAY_ATTRIBUTE)
    if attr is not None and (attr.data_type != "FLOAT_VECTOR" or attr.domain != "POINT"):
        mesh.attributes.remove(attr)
        attr = None
    if attr is None:
        attr = mesh.attributes.new(DISPLAY_ATTRIBUTE, "FLOAT_VECTOR", "POINT")
    attr.data.foreach_set("vector", np.ascontiguousarray(local_positions, dtype=np.float32).ravel())
    mesh.update()


def _display_group(create):
    """Our node group: Group Input -> Set Position (Position = Named Attribute DISPLAY_ATTRIBUTE,
    Selection = its Exists output) -> Group Output. Created once, found again by its mark."""
    for ng in bpy.data.node_groups:
        if ng.get(GROUP_MARK):
            return ng
    if not create:
        return None
    ng = bpy.data.node_groups.new(DISPLAY_GROUP, "GeometryNodeTree")
    ng[GROUP_MARK] = True
    ng.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    ng.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    gin = ng.nodes.new("NodeGroupInput")
    gout = ng.nodes.new("NodeGroupOutput")
    named = ng.nodes.new("GeometryNodeInputNamedAttribute")
    named.data_type = "FLOAT_VECTOR"
    named.inputs["Name"].default_value = DISPLAY_ATTRIBUTE
    setpos = ng.nodes.new("GeometryNodeSetPosition")
    gin.location, named.location = (-400, 0), (-400, -200)
    setpos.location, gout.location = (-100, 0), (200, 0)
    ng.links.new(gin.outputs[0], setpos.inputs["Geometry"])
    ng.links.new(named.outputs["Attribute"], setpos.inputs["Position"])
    ng.links.new(named.outputs["Exists"], setpos.inputs["Selection"])
    ng.links.new(setpos.outputs["Geometry"], gout.inputs[0])
    return ng


def ensure_display_modifier(obj):
    """Our Geometry Nodes display modifier, created if missing and moved to the end of the stack
    (a modifier the user adds later would otherwise act on the displayed result)."""
    mod = obj.modifiers.get(DISPLAY_MODIFIER)
    if mod is not None and mod.type != "NODES":
        raise BridgeError(f"{obj.name}: the modifier '{DISPLAY_MODIFIER}' is not ours (it is a "
                          f"{mod.type.lower()} modifier); rename it to simulate this object")
    if mod is None:
        mod = obj.modifiers.new(DISPLAY_MODIFIER, "NODES")
    group = _display_group(create=True)
    if mod.node_group != group:
        mod.node_group = group
    last = len(obj.modifiers) - 1
    i = obj.modifiers.find(DISPLAY_MODIFIER)
    if i != last:
        obj.modifiers.move(i, last)
    return mod


def remove_display_modifier(obj):
    """Remove our display modifier, our attribute, and our node group once nothing uses it."""
    mod = obj.modifiers.get(DISPLAY_MODIFIER)
    if mod is not None and mod.type == "NODES":
        obj.modifiers.remove(mod)
    attr = obj.data.attributes.get(DISPLAY_ATTRIBUTE)
    if attr is not None:
        obj.data.attributes.remove(attr)
    group = _display_group(create=False)
    if group is not None and group.users == 0:
        bpy.data.node_groups.remove(group)


def remove_display(obj):
    """Remove every display datum of ours from a mesh object (both paths)."""
    remove_display_key(obj)
    remove_display_modifier(obj)


@contextlib.contextmanager
def display_modifiers_off(objs):
    """Turn our display off (restored after): our display modifiers in the viewport, and our
    display shape keys (muted), so that the evaluated meshes read meanwhile are the user's own
    (pins' targets: a soft pin read from the displayed key chased its own sag). Yields True
    when something was turned off: the caller must then get a freshly evaluated depsgraph."""
    off, muted = [], []
    for obj in objs:
        if obj.type != "MESH":
            continue
        mod = obj.modifiers.get(DISPLAY_MODIFIER)
        if mod is not None and mod.show_viewport:
            mod.show_viewport = False
            off.append(mod)
        keys = obj.data.shape_keys
        kb = keys.key_blocks.get(DISPLAY_KEY) if keys is not None else None
        if kb is not None and not kb.mute:
            kb.mute = True
            muted.append(kb)
    try:
        yield bool(off or muted)
    finally:
        for mod in off:
            mod.show_viewport = True
        for kb in muted:
            kb.mute = False


def _key_co(kb):
    co = np.empty(len(kb.data) * 3, dtype=np.float32)
    kb.data.foreach_get("co", co)
    return co.reshape(-1, 3).astype(np.float64)


def other_keys_offset(obj, ours, users_only=False, values=None):
    """(n, 3) what the mesh's other shape keys add to the reference key at their current values
    (Blender's relative mix: value x vertex-group weight x (key - its relative key)), or None
    when they add nothing. Absolute (non-relative) keys are left alone. ``users_only`` leaves
    out our per-frame keys too (Bake to Shape Keys writes them net of the user's keys only:
    each is on at its own frame alone). ``values`` ({key name: value}) stands for the keys'
    current values where given (an animated key's value at another frame)."""
    keys = obj.data.shape_keys
    if keys is None or not keys.use_relative:
        return None
    off = None
    for kb in keys.key_blocks:
        value = values.get(kb.name, kb.value) if values else kb.value
        if kb == ours or kb == keys.reference_key or kb.mute or value == 0.0 \
                or kb.relative_key == kb or (users_only and FRAME_KEY.match(kb.name)):
            continue
        d = (_key_co(kb) - _key_co(kb.relative_key)) * value
        if kb.vertex_group:
            try:
                d *= display_group_weights(obj, kb.vertex_group)[:, None]
            except BridgeError:         # a missing group: Blender then applies no weight
                pass
        off = d if off is None else off + d
    return off


def remove_display_key(obj):
    """Remove our shape key (and the Basis we added if nothing else remains)."""
    mesh = obj.data
    if mesh.shape_keys is None or DISPLAY_KEY not in mesh.shape_keys.key_blocks:
        return
    # removing a key makes another one active: the user's active key stays the active one
    active = obj.active_shape_key.name if obj.active_shape_key is not None else None
    obj.shape_key_remove(mesh.shape_keys.key_blocks[DISPLAY_KEY])
    keys = mesh.shape_keys
    if keys is not None and len(keys.key_blocks) == 1 and keys.key_blocks[0].name == "Basis" \
            and keys.get("verlet_added_basis", False):
        obj.shape_key_remove(keys.key_blocks[0])
    keys = mesh.shape_keys
    if keys is not None and active in keys.key_blocks:
        obj.active_shape_key_index = keys.key_blocks.find(active)


def user_data_hash(obj):
    """A hash of the user's mesh, shape keys and vertex groups, leaving out our own data: used by
    tests (and debug checks) to prove an operation changed nothing of the user's. Of the mesh's
    attributes only "position" is read (so our DISPLAY_ATTRIBUTE is left out), and modifiers are
    not part of it (so neither is our DISPLAY_MODIFIER or the PC2 one)."""
    mesh = obj.data
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(positions(mesh)).tobytes())
    h.update(np.ascontiguousarray(edges(mesh)).tobytes())
    f = faces(mesh)
    h.update(topology_hash(len(mesh.vertices), f).encode())
    if mesh.shape_keys is not None:
        ours_basis = mesh.shape_keys.get("verlet_added_basis", False)
        for kb in mesh.shape_keys.key_blocks:
            # changed: bake_to_shape_keys' per-frame keys are our named data too
            if kb.name == DISPLAY_KEY or FRAME_KEY.match(kb.name) or \
                    (ours_basis and kb.name == "Basis"):
                continue
            co = np.empty(len(kb.data) * 3, dtype=np.float32)
            kb.data.foreach_get("co", co)
            h.update(kb.name.encode())
            h.update(co.tobytes())
            h.update(np.float32(kb.value).tobytes())
    for vg in obj.vertex_groups:
        h.update(vg.name.encode())
        h.update(group_weights(obj, mesh, vg.name).tobytes())
    return h.hexdigest()
