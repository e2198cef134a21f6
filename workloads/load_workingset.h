/* load_workingset.h — the files strata-load reads and writes: creating them
 * through NFS (--setup) and looking up their handles before the run. */
#ifndef STRATA_LOAD_WORKINGSET_H
#define STRATA_LOAD_WORKINGSET_H

#include <stdint.h>

#include "load_client.h"

#define FILE_NAME_MAX 32

/* Name of working-set file i in the export's root directory. */
void workingset_name(uint32_t i, char name[FILE_NAME_MAX]);

/* --setup: for the files this client owns (i % clients == idx), creates the
 * missing ones and rewrites any of the wrong size, with tag-0 pattern data
 * (UNSTABLE writes, then COMMIT). RPCs are counted in c->setup. */
int workingset_create(struct load_client *c);

/* LOOKUPs every file (counted in c->setup) and fills c->files; fails when a
 * file is missing or smaller than --file-size. */
int workingset_open(struct load_client *c);

#endif
