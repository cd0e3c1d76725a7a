"""What the UI reads about bakes: custom properties the bake code sets and clears.

The bake code owns these keys (it writes them; this module only reads them, no bpy import):

- ``obj["verlet_baked"]``: True while the object has a usable bake (settings are then locked);
- ``obj["verlet_status"]``: a one-line cache status for the Cache panel;
- ``obj["verlet_outdated"]``: why the bake no longer matches the object ("settings",
  "unusable" for a topology change or a damaged file, "missing", "range" for a simulation
  range extended beyond the baked frames); absent while it matches;
- ``scene["verlet_error"]``: the last bake / playback error, "" when the last run succeeded.
"""

BAKED_KEY = "verlet_baked"
STATUS_KEY = "verlet_status"
ERROR_KEY = "verlet_error"
OUTDATED_KEY = "verlet_outdated"
NOT_BAKED = "Not baked"


def has_bake(obj):
    """True when ``obj`` has a bake (its simulation settings are then read-only in the UI)."""
    return obj is not None and bool(obj.get(BAKED_KEY, False))


def bake_is_outdated(scene):
    """True when a bake of the scene no longer matches it (settings or topology changed since,
    or its file is missing or damaged): the Cache panel then offers Bake again."""
    return scene is not None and any(bool(o.get(OUTDATED_KEY)) for o in scene.objects)


def status_text(obj):
    """One-line cache status of ``obj``, e.g. "Baked 1-250, on disk" or "Not baked"."""
    if obj is None:
        return NOT_BAKED
    return str(obj.get(STATUS_KEY, NOT_BAKED)) or NOT_BAKED


def last_error(scene):
    """The last bake or playback error of ``scene`` ("" when there is none)."""
    if scene is None:
        return ""
    return str(scene.get(ERROR_KEY, "") or "")
