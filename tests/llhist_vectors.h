/* llhist_vectors.h — reads tests/vectors/llhist.json (one case per line) for the C and BPF llhist tests. */
#ifndef LLHIST_VECTORS_H
#define LLHIST_VECTORS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct llhist_case {
	uint64_t value, lower, upper;
	uint32_t bucket;
};

/* Loads every case; returns the count (or -1 with a message). *out is malloc'd. */
static inline int llhist_vectors_load(const char *path, struct llhist_case **out)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int n = 0, cap = 0;
	struct llhist_case *cases = NULL;

	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		struct llhist_case c;
		if (sscanf(line, " {\"value\": %" SCNu64 ", \"bucket\": %" SCNu32 ", \"lower\": %" SCNu64
			   ", \"upper\": %" SCNu64, &c.value, &c.bucket, &c.lower, &c.upper) != 4)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			cases = realloc(cases, cap * sizeof(*cases));
			if (!cases)
				abort();
		}
		cases[n++] = c;
	}
	fclose(f);
	*out = cases;
	return n;
}

#endif
