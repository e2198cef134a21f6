/* engine_process.h — finding the strata engine: its binary, its running processes, the USDT
 * probes its binary declares, and its stats socket (gauges). */
#ifndef STRATA_COLLECT_ENGINE_PROCESS_H
#define STRATA_COLLECT_ENGINE_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct json_object;

#define GAUGES_MAX 256
#define GAUGE_NAME_MAX 96

struct gauges {
	size_t n;
	char names[GAUGES_MAX][GAUGE_NAME_MAX]; /* "arc.size" */
	double values[GAUGES_MAX];
};

/* Whether an engine binary was found (path not NULL) and is readable; why not in why. */
bool engine_binary_usable(const char *path, char *why, size_t n);

/* 1 if the ELF file at path has a stapsdt note for provider "strata" and probe name,
 * 0 if not, -1 if the file is not a readable ELF. */
int engine_has_probe(const char *path, const char *probe);
/* The probe layout the ELF file at path was built with (its strata note, engine/strata_probes.h),
 * 0 if it has none, -1 if it is not a readable ELF. */
int engine_probe_layout(const char *path);

/* Resolved executable of a running process (malloc'ed), or NULL. */
char *engine_exe_of(pid_t pid);
/* The most recently started process running the executable exe (a realpath), or -1. */
pid_t engine_find_pid(const char *exe);

/* Samples the stats socket /run/strata/engine-<pid>.sock, or --stats-socket's ("stats\n" -> JSON):
 * every numeric leaf one level under a top-level object becomes "group.leaf".
 * 0 on success, -1 with a reason in why. */
int engine_stats_sample(pid_t pid, struct gauges *out, char *why, size_t n);
/* Sends one request line to the stats socket of pid; its answer, one JSON object (json-c,
 * released with json_object_put), or NULL with a reason in why. */
/* The engine's stats socket is PATH (its serve --stats-socket), not /run/strata/engine-PID.sock. */
void engine_stats_socket_use(const char *path);
struct json_object *engine_ask(pid_t pid, const char *line, char *why, size_t n);
/* Value of gauge name in g, or -1 (not present). */
int gauges_find(const struct gauges *g, const char *name, double *value);

#endif
