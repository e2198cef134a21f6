/* fs_names.h — the file-system layer's keys as text: files (device, inode) by the paths
 * of the program's openat ring buffer and the followed processes' open files; processes. */
#ifndef STRATA_COLLECT_FS_NAMES_H
#define STRATA_COLLECT_FS_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "keys.h"

/* Reads the program's fs_names ring buffer from now on (openat paths). 0, or -1. */
int fs_names_bind(int ringbuf_fd);
/* Learns the paths openat calls were given since the last call. */
void fs_names_drain(void);
/* Stops reading the ring buffer. */
void fs_names_unbind(void);

/* The file and process dimensions' codec: a path that names the inode now (else
 * inode:MAJ,MIN:INO); comm:pid, with the full comm while the same-named process runs. */
extern const struct key_codec fs_keys[];

#endif
