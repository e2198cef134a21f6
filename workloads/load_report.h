/* load_report.h — strata-load's JSON report (schema in workloads/PROFILES.md). */
#ifndef STRATA_LOAD_REPORT_H
#define STRATA_LOAD_REPORT_H

#include <stdio.h>

#include "load_client.h"

struct load_totals {
	struct phase_stats setup, run; /* merged over the clients */
	double setup_s, run_s;         /* wall time of each phase */
	double run_start_unix;         /* CLOCK_REALTIME at the start of the run (s) */
};

/* Merges the clients' counts into t (t->run's series sized by sh->nsec). */
int report_merge(const struct load_shared *sh, struct load_client *clients, int n,
		 struct load_totals *t);

void report_write(FILE *f, const struct load_opts *o, const struct load_shared *sh,
		  const struct load_client *clients, int n, const struct load_totals *t,
		  const char *error);

/* One human line: profile, clients, duration, ops/s, MiB/s, errors. */
void report_summary(FILE *f, const struct load_opts *o, const struct load_totals *t);

#endif
