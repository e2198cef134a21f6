/* collector.h — the collector's state: enabled datasets and its layers; control
 * commands (add/remove/quit) and the per-interval records (collectors/FORMAT.md). */
#ifndef STRATA_COLLECT_COLLECTOR_H
#define STRATA_COLLECT_COLLECTOR_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include "catalogue.h"
#include "layers.h"

#define DATASETS_MAX 128
#define DATASET_ID_MAX 64
#define ERRORS_MAX 8
#define ERROR_LEN 256

struct dataset {
	char id[DATASET_ID_MAX];
	const struct statistic *stat;
	int breakdown;                /* enum agg_dim */
	int slot;                     /* in its layer; -1 where the layer has no counts, and while waiting */
	bool waiting;                 /* its layer's subject does not run yet (nfsd): enabled when it does */
	long long enabled_ns;         /* wall clock when it began counting (0 while waiting): a record of
	                               * an interval that started before is partial */
	char refused[ERROR_LEN];      /* why enabling it failed once its subject ran (reported, not retried) */
	struct agg_slot cfg;          /* the slot it asked for */
};

struct collector {
	FILE *out;
	struct layer_config cfg;      /* key bounds */
	long interval;                /* seconds per record */
	struct layer layers[LAYER_COUNT];
	struct dataset datasets[DATASETS_MAX];
	size_t ndatasets;
	char errors[ERRORS_MAX][ERROR_LEN]; /* this interval's problems, for the status record */
	int nerrors;
};

void collector_init(struct collector *c, FILE *out, long interval, const struct layer_config *cfg);
void collector_fini(struct collector *c);

/* Runs one control line; writes the ack or error record. Returns false on "quit". */
bool collector_command(struct collector *c, char *line);

/* Writes an error record (e.g. for an input line that is too long). */
void collector_reply_error(struct collector *c, const char *id, const char *msg);

/* File descriptors to poll for layer events (at most max); returns how many. */
int collector_event_fds(const struct collector *c, int *fds, int max);
/* Handles the layers' pending events (e.g. attaches to a new interface at once). */
void collector_events(struct collector *c);

/* Reads every layer and emits the records for the interval starting at unix second t:
 * its own counts, or with whole all counts since the last tick (intervals were skipped or
 * outlasted: a stalled loop, a clock step). */
void collector_tick(struct collector *c, long long t, bool whole);

#endif
