"""The envelope and number hygiene of every `--json` document (heatmaps/JSON.md):
a schema name and version first, floats rounded to 12 significant digits (no
17439999.999999996), NaN and infinities as null."""
import json
import math

import numpy as np

SCHEMA_VERSION = 1


def document(schema: str, body: dict) -> dict:
    """body under {"schema": "strata.<schema>", "schema_version": N}; a reader checks both."""
    return {"schema": f"strata.{schema}", "schema_version": SCHEMA_VERSION, **body}


def clean(x):
    """x with numpy scalars made plain, floats rounded and whole floats made ints."""
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return clean(x.tolist())
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        if not math.isfinite(x):
            return None
        r = float(f"{float(x):.12g}")
        return int(r) if r.is_integer() and abs(r) < 2 ** 53 else r
    return x


def dumps(doc: dict) -> str:
    return json.dumps(clean(doc), indent=1, ensure_ascii=False)
