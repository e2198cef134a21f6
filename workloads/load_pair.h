/* load_pair.h — the paired run (--pair-nfsport/--pair-mountport): each client
 * thread holds a connection to server A and one to server B and, for every
 * READ, sends the same request (file, offset, size) to both back to back, in a
 * random order per pair, with one request in flight, so whatever slows the
 * machine lands on both servers within microseconds and the two never serve
 * this client at the same instant. */
#ifndef STRATA_LOAD_PAIR_H
#define STRATA_LOAD_PAIR_H

#include "load_client.h"

/* Runs c (server A) and c->peer (server B) from sh->run_start_ns to
 * sh->run_end_ns; --rate is the READs per second each server gets over all
 * clients. RPCs are counted in c->run and c->peer->run. */
int run_pair(struct load_client *c);

#endif
