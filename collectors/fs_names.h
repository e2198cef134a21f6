/* fs_names.h — text of the file-system layer's keys: a file (device, inode) as the
 * path that names that inode now, a process as comm:pid; and back, for filters. */
#ifndef STRATA_COLLECT_FS_NAMES_H
#define STRATA_COLLECT_FS_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include "aggregate.h"

/* Reads the program's fs_names ring buffer from now on (openat paths). 0, or -1. */
int fs_names_bind(int ringbuf_fd);
/* Learns the paths openat calls were given since the last call. */
void fs_names_drain(void);
/* Stops reading the ring buffer. */
void fs_names_unbind(void);

/* A path whose stat() shows this inode, or "inode:MAJ,MIN:INO" when none is known. */
void fs_file_name(const struct agg_fs_file *f, char *out, size_t n);
/* "comm:pid", with the full comm while the process lives. */
void fs_process_name(const struct agg_fs_process *p, char *out, size_t n);

/* Key bytes of a file filter (an existing path, or inode:MAJ,MIN:INO); -1 if invalid. */
int fs_file_parse(const char *text, uint8_t key[AGG_KEY_BYTES]);
/* Key bytes of a process filter ("comm:pid"); -1 if invalid. */
int fs_process_parse(const char *text, uint8_t key[AGG_KEY_BYTES]);

#endif
