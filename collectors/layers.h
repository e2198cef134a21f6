/* layers.h — the collector's layers (nfs, cache, disk, vdev, wire, fs, nfsd, nfsd_io) behind one
 * interface: each is one collectors/ module giving a struct layer_ops (load, supported,
 * present, active, attach, events, refresh, status); layers.c does what they share — their
 * dataset slots, attaching and detaching their probes as datasets come and go — and
 * layer_counts.c reads their cumulative per-CPU counts into per-second deltas. */
#ifndef STRATA_COLLECT_LAYERS_H
#define STRATA_COLLECT_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "aggregate.h"
#include "catalogue.h"
#include "wire_config.h"

#define LAYER_MAX_PROBES 3

struct bpf_object;
struct bpf_program;
struct bpf_link;

/* Tracepoints and USDT probes are attached here; a PROBE_OWN probe by its layer's attach. */
enum probe_kind { PROBE_TRACEPOINT, PROBE_USDT, PROBE_OWN };

struct probe {
	const char *name;          /* USDT probe name, tracepoint name, or "wire" (TC programs) */
	struct bpf_program *prog;
	struct bpf_link *link;     /* USDT and tracepoints: NULL while detached */
	enum probe_kind kind;
	bool on;                   /* attached */
	int users;                 /* datasets that need it */
};

/* What layers are loaded with: key bounds, and where the wire layer looks. */
struct layer_config {
	unsigned max_keys;
	struct wire_config wire;
};

struct count_entry {
	struct agg_key key;
	uint64_t value;
};

struct layer;
struct statistic;
typedef void layer_report_fn(void *ctx, const char *msg);

/* One layer's module. Every entry but load and unload may be NULL (nothing to do). */
struct layer_ops {
	/* Whether this host can collect statistic s of the layer; why not in why. */
	bool (*supported)(const struct statistic *s, const char *engine_path, char *why, size_t n);
	/* Whether what the layer observes runs yet (nfsd's modules); while not, its datasets
	 * wait and are enabled when it appears. Why not in why. */
	bool (*present)(char *why, size_t n);
	/* Opens and loads the program, binds it (LAYER_BIND_COMMON) and adds its probes.
	 * 0, or a negative errno with why set when there is more to say than the errno. */
	int (*load)(struct layer *L, const struct layer_config *cfg, char *why, size_t n);
	/* Releases what load made (the skeleton and the module's own state). */
	void (*unload)(struct layer *L);
	/* Before its first probe attaches (on) and after its last detaches. */
	int (*active)(struct layer *L, bool on);
	/* Attaches and detaches its PROBE_OWN probe (the wire layer's TC programs). */
	int (*attach)(struct layer *L, char *err, size_t n);
	void (*detach)(struct layer *L);
	/* A file descriptor to poll for its events (interfaces appearing), or -1; handling
	 * them, and with rescan its periodic re-check. */
	int (*event_fd)(const struct layer *L);
	void (*events)(struct layer *L, bool rescan);
	/* Upkeep once per interval before reading, while attached (the processes fs follows);
	 * each problem worth reporting goes to report as one sentence. */
	void (*refresh)(struct layer *L, layer_report_fn *report, void *ctx);
	/* Its own fields of the status record (",\"wire\":{...}"), while loaded. */
	void (*status)(const struct layer *L, FILE *out);
};

struct layer {
	enum layer_id id;
	bool loaded;
	void *skel;
	struct agg_slot *slots;    /* the program's .bss slot table */
	__u32 *nslots;
	__u32 *dims;                           /* the program's agg_dims */
	int counts_fd, table_fd, keyset_fd, nkeys_fd, stats_fd;
	const struct layer_ops *ops;
	struct probe probes[LAYER_MAX_PROBES];
	int nprobes;
	uint64_t overflow_base[AGG_MAX_SLOTS]; /* agg_stats at slot allocation */
	struct count_entry *prev, *cur;        /* last and current snapshot, sorted */
	size_t nprev, ncur, cap;
	struct count_entry *deltas;            /* this interval's non-zero deltas, sorted */
	size_t ndeltas;
	void *state;                           /* the module's own (wire: struct wire_state) */
};

/* Where USDT probes attach: the engine binary, one process or all (-1). */
struct engine_target {
	const char *path;
	pid_t pid;
};

/* Binds a loaded skeleton's aggregation state (bpf/aggregate.h) to its layer. */
#define LAYER_BIND_COMMON(L, s)                                   \
	do {                                                      \
		(L)->slots = (s)->bss->agg_slots;                 \
		(L)->nslots = &(s)->bss->agg_nslots;              \
		(L)->dims = &(s)->bss->agg_dims;                  \
		(L)->counts_fd = bpf_map__fd((s)->maps.agg_counts); \
		(L)->table_fd = bpf_map__fd((s)->maps.agg_table); \
		(L)->keyset_fd = bpf_map__fd((s)->maps.agg_keyset); \
		(L)->nkeys_fd = bpf_map__fd((s)->maps.agg_nkeys); \
		(L)->stats_fd = bpf_map__fd((s)->maps.agg_stats); \
	} while (0)

/* The modules' layers (engine_layers.c, disk_layer.c, wire.c, fs_layer.c, nfsd.c, nfsd_io.c). */
extern const struct layer_ops nfs_layer, cache_layer, vdev_layer, disk_layer, wire_layer, fs_layer, nfsd_layer,
	nfsd_io_layer;
/* The module of a kernel layer (not LAYER_GAUGE). */
const struct layer_ops *layer_ops_of(enum layer_id id);

/* Whether statistic s (of a kernel layer) can be collected here, and whether its layer's
 * subject runs now (see struct layer_ops); why not in why. */
bool layer_supported(const struct statistic *s, const char *engine_path, char *why, size_t n);
bool layer_present(enum layer_id id, char *why, size_t n);

int layer_load(struct layer *L, enum layer_id id, const struct layer_config *cfg, char *err, size_t n);
void layer_unload(struct layer *L);
/* Adds a probe to a layer being loaded. */
void layer_add_probe(struct layer *L, const char *name, struct bpf_program *prog, enum probe_kind kind);

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
/* A file descriptor to poll for the layer's events (interfaces appearing), or -1. */
int layer_event_fd(const struct layer *L);
/* Handles the layer's pending events; with rescan, re-checks its targets anyway. */
void layer_events(struct layer *L, bool rescan);
/* True while any of the layer's probes is attached. */
bool layer_attached(const struct layer *L);

/* The layer's own upkeep before a read while any of its probes is attached (fs: the
 * processes it follows); each problem worth reporting is passed to report as one
 * sentence. */
void layer_refresh(struct layer *L, layer_report_fn *report, void *ctx);
/* The layer's own fields of the status record, while loaded. */
void layer_status(const struct layer *L, FILE *out);
/* layer_counts.c: reads the counts map and fills L->deltas. 0, or -1 with a message. */
int layer_read(struct layer *L, char *err, size_t n);
/* Fills L->deltas for one slot only, leaving the others' baseline alone (a dataset's
 * last partial interval, read just before it is removed). */
int layer_read_slot(struct layer *L, int slot, char *err, size_t n);
/* Cumulative drops; a slot's overflows since it was allocated. */
uint64_t layer_drops(const struct layer *L);
uint64_t layer_overflows(const struct layer *L, int slot);

#endif
