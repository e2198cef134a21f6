"""Who is signed in: basic-auth credentials checked against the web configuration's bcrypt
hashes off the event loop. bcrypt runs in one worker thread (it lets go of the GIL), so a
flood of wrong passwords costs one core at most and the page's other answers go on; a
granted pair is remembered (a signed-in user pays bcrypt once); an unknown name is checked
against a dummy hash of the users' cost, so its answer takes as long as a known name's;
the same credentials asked at once share one check, and at most PER_ADDRESS different
checks are in flight per client address (more: Busy, answered 429 at once)."""
import asyncio
import hashlib
from concurrent.futures import ThreadPoolExecutor

import bcrypt

from strata.prometheus.webconfig import basic_credentials

PER_ADDRESS = 2       # checks in flight per client address
GRANTED = 1024        # credentials remembered


class Busy(Exception):
    """Too many checks in flight from one address."""


class Authenticator:
    def __init__(self, users: dict):
        self.users = users                       # name -> bcrypt hash (bytes)
        self.granted = set()                     # sha256 of name \0 password, for granted ones
        self.checking = {}                       # digest -> its check's future
        self.inflight = {}                       # client address -> checks in flight
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="strata-auth")
        cost = max((int(h[4:6]) for h in users.values()), default=4)
        self.dummy = self.pool.submit(bcrypt.hashpw, b"no such user", bcrypt.gensalt(cost))

    def close(self):
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _check(self, name: str, password: bytes) -> bool:
        """In the worker: bcrypt against the user's hash, or the dummy one for an unknown name."""
        stored = self.users.get(name)
        ok = bcrypt.checkpw(password, stored if stored is not None else self.dummy.result())
        return ok and stored is not None

    async def user(self, header: str, address: str) -> str | None:
        """The name the Authorization header proves, '' when there are no users, None when it
        proves none; Busy when `address` has PER_ADDRESS checks in flight already."""
        if not self.users:
            return ""
        credentials = basic_credentials(header)
        if credentials is None:
            return None
        name, password = credentials
        digest = hashlib.sha256(f"{name}\0{password}".encode()).digest()
        if digest in self.granted:
            return name
        check = self.checking.get(digest)
        if check is None:
            if self.inflight.get(address, 0) >= PER_ADDRESS:
                raise Busy(address)
            self.inflight[address] = self.inflight.get(address, 0) + 1
            check = self.checking[digest] = asyncio.get_running_loop().run_in_executor(
                self.pool, self._check, name, password.encode())
            check.add_done_callback(lambda _f: self._done(digest, address))
        ok = await asyncio.shield(check)
        if ok and len(self.granted) < GRANTED:
            self.granted.add(digest)
        return name if ok else None

    def _done(self, digest, address):
        self.checking.pop(digest, None)
        left = self.inflight.get(address, 1) - 1
        if left:
            self.inflight[address] = left
        else:
            self.inflight.pop(address, None)
