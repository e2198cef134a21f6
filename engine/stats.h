/* stats.h — the stats UNIX socket: a client writes one command line
 * ("stats\n", "ctl REQUEST\n" for tiers_ctl, or a names.h request) and reads one JSON object
 * until EOF. */
#ifndef ENGINE_STATS_H
#define ENGINE_STATS_H

#include <stddef.h>

/* Creates the socket (and its directory, 0755) and serves it from a thread. */
int stats_start(const char *path, char *err, size_t errsz);
/* Closes and removes the socket. */
void stats_stop(void);
/* The JSON document (malloc'd). */
char *stats_json(void);

#endif
