"""Half-block drawing: a grid of colour indices becomes text, two cells per character.

Each character is '▀' with the upper cell as foreground and the lower one as
background ('▄' or '█' when one or both halves share a colour; a space where
both are empty), so a terminal line shows two rows. Escapes are emitted only
when the colours change.
"""
import numpy as np

from . import palette


def draw(cells: np.ndarray, colours, mode: str) -> list:
    """Lines (top first) for cells (ncells, ncols), row 0 at the bottom; -1 = empty,
    otherwise an index into colours (a sequence of RGB triples)."""
    ncells, ncols = cells.shape
    nlines = (ncells + 1) // 2
    padded = np.full((nlines * 2, ncols), -1, dtype=np.int64)
    padded[:ncells] = cells
    fgs = [palette.fg(c, mode) for c in colours]
    bgs = [palette.bg(c, mode) for c in colours]
    out = []
    for line in range(nlines):
        upper = padded[nlines * 2 - 1 - 2 * line].tolist()
        lower = padded[nlines * 2 - 2 - 2 * line].tolist()
        parts, state = [], None
        for u, lo in zip(upper, lower):
            if u < 0 and lo < 0:
                key, text = (-1, -1), " "
            elif lo < 0:
                key, text = (u, -1), "▀"
            elif u < 0:
                key, text = (lo, -1), "▄"
            elif u == lo:
                key, text = (u, -1), "█"
            else:
                key, text = (u, lo), "▀"
            if key != state:
                code = palette.RESET
                if key[0] >= 0:
                    code += fgs[key[0]]
                if key[1] >= 0:
                    code += bgs[key[1]]
                parts.append(code)
                state = key
            parts.append(text)
        parts.append(palette.RESET)
        out.append("".join(parts))
    return out
