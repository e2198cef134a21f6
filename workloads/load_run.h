/* load_run.h — the timed run of one client: keeps up to --threads request
 * streams busy (or fewer under --rate / stepup), each stepping through its
 * profile, then drains and commits what is still unstable. */
#ifndef STRATA_LOAD_RUN_H
#define STRATA_LOAD_RUN_H

#include "load_client.h"

/* Runs from sh->run_start_ns to sh->run_end_ns; RPCs counted in c->run. */
int run_client(struct load_client *c);

/* Frees the run state of c (slots, buffers, dirty marks). */
void run_free(struct load_client *c);

/* Threads per client that stepup has active at t_ns into the run. */
int stepup_threads(const struct load_opts *o, uint64_t t_ns);

#endif
