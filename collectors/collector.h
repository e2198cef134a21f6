/* collector.h — the collector's state: enabled datasets, loaded layers, the engine it
 * watches; control commands (add/remove/quit) and the per-interval records
 * (collectors/FORMAT.md). */
#ifndef STRATA_COLLECT_COLLECTOR_H
#define STRATA_COLLECT_COLLECTOR_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include "catalogue.h"
#include "engine.h"
#include "layers.h"

#define DATASETS_MAX 128
#define DATASET_ID_MAX 64
#define ERRORS_MAX 8
#define ERROR_LEN 256

struct dataset {
	char id[DATASET_ID_MAX];
	const struct statistic *stat;
	int breakdown;                /* enum agg_dim */
	int slot;                     /* in its layer; -1 for gauges and while waiting */
	bool waiting;                 /* its layer's subject does not run yet (nfsd): enabled when it does */
	char refused[ERROR_LEN];      /* why enabling it failed once its subject ran (reported, not retried) */
	struct agg_slot cfg;          /* the slot it asked for */
};

struct collector {
	FILE *out;
	struct layer_config cfg;      /* key bounds, wire interfaces and ports */
	long interval;                /* seconds per record */
	char *engine_path;            /* realpath of the engine binary, or NULL */
	pid_t engine_pid;             /* running engine (gauges; USDT target when by_pid), or -1 */
	bool by_pid;                  /* --engine-pid: attach to that process, follow restarts */
	struct layer layers[LAYER_GAUGE];
	struct dataset datasets[DATASETS_MAX];
	size_t ndatasets;
	struct gauges gauges;
	bool gauges_ok;
	char errors[ERRORS_MAX][ERROR_LEN]; /* this interval's problems, for the status record */
	int nerrors;
};

void collector_init(struct collector *c, FILE *out, long interval, const struct layer_config *cfg, char *engine_path,
		    pid_t pid, bool by_pid);
void collector_fini(struct collector *c);

/* Runs one control line; writes the ack or error record. Returns false on "quit". */
bool collector_command(struct collector *c, char *line);

/* Writes an error record (e.g. for an input line that is too long). */
void collector_reply_error(struct collector *c, const char *id, const char *msg);

/* File descriptors to poll for layer events (at most max); returns how many. */
int collector_event_fds(const struct collector *c, int *fds, int max);
/* Handles the layers' pending events (e.g. attaches to a new interface at once). */
void collector_events(struct collector *c);

/* Reads every layer and emits the records for the interval starting at unix second t. */
void collector_tick(struct collector *c, long long t);

#endif
