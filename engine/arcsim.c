/* arcsim.c — `strata-engine arcsim`: replays an ARC-paper block trace through
 * the engine's ARC (or LRU) code and prints hit ratios and speed.
 *
 * Each 512-byte block of a request is one page access (as in the paper's
 * tables).  Several cache sizes and policies can be simulated in one pass over
 * the trace: the trace is decoded in chunks and every chunk is fed to each
 * cache in turn, timing each cache's share separately.
 */
#include "arcsim.h"

#include "arc.h"
#include "arctrace.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nominal bytes per page given to the byte-based ARC; a power of two keeps it
 * bit-exact with the paper's page-count ARC. */
#define ARCSIM_PAGE 4096u
#define ARCSIM_CHUNK 65536u
#define ARCSIM_AHEAD 8             /* page accesses prefetched ahead */
#define ARCSIM_MAX_SIMS 64

struct sim {
	enum arc_policy policy;
	uint64_t pages;
	arc_t *arc;
	uint64_t hits, accesses, ns;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: strata-engine arcsim --trace FILE.lis[.zst] --pages N[,N...]\n"
		"                            [--policy arc|lru[,...]] [--json]\n"
		"Replays an ARC-paper trace (each 512-byte block = one page access)\n"
		"through the engine's ARC or an LRU of N pages; prints the hit ratio,\n"
		"requests/s and page accesses/s of each cache.\n");
}

static void prefetch_next(arc_t *arc, const struct arctrace_req *req, size_t n, size_t *i,
			  uint32_t *b)
{
	while (*i < n && *b >= req[*i].nblocks) {
		(*i)++;
		*b = 0;
	}
	if (*i < n)
		arc_prefetch(arc, (struct arc_key){ 0, req[*i].start + (*b)++ });
}

static void run_chunk(struct sim *s, const struct arctrace_req *req, size_t n)
{
	uint64_t t0 = clock_mono_ns(), hits = 0, acc = 0;
	/* Prefetch the header of the page accessed ARCSIM_AHEAD accesses later. */
	size_t pi = 0;
	uint32_t pb = 0;
	for (int k = 0; k < ARCSIM_AHEAD; k++)
		prefetch_next(s->arc, req, n, &pi, &pb);
	for (size_t i = 0; i < n; i++) {
		for (uint32_t b = 0; b < req[i].nblocks; b++) {
			prefetch_next(s->arc, req, n, &pi, &pb);
			hits += arc_access(s->arc, (struct arc_key){ 0, req[i].start + b }, ARCSIM_PAGE);
		}
		acc += req[i].nblocks;
	}
	s->ns += clock_mono_ns() - t0;
	s->hits += hits;
	s->accesses += acc;
}

/* Comma-separated list helpers: false on a bad item. */
static bool parse_pages(char *arg, uint64_t *out, int *n)
{
	for (char *save = NULL, *tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long long v = strtoull(tok, &end, 10);
		if (*tok < '0' || *tok > '9' || *end || v == 0 || v > (1ull << 40) ||
		    *n == ARCSIM_MAX_SIMS)
			return false;
		out[(*n)++] = v;
	}
	return *n > 0;
}

static bool parse_policies(char *arg, enum arc_policy *out, int *n)
{
	for (char *save = NULL, *tok = strtok_r(arg, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (*n == 2)
			return false;
		if (!strcmp(tok, "arc"))
			out[(*n)++] = ARC_POLICY_ARC;
		else if (!strcmp(tok, "lru"))
			out[(*n)++] = ARC_POLICY_LRU;
		else
			return false;
	}
	return *n > 0;
}

static void print_results(const struct sim *sims, int nsims, uint64_t requests,
			  double wall_s, const char *trace, bool json)
{
	if (!json)
		printf("trace %s: %llu requests, %llu page accesses, %.3f s total\n"
		       "%-6s %10s %9s %12s %9s %12s %13s\n",
		       trace, (unsigned long long)requests,
		       (unsigned long long)(nsims ? sims[0].accesses : 0), wall_s,
		       "policy", "pages", "hit%", "hits", "sim_s", "requests/s", "accesses/s");
	for (int i = 0; i < nsims; i++) {
		const struct sim *s = &sims[i];
		double sec = (double)s->ns / 1e9;
		double ratio = s->accesses ? 100.0 * (double)s->hits / (double)s->accesses : 0.0;
		double rps = sec > 0 ? (double)requests / sec : 0.0;
		double aps = sec > 0 ? (double)s->accesses / sec : 0.0;
		struct arc_stats st;
		arc_get_stats(s->arc, &st);
		const char *pol = s->policy == ARC_POLICY_ARC ? "arc" : "lru";
		if (json)
			printf("{\"policy\": \"%s\", \"pages\": %llu, \"requests\": %llu, "
			       "\"accesses\": %llu, \"hits\": %llu, \"hit_ratio\": %.6f, "
			       "\"sim_seconds\": %.6f, \"requests_per_s\": %.1f, "
			       "\"accesses_per_s\": %.1f, \"p_pages\": %.3f, "
			       "\"total_seconds\": %.6f}\n",
			       pol, (unsigned long long)s->pages, (unsigned long long)requests,
			       (unsigned long long)s->accesses, (unsigned long long)s->hits,
			       ratio, sec, rps, aps, (double)st.p / ARCSIM_PAGE, wall_s);
		else
			printf("%-6s %10llu %9.2f %12llu %9.3f %12.0f %13.0f\n", pol,
			       (unsigned long long)s->pages, ratio, (unsigned long long)s->hits,
			       sec, rps, aps);
	}
}

int arcsim_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trace", required_argument, NULL, 't' },
		{ "pages", required_argument, NULL, 'n' },
		{ "policy", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *trace = NULL;
	uint64_t pages[ARCSIM_MAX_SIMS];
	enum arc_policy policies[2] = { ARC_POLICY_ARC };
	int npages = 0, npol = 0;
	bool json = false;

	optind = 0;
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
		switch (c) {
		case 't':
			trace = optarg;
			break;
		case 'n':
			npages = 0;
			if (!parse_pages(optarg, pages, &npages)) {
				fprintf(stderr, "arcsim: --pages wants positive integers, comma-separated (at most %d)\n",
					ARCSIM_MAX_SIMS);
				return 2;
			}
			break;
		case 'p':
			npol = 0;
			if (!parse_policies(optarg, policies, &npol)) {
				fprintf(stderr, "arcsim: --policy wants arc, lru or arc,lru\n");
				return 2;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !trace || !npages) {
		fprintf(stderr, "arcsim: %s\n", optind < argc ? "unexpected argument" :
			"--trace and --pages are required");
		usage(stderr);
		return 2;
	}
	if (!npol)
		npol = 1;
	if (npol * npages > ARCSIM_MAX_SIMS) {
		fprintf(stderr, "arcsim: at most %d caches per run\n", ARCSIM_MAX_SIMS);
		return 2;
	}

	char err[512];
	struct arctrace *t = arctrace_open(trace, err, sizeof(err));
	if (!t) {
		fprintf(stderr, "arcsim: %s\n", err);
		return 1;
	}
	struct sim sims[ARCSIM_MAX_SIMS];
	int nsims = 0;
	for (int i = 0; i < npol; i++)
		for (int j = 0; j < npages; j++) {
			struct sim *s = &sims[nsims++];
			*s = (struct sim){ .policy = policies[i], .pages = pages[j] };
			s->arc = arc_create(pages[j] * ARCSIM_PAGE, policies[i]);
			if (!s->arc) {
				fprintf(stderr, "arcsim: out of memory\n");
				return 1;
			}
		}

	struct arctrace_req *req = malloc(ARCSIM_CHUNK * sizeof(*req));
	if (!req) {
		fprintf(stderr, "arcsim: out of memory\n");
		return 1;
	}
	int rc = 0;
	uint64_t requests = 0, t0 = clock_mono_ns();
	for (;;) {
		ssize_t n = arctrace_next(t, req, ARCSIM_CHUNK);
		if (n < 0) {
			fprintf(stderr, "arcsim: %s: %s\n", trace, arctrace_error(t));
			rc = 1;
			break;
		}
		if (n == 0)
			break;
		requests += (uint64_t)n;
		for (int i = 0; i < nsims; i++)
			run_chunk(&sims[i], req, (size_t)n);
	}
	if (rc == 0)
		print_results(sims, nsims, requests, (double)(clock_mono_ns() - t0) / 1e9, trace, json);
	for (int i = 0; i < nsims; i++)
		arc_destroy(sims[i].arc);
	free(req);
	arctrace_close(t);
	return rc;
}
