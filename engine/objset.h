/* objset.h — the object store: datasets (one per export), objects (files,
 * directories, symlinks) in a refcounted hash table, file data as records
 * with block pointers, the dirty-record table (records written but not yet
 * synced, kept out of the ARC like ZFS dbufs) and the read/write paths
 * (dirty -> ARC -> pool).
 *
 * Locking: objset.txg_lock is held shared by every mutating operation and
 * exclusively by the sync while it closes a txg; ns_lock serialises namespace
 * changes (create/remove/rename/link); each object has a rwlock for its
 * attributes, records and entries.  Reads take only the object's read lock. */
#ifndef ENGINE_OBJSET_H
#define ENGINE_OBJSET_H

#include <pthread.h>
#include <stdint.h>

#include "arc.h"
#include "blkmap.h"
#include "pool.h"

struct l2arc;

enum obj_type { OBJ_REG = 1, OBJ_DIR = 2, OBJ_LNK = 5 };

#define DATASET_NAME_MAX 64
#define NAME_MAX_LEN 255
/* Largest file: 16 TiB.  A WRITE ending beyond it, or a SETATTR growing a
 * file past it, fails with NFS3ERR_FBIG; FSINFO reports it as maxfilesize. */
#define OBJ_MAX_FILE_SIZE (1ull << 44)

struct dir_entry {
	char *name;
	uint64_t objid;
	uint64_t cookie;
};

struct nfs_time { uint32_t sec, nsec; };

struct object {
	uint64_t id;
	uint64_t gen;             /* random: a handle names (id, gen), so it cannot be guessed */
	uint32_t dsid;
	uint32_t type;
	uint32_t mode, nlink, uid, gid;
	uint64_t size;
	struct nfs_time atime, mtime, ctime;
	uint32_t recordsize;
	uint64_t parent;          /* directories: the parent directory */
	uint8_t createverf[8];    /* EXCLUSIVE create verifier */
	/* regular files */
	struct blkmap recs;       /* record number -> block pointer and dirty buffer */
	uint64_t ndirty;
	uint64_t dirty_txg;       /* txg of the latest change to this object */
	uint64_t used;            /* bytes allocated on the pool (sum of psize) */
	/* directories */
	struct dir_entry *ents;
	uint32_t nents, capents;
	uint64_t next_cookie;
	/* symlinks */
	char *target;

	pthread_rwlock_t lock;
	int refs;                 /* atomic; the table holds one */
	int removed;
	struct object *hnext;
};

struct dataset {
	uint32_t id;
	char name[DATASET_NAME_MAX];
	uint64_t root;
	uint32_t recordsize;
};

/* Accounting of one operation for the nfs_ops probe. */
struct io_acct {
	uint8_t tiers;
	uint32_t arc_hits, arc_misses, l2arc_hits;
	uint8_t nowait; /* set by the caller: a read that needs a device fails with -EWOULDBLOCK */
};

struct objset {
	struct pool *pool;
	arc_t *arc;
	struct l2arc *l2arc;      /* second-level cache on ARC misses (NULL: none) */
	pthread_rwlock_t table_lock;
	struct object **table;
	uint64_t table_size, nobjects;
	uint64_t next_objid;
	struct dataset **datasets; /* each allocated once: exports keep pointers to them */
	uint32_t ndatasets;
	pthread_rwlock_t txg_lock;
	pthread_mutex_t ns_lock;
	uint64_t open_txg;        /* txg accepting changes */
	uint64_t dirty_bytes;     /* atomic: bytes in dirty records */
	int changed;              /* atomic: something to sync in the open txg */
};

struct objset *objset_create(struct pool *pool, arc_t *arc);
void objset_destroy(struct objset *os);

/* Held reference (NULL if absent); drop with obj_put. */
struct object *obj_get(struct objset *os, uint64_t id);
void obj_put(struct object *o);
/* New object (caller holds txg_lock shared and ns_lock); returned held. */
struct object *obj_new(struct objset *os, uint32_t dsid, uint32_t type, uint32_t mode,
		       uint32_t uid, uint32_t gid, uint32_t recordsize);
/* New random generations for every object: old handles of them all go
 * stale (for a pool whose handle secret was just created). */
void objset_new_generations(struct objset *os);
/* Insert an object built by the metadata loader. */
void obj_insert_loaded(struct objset *os, struct object *o);
/* Unlink bookkeeping: when nlink reaches 0 the object leaves the table and
 * its records are freed (deferred to the txg).  Caller holds o->lock write. */
void obj_drop_link(struct objset *os, struct object *o);
void obj_touch(struct object *o, int mtime, int ctime);
void objset_mark_changed(struct objset *os, struct object *o);

/* Dataset by name, created with an empty root directory when missing and
 * `create`.  recordsize 0 keeps the dataset's (a new one takes the pool's);
 * root_mode -1 keeps the root's mode (a new root is 0755), else sets it. */
#define DATASET_ROOT_MODE 0755
struct dataset *objset_dataset(struct objset *os, const char *name, uint32_t recordsize,
			       int root_mode, int create);
struct dataset *objset_dataset_by_id(struct objset *os, uint32_t id);

/* Data path.  obj_read: caller holds o->lock shared.  obj_write/obj_truncate:
 * caller holds txg_lock shared and o->lock exclusive.  0 or -errno. */
int obj_read(struct objset *os, struct object *o, uint64_t off, uint32_t count,
	     uint8_t *dst, uint32_t *got, int *eof, struct io_acct *acct);
int obj_write(struct objset *os, struct object *o, uint64_t off, uint32_t count,
	      const uint8_t *src, struct io_acct *acct);
int obj_truncate(struct objset *os, struct object *o, uint64_t size);
uint64_t obj_used_bytes(const struct object *o);

/* Iteration for the sync and the metadata writer (caller excludes mutators). */
void objset_foreach(struct objset *os, void (*fn)(struct object *o, void *ctx), void *ctx);

#endif
