/* layers.h — one loaded bpf/ program per layer (nfs, cache, disk, vdev): its dataset slots,
 * attaching and detaching its probes as datasets come and go, and reading its
 * cumulative per-CPU counts into per-second deltas. */
#ifndef STRATA_COLLECT_LAYERS_H
#define STRATA_COLLECT_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "aggregate.h"
#include "catalogue.h"

#define LAYER_MAX_PROBES 3

struct bpf_object;
struct bpf_program;
struct bpf_link;

struct probe {
	const char *name;          /* USDT probe name, or tracepoint name */
	struct bpf_program *prog;
	struct bpf_link *link;     /* NULL while detached */
	bool usdt;
	int users;                 /* datasets that need it */
};

struct count_entry {
	struct agg_key key;
	uint64_t value;
};

struct layer {
	enum layer_id id;
	bool loaded;
	void *skel;
	void (*destroy)(void *skel);
	struct agg_slot *slots;    /* the program's .bss slot table */
	__u32 *nslots;
	int counts_fd, keyset_fd, nkeys_fd, stats_fd;
	struct probe probes[LAYER_MAX_PROBES];
	int nprobes;
	uint64_t overflow_base[AGG_MAX_SLOTS]; /* agg_stats at slot allocation */
	struct count_entry *prev, *cur;        /* last and current snapshot, sorted */
	size_t nprev, ncur, cap;
	struct count_entry *deltas;            /* this interval's non-zero deltas, sorted */
	size_t ndeltas;
};

/* Where USDT probes attach: the engine binary, one process or all (-1). */
struct engine_target {
	const char *path;
	pid_t pid;
};

int layer_load(struct layer *L, enum layer_id id, unsigned max_keys, char *err, size_t n);
void layer_unload(struct layer *L);

/* A slot configured as cfg (its gen is set here); returns the slot or -1 if all are taken. */
int layer_slot_alloc(struct layer *L, const struct agg_slot *cfg);
/* Disables the slot and deletes its counts. */
void layer_slot_free(struct layer *L, int slot);

/* One more user of the probe; attaches it when it had none. 0 or -1 with a message. */
int layer_probe_get(struct layer *L, const char *probe, const struct engine_target *t, char *err, size_t n);
/* One user fewer; detaches it when none remain. */
void layer_probe_put(struct layer *L, const char *probe);
/* Detaches every USDT probe (the engine process went away). */
void layer_usdt_detach(struct layer *L);
/* Attaches USDT probes that have users but no link; 0, or -1 with the first failure. */
int layer_usdt_attach(struct layer *L, const struct engine_target *t, char *err, size_t n);
/* True while any of the layer's probes is attached. */
bool layer_attached(const struct layer *L);

/* Reads the counts map and fills L->deltas. 0, or -1 with a message. */
int layer_read(struct layer *L, char *err, size_t n);
/* Fills L->deltas for one slot only, leaving the others' baseline alone (a dataset's
 * last partial interval, read just before it is removed). */
int layer_read_slot(struct layer *L, int slot, char *err, size_t n);
/* Cumulative drops; a slot's overflows since it was allocated. */
uint64_t layer_drops(const struct layer *L);
uint64_t layer_overflows(const struct layer *L, int slot);

#endif
