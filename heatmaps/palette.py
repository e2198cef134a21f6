"""Colour: count -> colour level (log scale), palettes, and ANSI escapes.

Terminals get a magma ramp that brightens with the count (dark backgrounds);
HTML and images get it reversed, darker meaning more, as on the appliance.
Without colour the density ramp " .:-=+*#%@" stands in.
"""
import numpy as np

# magma colormap stops (matplotlib's), from its deep purple to its pale yellow
_MAGMA = ["#2c115f", "#51127c", "#721f81", "#932b80", "#b73779", "#d8456c",
          "#f1605d", "#fc8961", "#feb078", "#fed799", "#fcfdbf"]
TERM_STOPS = _MAGMA
HTML_STOPS = ["#fde8c4", "#fec287", "#fc8961", "#f1605d", "#d8456c", "#b73779",
              "#8c2981", "#641a80", "#3b0f70", "#180f3d", "#000004"]
NLEVELS = 48
PLAIN_RAMP = " .:-=+*#%@"
# percentile lines: hues the magma ramp never uses
TERM_LINE_COLOURS = ["#34e4ff", "#7dff5a", "#ffffff", "#4d8dff"]
HTML_LINE_COLOURS = ["#0a84ff", "#00b86b", "#00c8d7", "#1f3fff"]
PLAIN_LINE_MARKS = "123456789"


def hex_rgb(colour: str) -> tuple:
    colour = colour.lstrip("#")
    return tuple(int(colour[i:i + 2], 16) for i in (0, 2, 4))


def ramp(stops, n: int = NLEVELS) -> np.ndarray:
    """(n, 3) uint8 colours interpolated evenly through `stops`."""
    rgb = np.array([hex_rgb(s) for s in stops], dtype=np.float64)
    at = np.linspace(0, len(stops) - 1, n)
    lo = np.floor(at).astype(int)
    hi = np.minimum(lo + 1, len(stops) - 1)
    frac = (at - lo)[:, None]
    return np.round(rgb[lo] * (1 - frac) + rgb[hi] * frac).astype(np.uint8)


def levels(density: np.ndarray, top: float, n: int = NLEVELS) -> np.ndarray:
    """Colour level per cell on a log scale: -1 for empty cells, else 0..n-1."""
    d = np.asarray(density, dtype=np.float64)
    out = np.full(d.shape, -1, dtype=np.int64)
    live = d > 0
    if top <= 0 or not live.any():
        return out
    scaled = np.log1p(d[live]) / np.log1p(top)
    out[live] = np.clip(np.floor(scaled * n), 0, n - 1).astype(np.int64)
    return out


def rgb_to_256(rgb) -> int:
    """Nearest xterm-256 colour (6x6x6 cube or grey ramp)."""
    r, g, b = (int(x) for x in rgb)
    steps = [0, 95, 135, 175, 215, 255]
    def nearest(v):
        return min(range(6), key=lambda i: abs(steps[i] - v))
    ci = (nearest(r), nearest(g), nearest(b))
    cube = 16 + 36 * ci[0] + 6 * ci[1] + ci[2]
    cube_err = sum((steps[c] - v) ** 2 for c, v in zip(ci, (r, g, b)))
    grey = min(range(24), key=lambda i: abs(8 + 10 * i - (r + g + b) / 3))
    gv = 8 + 10 * grey
    grey_err = sum((gv - v) ** 2 for v in (r, g, b))
    return 232 + grey if grey_err < cube_err else cube


def fg(rgb, mode: str) -> str:
    if mode == "truecolor":
        return "\x1b[38;2;%d;%d;%dm" % tuple(int(x) for x in rgb)
    return "\x1b[38;5;%dm" % rgb_to_256(rgb)


def bg(rgb, mode: str) -> str:
    if mode == "truecolor":
        return "\x1b[48;2;%d;%d;%dm" % tuple(int(x) for x in rgb)
    return "\x1b[48;5;%dm" % rgb_to_256(rgb)


RESET = "\x1b[0m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
