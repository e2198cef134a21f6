/* layers.h — the collector's layers (catalogue/statistics.def's STAT_LAYER lines) behind one
 * interface: each is one module, collectors/layers/<name>.c, defining its struct layer_ops
 * as LAYER_OPS(ID) — its options, load, probes, upkeep, reads, key texts, records — with
 * NULL meaning "nothing to do", as the kernel's file_operations. layers.c does what they
 * share — their dataset slots, attaching and detaching their probes as datasets come and
 * go, the tick's upkeep and reads, their part of the records — and layer_counts.c reads
 * their cumulative per-CPU counts into per-second deltas. */
#ifndef STRATA_COLLECT_LAYERS_H
#define STRATA_COLLECT_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "aggregate.h"
#include "catalogue.h"

#define LAYER_MAX_PROBES 3

struct bpf_object;
struct bpf_program;
struct bpf_link;

/* Tracepoints are attached here; a PROBE_OWN probe by its layer's attach (USDT, TC). */
enum probe_kind { PROBE_TRACEPOINT, PROBE_OWN };

struct probe {
	const char *name;          /* tracepoint or USDT probe name, or "wire" (TC programs) */
	const char *source;        /* what it really hooks, for the status record; else provider:name */
	struct bpf_program *prog;
	struct bpf_link *link;     /* while attached, unless its layer keeps its own links */
	enum probe_kind kind;
	bool on;                   /* attached */
	int users;                 /* datasets that need it */
};

/* What every layer is loaded with: its key bounds. */
struct layer_config {
	unsigned max_keys;
};

struct count_entry {
	struct agg_key key;
	uint64_t value;
};

/* A command-line option a layer takes ("--NAME ARG"); parse keeps it in the module:
 * 0, or -1 with the whole message in err. */
struct layer_option {
	const char *name;          /* "wire-port" */
	const char *arg;           /* for the usage line: "PORT|rpcbind ..." */
	int (*parse)(const char *arg, char *err, size_t n);
};

struct layer;
struct statistic;
typedef void layer_report_fn(void *ctx, const char *msg);

/* One layer's module. Every entry but load may be NULL (nothing to do, or the shared way). */
struct layer_ops {
	/* Its command-line options (ended by a NULL name), and the check once all are read. */
	const struct layer_option *options;
	int (*options_done)(char *err, size_t n);
	/* Whether this host can collect statistic s of the layer; why not in why. */
	bool (*supported)(const struct statistic *s, char *why, size_t n);
	/* Whether what the layer observes runs yet (nfsd's modules); while not, its datasets
	 * wait and are enabled when it appears. Why not in why. */
	bool (*present)(char *why, size_t n);
	/* Opens and loads the program, binds it (LAYER_BIND_COMMON) and adds its probes.
	 * 0, or a negative errno with why set when there is more to say than the errno. */
	int (*load)(struct layer *L, const struct layer_config *cfg, char *why, size_t n);
	/* Whether a dataset of slot configuration cfg reads probe, one of its statistic's
	 * (the nfs layer's read one of two probes on the same batch); NULL: all of them. */
	bool (*reads)(const struct agg_slot *cfg, const char *probe);
	/* Releases what load made (the skeleton and the module's own state). */
	void (*unload)(struct layer *L);
	/* Before its first probe attaches (on) and after its last detaches. */
	int (*active)(struct layer *L, bool on);
	/* Attaches and detaches a PROBE_OWN probe (the engine's USDT, the wire's TC programs). */
	int (*attach)(struct layer *L, struct probe *p, char *err, size_t n);
	void (*detach)(struct layer *L, struct probe *p);
	/* First thing every interval, loaded or not (the engine: following its process). */
	void (*upkeep)(struct layer *L, layer_report_fn *report, void *ctx);
	/* A file descriptor to poll for its events (interfaces appearing), or -1; handling
	 * them, and with rescan its periodic re-check. */
	int (*event_fd)(const struct layer *L);
	void (*events)(struct layer *L, bool rescan);
	/* Upkeep once per interval before reading, while attached (the processes fs follows);
	 * each problem worth reporting goes to report as one sentence. */
	void (*refresh)(struct layer *L, layer_report_fn *report, void *ctx);
	/* Reads the interval just ended; NULL: its counts (layer_counts.c). 0, or -1 with why. */
	int (*read)(struct layer *L, char *err, size_t n);
	/* Statistic s's data as read ("KEY":VALUE, ...); NULL: its counts, by key. */
	void (*data)(const struct layer *L, const struct statistic *s, FILE *out);
	/* The texts of the dimensions it names its own way (file, process, export); the others
	 * are keys.c's. Ended by dim 0. */
	const struct key_codec *keys;
	/* Its own fields of the status record (",\"wire\":{...}"), loaded or not. */
	void (*status)(const struct layer *L, FILE *out);
	/* Its own top-level fields of `--catalogue` (",\"engine\":..."). */
	void (*host_fields)(FILE *out);
};

/* The module of layer ID (catalogue/statistics.def): const struct layer_ops LAYER_OPS(WIRE) = {...}; */
#define LAYER_OPS(ID) layer_ops_##ID

struct layer {
	enum layer_id id;
	const struct layer_ops *ops;
	const char *name, *provider;           /* layer_name(id), layer_provider(id) */
	bool loaded;
	int datasets;                          /* enabled on it */
	void *skel;
	struct agg_slot *slots;    /* the program's .bss slot table; NULL: the layer has no counts */
	__u32 *nslots;
	__u32 *dims;                           /* the program's agg_dims */
	__u64 *epoch;                          /* the program's agg_epoch */
	int counts_fd, table_fd, keyset_fd, nkeys_fd, stats_fd;
	struct probe probes[LAYER_MAX_PROBES];
	int nprobes;
	uint64_t overflow_base[AGG_MAX_SLOTS]; /* agg_stats at slot allocation */
	struct count_entry *prev, *cur;        /* last and current snapshot, sorted */
	size_t nprev, ncur, cap;
	struct count_entry *deltas;            /* this interval's non-zero deltas, sorted */
	size_t ndeltas;
	void *state;                           /* the module's own (wire: struct wire_state) */
};

/* Binds a loaded skeleton's aggregation state (bpf/aggregate.h) to its layer. */
#define LAYER_BIND_COMMON(L, s)                                   \
	do {                                                      \
		(L)->slots = (s)->bss->agg_slots;                 \
		(L)->nslots = &(s)->bss->agg_nslots;              \
		(L)->dims = &(s)->bss->agg_dims;                  \
		(L)->epoch = &(s)->bss->agg_epoch;                \
		(L)->counts_fd = bpf_map__fd((s)->maps.agg_counts); \
		(L)->table_fd = bpf_map__fd((s)->maps.agg_table); \
		(L)->keyset_fd = bpf_map__fd((s)->maps.agg_keyset); \
		(L)->nkeys_fd = bpf_map__fd((s)->maps.agg_nkeys); \
		(L)->stats_fd = bpf_map__fd((s)->maps.agg_stats); \
	} while (0)

/* An option's number: a decimal in [min, max], else -1. */
long option_long(const char *s, long min, long max);

/* Every layer, not loaded: L[LAYER_COUNT]. */
void layers_init(struct layer *L);
void layers_fini(struct layer *L);

/* The i-th option of all the layers', in layer order; NULL past the last. */
const struct layer_option *layer_option_at(int i);
/* Every layer's options_done; 0, or -1 with the first message. */
int layers_options_done(char *err, size_t n);
/* Every layer's top-level fields of `--catalogue`. */
void layers_host_fields(FILE *out);

/* Whether statistic s can be collected here, and whether its layer's subject runs now
 * (see struct layer_ops); why not in why. */
bool layer_supported(const struct statistic *s, char *why, size_t n);
bool layer_present(enum layer_id id, char *why, size_t n);

/* "S cannot be collected: WHY" — the refusal of a dataset of s. */
void layer_refusal(const struct statistic *s, const char *why, char *out, size_t n);

/* Adds a probe to a layer being loaded. */
void layer_add_probe(struct layer *L, const char *name, struct bpf_program *prog, enum probe_kind kind);

/* A dataset of statistic s, with slot configuration cfg, on its layer (loaded now if
 * it is not): its slot (-1 where the layer has no counts) and its probes. 0, or -1
 * with a message. */
int layer_dataset_add(struct layer *L, const struct layer_config *lc, const struct statistic *s,
		      const struct agg_slot *cfg, int *slot, char *err, size_t n);
/* Its slot freed and its probes released. */
void layer_dataset_remove(struct layer *L, const struct statistic *s, int slot);

/* Detaches every attached probe, keeping their users (the engine process went away). */
void layer_probes_off(struct layer *L);
/* Attaches the probes that have users but are not attached; 0, or -1 with the first failure. */
int layer_probes_on(struct layer *L, char *err, size_t n);
/* Whether any probe of the layer has a user. */
bool layer_in_use(const struct layer *L);

/* File descriptors to poll for the layers' events (at most max); returns how many. */
int layers_event_fds(const struct layer *L, int *fds, int max);
/* Handles the layers' pending events; with rescan, re-checks their targets anyway. */
void layers_events(struct layer *L, bool rescan);

/* The tick: every layer's upkeep; then, after the waiting datasets are woken, every
 * layer's events, refresh and read (problems go to report) of the interval that ended:
 * the counts of its parity (0 even, 1 odd), or with parity -1 all counts (after a stall
 * or a clock step, when intervals were skipped or outlasted). */
void layers_upkeep(struct layer *L, layer_report_fn *report, void *ctx);
void layers_read(struct layer *L, int parity, layer_report_fn *report, void *ctx);

/* Tells every layer's programs, now and when they load, that the interval in progress
 * began at wall-clock second from and lasts interval seconds (bpf/aggregate.h agg_epoch). */
void layers_set_epoch(struct layer *L, long long from, long interval);

/* Statistic s's data read into slot of its layer, broken down by dim: "KEY":VALUE, ... */
void layer_emit(const struct layer *L, const struct statistic *s, int slot, int dim, FILE *out);
/* Fills L->deltas for one slot only, leaving the others' baseline alone (a dataset's
 * last partial interval, read just before it is removed). */
int layer_read_slot(struct layer *L, int slot, char *err, size_t n);

/* The layers' part of the status record: drops, then (after the datasets' overflows)
 * "attached" and "probes", and last each layer's own fields. */
void layers_status_drops(const struct layer *L, FILE *out);
uint64_t layer_overflows(const struct layer *L, int slot);
void layers_status_probes(const struct layer *L, FILE *out);
void layers_status_own(const struct layer *L, FILE *out);

/* Key bytes <-> text for statistic s's dimension dim: its layer's codec where it has one
 * (struct layer_ops keys), else keys.c's. "" without breakdown, "other" for the overflow key. */
void layer_key_format(const struct statistic *s, int dim, const uint8_t key[AGG_KEY_BYTES], char *out, size_t n);
int layer_key_parse(const struct statistic *s, int dim, const char *text, uint8_t key[AGG_KEY_BYTES], char *err,
		    size_t n);

/* layer_counts.c: reads the counts map and fills L->deltas with those of parity (-1: all).
 * 0, or -1 with a message. */
int layer_read(struct layer *L, int parity, char *err, size_t n);

#endif
