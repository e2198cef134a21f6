/* engine.h — finding the strata engine: its binary, its running processes, the USDT
 * probes its binary declares, and its stats socket (gauges). */
#ifndef STRATA_COLLECT_ENGINE_H
#define STRATA_COLLECT_ENGINE_H

#include <stddef.h>
#include <sys/types.h>

#define GAUGES_MAX 256
#define GAUGE_NAME_MAX 96

struct gauges {
	size_t n;
	char names[GAUGES_MAX][GAUGE_NAME_MAX]; /* "arc.size" */
	double values[GAUGES_MAX];
};

/* 1 if the ELF file at path has a stapsdt note for provider "strata" and probe name,
 * 0 if not, -1 if the file is not a readable ELF. */
int engine_has_probe(const char *path, const char *probe);

/* Resolved executable of a running process (malloc'ed), or NULL. */
char *engine_exe_of(pid_t pid);
/* The most recently started process running the executable exe (a realpath), or -1. */
pid_t engine_find_pid(const char *exe);

/* Samples the stats socket /run/strata/engine-<pid>.sock ("stats\n" -> one JSON object):
 * every numeric leaf one level under a top-level object becomes "group.leaf".
 * 0 on success, -1 with a reason in why. */
int engine_stats_sample(pid_t pid, struct gauges *out, char *why, size_t n);
/* Sends one request line to the stats socket of pid; the whole answer (malloc'ed, *len
 * bytes, not NUL-terminated), or NULL with a reason in why. */
char *engine_request(pid_t pid, const char *line, size_t *len, char *why, size_t n);
/* A top-level member of a flat JSON object (a string's text or a number's) into out:
 * 0, or -1 if absent, too long or malformed. */
int engine_json_member(const char *json, size_t len, const char *key, char *out, size_t n);
/* Value of gauge name in g, or -1 (not present). */
int gauges_find(const struct gauges *g, const char *name, double *value);

/* Exposed for tests of the parser: parse a stats JSON document of len bytes. */
int engine_stats_parse(const char *json, size_t len, struct gauges *out);

#endif
