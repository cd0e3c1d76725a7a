"""Material presets from ``presets/materials.json`` (shared with the add-on's presets menu).

load_presets() returns {name: {setting: value}}; each preset names its body kind and the
Builder / Simulation settings it implies (units in the file's "_doc"). Validation is strict: an
unknown kind, a negative number or an unknown setting is an error naming the preset, because a
preset file edited by a studio must not silently do nothing.
"""

import json
import math
import os

PRESETS_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "presets", "materials.json")
KINDS = {"CLOTH", "PLANT", "SOFT", "RIGID"}
SETTINGS = {"density", "stretch_compliance", "shear_compliance", "bend_compliance", "friction",
            "damping", "air_drag", "stiffness", "pressure", "volume_compliance", "restitution"}


def load_presets(path=PRESETS_FILE):
    """{name: {"kind": str, setting: float}} from a presets JSON file (keys starting with "_"
    are comments). Raises ValueError naming the file and preset on bad content."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    out = {}
    for name, preset in data.items():
        if name.startswith("_"):
            continue
        if preset.get("kind") not in KINDS:
            raise ValueError(f"{path}: preset {name!r}: kind must be one of {sorted(KINDS)}")
        values = {}
        for key, value in preset.items():
            if key == "kind":
                continue
            if key not in SETTINGS:
                raise ValueError(f"{path}: preset {name!r}: unknown setting {key!r}")
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{path}: preset {name!r}: {key} must be a number >= 0")
            values[key] = float(value)
        if values.get("damping", 0.0) > 1.0 or values.get("restitution", 0.0) > 1.0:
            raise ValueError(f"{path}: preset {name!r}: damping and restitution must be <= 1")
        if "stiffness" in values and not 0 < values["stiffness"] <= 1:
            raise ValueError(f"{path}: preset {name!r}: stiffness must be in (0, 1]")
        out[name] = {"kind": preset["kind"], **values}
    return out
