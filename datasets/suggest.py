""""Did you mean": the three known names closest to a mistyped one, for messages
that would otherwise list every choice (about a hundred NFS operations)."""
import difflib

SHOWN = 3


def closest(word: str, choices, n: int = SHOWN) -> list:
    """Up to n of choices nearest to word, nearest first (difflib's ratio), or the
    choices that contain word when none is near."""
    choices = list(dict.fromkeys(choices))
    near = difflib.get_close_matches(word, choices, n=n, cutoff=0.5)
    return near or [c for c in choices if word and word.lower() in c.lower()][:n]


def did_you_mean(word: str, choices, listed_by: str = "") -> str:
    """'; did you mean read, readdir or readlink?' (+ where all are listed), '' when
    nothing is near (then the caller lists what exists)."""
    near = closest(word, choices)
    if not near:
        return ""
    alternatives = near[0] if len(near) == 1 else ", ".join(near[:-1]) + " or " + near[-1]
    return f"; did you mean {alternatives}?" + (f" ({listed_by} lists all {len(set(choices))})" if listed_by else "")
