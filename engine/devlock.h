/* devlock.h — one engine per device: every vdev, log and cache device an engine
 * opens is locked whole with an OFD write lock (fcntl F_OFD_SETLK) on its open
 * file description.  The kernel drops the lock when the holder's descriptors close,
 * however it ends (kill -9 included), so a lock left by a dead process never blocks.
 * A pool vdev also names its holder in its holder block (pool.c): host, pid, since.
 * A lock this process holds through another descriptor does not refuse it (no other
 * process has the file open): the engine reads the pool's embedded log region through
 * vdev 0 again. */
#ifndef ENGINE_DEVLOCK_H
#define ENGINE_DEVLOCK_H

#include <stddef.h>

/* Lock the device open on fd (path: for the message).  0; or -1 with err set: one
 * line naming the holder ("PATH is in use by strata-engine pid N") when another
 * open file holds it, `who` (may be NULL) saying more about it (host, since). */
int devlock_take(int fd, const char *path, const char *who, char *err, size_t errsz);
/* Whether the device open on fd is locked by another open file; 0 if it is free. */
int devlock_held(int fd);

#endif
