"""`strata collect --web-config FILE`: TLS and basic auth for the metrics endpoint, in the
exporter-toolkit's format (the file node_exporter and other Prometheus exporters read):

    tls_server_config:
      cert_file: server.crt            # both, or no tls_server_config at all
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert   # or NoClientCert (default), VerifyClientCertIfGiven
      client_ca_file: ca.crt           # the CAs client certificates must chain to
      min_version: TLS12               # TLS10 .. TLS13 (default TLS12)
    basic_auth_users:
      prometheus: $2y$10$...           # bcrypt hashes (htpasswd -nBC 10 "" | tr -d ':\\n')

Relative paths are relative to the file. A key this build does not know, a file
that cannot be read, a key without its certificate or a hash that is not bcrypt:
one WebConfigError line naming it, before anything is served.
"""
import base64
import binascii
import dataclasses
import hashlib
import os
import ssl
import threading

import bcrypt
import yaml

TLS_KEYS = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version"}
CLIENT_AUTH = {"NoClientCert": ssl.CERT_NONE, "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
               "RequireAndVerifyClientCert": ssl.CERT_REQUIRED}
VERSIONS = {"TLS10": ssl.TLSVersion.TLSv1, "TLS11": ssl.TLSVersion.TLSv1_1,
            "TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}


class WebConfigError(ValueError):
    """One line: FILE: what is wrong."""


@dataclasses.dataclass
class WebConfig:
    tls: ssl.SSLContext = None       # None: plain HTTP
    users: dict = dataclasses.field(default_factory=dict)    # name -> bcrypt hash (bytes); empty: no auth
    _granted: set = dataclasses.field(default_factory=set)   # digests of credentials already checked
    _hashing: threading.Semaphore = dataclasses.field(default_factory=lambda: threading.Semaphore(1))

    def allows(self, user: str, password: str) -> bool:
        """Whether the credentials match; bcrypt runs one check at a time (a flood of wrong
        passwords costs one core at most), a match is remembered so scrapes pay it once. An
        unknown name is checked against another user's hash, so its answer takes as long as
        a known name's and does not tell which names exist."""
        if not self.users:
            return True
        digest = hashlib.sha256(f"{user}\0{password}".encode()).digest()
        if digest in self._granted:
            return True
        stored = self.users.get(user)
        with self._hashing:
            ok = bcrypt.checkpw(password.encode(), stored or next(iter(self.users.values()))) and bool(stored)
        if ok and len(self._granted) < 1024:
            self._granted.add(digest)
        return ok


def basic_credentials(header: str) -> tuple[str, str] | None:
    """(name, password) from an `Authorization: Basic ...` header, None when it holds none."""
    kind, _, encoded = header.partition(" ")
    if kind.lower() != "basic":
        return None
    try:
        name, sep, password = base64.b64decode(encoded.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return (name, password) if sep else None


def load(path: str) -> WebConfig:
    try:
        with open(path, "rb") as f:
            data = yaml.safe_load(f.read(1 << 20))
    except OSError as e:
        raise WebConfigError(f"{path}: cannot read the web configuration ({e.strerror})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark else ""
        raise WebConfigError(f"{path}{where}: not valid YAML: {getattr(e, 'problem', None) or e}") from None
    data = {} if data is None else data

    def fail(msg):
        raise WebConfigError(f"{path}: {msg}")
    if not isinstance(data, dict):
        fail("expected a mapping with tls_server_config and/or basic_auth_users")
    for key in data:
        if key not in ("tls_server_config", "basic_auth_users"):
            fail(f"{key}: unknown key (this build reads tls_server_config and basic_auth_users)")
    here = os.path.dirname(os.path.abspath(path))
    config = WebConfig(users=_users(data.get("basic_auth_users") or {}, fail))
    tls = data.get("tls_server_config")
    if tls is not None:
        config.tls = _tls(tls, here, fail)
    return config


def _users(users, fail) -> dict:
    if not isinstance(users, dict):
        fail("basic_auth_users: expected a mapping of user names to bcrypt hashes")
    out = {}
    for name, hashed in users.items():
        if not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")) or len(hashed) != 60:
            fail(f"basic_auth_users: {name}: not a bcrypt hash ($2y$..., 60 characters)")
        out[str(name)] = hashed.encode()
    return out


def _tls(tls, here, fail) -> ssl.SSLContext:
    if not isinstance(tls, dict):
        fail("tls_server_config: expected a mapping")
    for key in tls:
        if key not in TLS_KEYS:
            fail(f"tls_server_config.{key}: unknown key (known: {', '.join(sorted(TLS_KEYS))})")
    if not tls.get("cert_file") or not tls.get("key_file"):
        fail("tls_server_config: cert_file and key_file are both needed")
    mode = tls.get("client_auth_type", "NoClientCert")
    if mode not in CLIENT_AUTH:
        fail(f"tls_server_config.client_auth_type: {mode!r} is not one of {', '.join(CLIENT_AUTH)}")
    version = tls.get("min_version", "TLS12")
    if version not in VERSIONS:
        fail(f"tls_server_config.min_version: {version!r} is not one of {', '.join(VERSIONS)}")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = VERSIONS[version]
    ctx.verify_mode = CLIENT_AUTH[mode]
    cert, key = (os.path.join(here, str(tls[k])) for k in ("cert_file", "key_file"))
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        fail(f"tls_server_config: cannot load {cert} with {key}: {getattr(e, 'strerror', None) or e.reason or e}")
    if tls.get("client_ca_file"):
        ca = os.path.join(here, str(tls["client_ca_file"]))
        try:
            ctx.load_verify_locations(ca)
        except (OSError, ssl.SSLError) as e:
            fail(f"tls_server_config.client_ca_file: cannot load {ca}: {getattr(e, 'strerror', None) or e}")
    elif mode != "NoClientCert":
        fail(f"tls_server_config: client_auth_type {mode} needs client_ca_file")
    return ctx
