"""The Debian mirrors this machine's apt uses, read from its own apt sources as apt reads them:
one-line entries (`deb [options] URI SUITE COMPONENT...`) in sources.list and
sources.list.d/*.list, deb822 stanzas (Types, URIs, Suites, Enabled) in sources.list.d/*.sources.
A Debian entry is one whose suite is a Debian release's (bookworm, bullseye-security, ...);
other vendors' entries are ignored. The kernel fetcher (kernels.py) takes its mirrors from here,
so a machine set up with a local mirror or a proxy fetches through it."""
import re
from dataclasses import dataclass
from pathlib import Path

CODENAMES = ("buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid", "unstable", "testing",
             "stable", "oldstable", "oldoldstable")
SUFFIXES = ("", "-updates", "-backports", "-backports-sloppy", "-proposed-updates", "-security")


class SourcesError(Exception):
    """Apt sources that name no Debian mirror; the message is one line."""


@dataclass(frozen=True)
class Entry:
    uri: str
    suite: str


def _is_debian(suite: str) -> bool:
    return any(suite == c + s for c in CODENAMES for s in SUFFIXES)


def _one_line(path: Path) -> list:
    out = []
    for line in path.read_text(errors="replace").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        line = re.sub(r"\[[^\]]*\]", " ", line, count=1)   # [arch=amd64 signed-by=...]
        words = line.split()
        if len(words) >= 3 and words[0] == "deb":
            out.append(Entry(words[1].rstrip("/"), words[2]))
    return out


def _deb822(path: Path) -> list:
    out = []
    stanzas = re.split(r"\n\s*\n", path.read_text(errors="replace"))
    for stanza in stanzas:
        fields, last = {}, None
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0] in " \t" and last:                        # a folded continuation line
                fields[last] += " " + line.strip()
                continue
            name, sep, value = line.partition(":")
            if sep:
                last = name.strip().lower()
                fields[last] = value.strip()
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").lower() in ("no", "false", "0"):
            continue
        for uri in fields.get("uris", "").split():
            for suite in fields.get("suites", "").split():
                out.append(Entry(uri.rstrip("/"), suite))
    return out


def entries(etc: Path = Path("/etc/apt")) -> list:
    """Every enabled binary (deb) entry of the apt sources under etc, in apt's file order."""
    files = []
    if (etc / "sources.list").is_file():
        files.append(etc / "sources.list")
    parts = etc / "sources.list.d"
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources") and p.is_file())
    out = []
    for f in files:
        out += _one_line(f) if f.suffix == ".list" else _deb822(f)
    return out


def mirrors(etc: Path = Path("/etc/apt")) -> dict:
    """{"debian": URI, "security": URI or None}: the first Debian archive and the first
    security archive the sources name; SourcesError when they name no Debian archive."""
    found = {"debian": None, "security": None}
    for e in entries(etc):
        if not _is_debian(e.suite) or e.uri.startswith("cdrom:"):
            continue
        role = "security" if e.suite.endswith("-security") else "debian"
        found[role] = found[role] or e.uri
    if found["debian"] is None:
        raise SourcesError(f"the apt sources under {etc} name no Debian archive "
                           f"(a 'deb URI bookworm main' line or a deb822 stanza): add your mirror there")
    return found
