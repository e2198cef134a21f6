/* fs_names.h — the paths of the file-system layer's file keys (device, inode): from
 * the program's openat ring buffer and the followed processes' open files. */
#ifndef STRATA_COLLECT_FS_NAMES_H
#define STRATA_COLLECT_FS_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "aggregate.h"

/* Reads the program's fs_names ring buffer from now on (openat paths). 0, or -1. */
int fs_names_bind(int ringbuf_fd);
/* Learns the paths openat calls were given since the last call. */
void fs_names_drain(void);
/* Stops reading the ring buffer. */
void fs_names_unbind(void);

/* A path whose stat() shows this inode now into out: true, or false when none is known. */
bool fs_file_name(const struct agg_fs_file *f, char *out, size_t n);

#endif
