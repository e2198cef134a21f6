/* load_stats.c — counts and llhist latency histograms per procedure, and
 * their JSON form. Bucket maths come from bpf/llhist.h (shared with BPF). */
#include "load_stats.h"

#include <stdlib.h>
#include <string.h>

#include "llhist.h"

static const char *const PROC_NAMES[LOAD_NPROCS] = {
	"null", "getattr", "setattr", "lookup", "access", "readlink", "read",
	"write", "create", "mkdir", "symlink", "mknod", "remove", "rmdir",
	"rename", "link", "readdir", "readdirplus", "fsstat", "fsinfo",
	"pathconf", "commit", "mnt",
};

const char *load_proc_name(int proc)
{
	return proc >= 0 && proc < LOAD_NPROCS ? PROC_NAMES[proc] : "unknown";
}

int stats_init_series(struct phase_stats *s, uint32_t nsec)
{
	s->per_sec = calloc(nsec, sizeof(*s->per_sec));
	s->nsec = s->per_sec ? nsec : 0;
	return s->per_sec ? 0 : -1;
}

void stats_record(struct phase_stats *s, int proc, uint64_t lat_ns, int64_t sec)
{
	struct op_latency *l = &s->lat[proc];

	s->ops[proc]++;
	if (sec >= 0 && s->nsec)
		s->per_sec[sec < s->nsec ? sec : s->nsec - 1]++;
	if (!l->buckets) {
		l->buckets = calloc(LLHIST_NBUCKETS, sizeof(*l->buckets));
		if (!l->buckets)
			return; /* latency lost, count kept */
	}
	if (l->count == 0 || lat_ns < l->min)
		l->min = lat_ns;
	if (lat_ns > l->max)
		l->max = lat_ns;
	l->count++;
	l->sum += lat_ns;
	l->buckets[llhist_bucket(lat_ns)]++;
}

void stats_merge(struct phase_stats *dst, const struct phase_stats *src)
{
	for (int p = 0; p < LOAD_NPROCS; p++) {
		const struct op_latency *sl = &src->lat[p];
		struct op_latency *dl = &dst->lat[p];

		dst->ops[p] += src->ops[p];
		if (!sl->count)
			continue;
		if (!dl->buckets)
			dl->buckets = calloc(LLHIST_NBUCKETS, sizeof(*dl->buckets));
		if (!dl->buckets)
			continue;
		if (dl->count == 0 || sl->min < dl->min)
			dl->min = sl->min;
		if (sl->max > dl->max)
			dl->max = sl->max;
		dl->count += sl->count;
		dl->sum += sl->sum;
		for (int b = 0; b < LLHIST_NBUCKETS; b++)
			dl->buckets[b] += sl->buckets[b];
	}
	dst->bytes_read += src->bytes_read;
	dst->bytes_written += src->bytes_written;
	dst->errors += src->errors;
	for (uint32_t i = 0; i < src->nsec && i < dst->nsec; i++)
		dst->per_sec[i] += src->per_sec[i];
}

void stats_free(struct phase_stats *s)
{
	for (int p = 0; p < LOAD_NPROCS; p++)
		free(s->lat[p].buckets);
	free(s->per_sec);
	memset(s, 0, sizeof(*s));
}

uint64_t stats_total_ops(const struct phase_stats *s)
{
	uint64_t n = 0;

	for (int p = 0; p < LOAD_NFS_PROCS; p++)
		n += s->ops[p];
	return n;
}

void stats_json_ops(FILE *f, const struct phase_stats *s)
{
	const char *sep = "";

	fputc('{', f);
	for (int p = 0; p < LOAD_NFS_PROCS; p++) {
		if (!s->ops[p])
			continue;
		fprintf(f, "%s\"%s\":%llu", sep, PROC_NAMES[p], (unsigned long long)s->ops[p]);
		sep = ",";
	}
	fputc('}', f);
}

/* Value at quantile q, interpolated inside its llhist bucket and clamped to
 * the observed [min, max]: at most the bucket's 10% error. */
static uint64_t quantile(const struct op_latency *l, double q)
{
	double rank = q * (double)l->count, seen = 0;

	for (int b = 0; b < LLHIST_NBUCKETS; b++) {
		uint64_t n = l->buckets[b];

		if (!n || seen + (double)n < rank) {
			seen += (double)n;
			continue;
		}
		double lo = (double)llhist_lower(b), hi = (double)llhist_upper(b);
		double v = lo + (hi - lo) * ((rank - seen) / (double)n);
		if (v < (double)l->min)
			return l->min;
		if (v > (double)l->max)
			return l->max;
		return (uint64_t)v;
	}
	return l->max;
}

void stats_json_latency(FILE *f, const struct phase_stats *s)
{
	const char *sep = "";

	fputc('{', f);
	for (int p = 0; p < LOAD_NFS_PROCS; p++) {
		const struct op_latency *l = &s->lat[p];

		if (!l->count || !l->buckets)
			continue;
		fprintf(f, "%s\"%s\":{\"count\":%llu,\"min\":%llu,\"max\":%llu,\"mean\":%.1f,"
			"\"p50\":%llu,\"p99\":%llu,\"p999\":%llu,\"llhist\":{",
			sep, PROC_NAMES[p], (unsigned long long)l->count,
			(unsigned long long)l->min, (unsigned long long)l->max,
			(double)l->sum / (double)l->count,
			(unsigned long long)quantile(l, 0.5), (unsigned long long)quantile(l, 0.99),
			(unsigned long long)quantile(l, 0.999));
		const char *bsep = "";
		for (int b = 0; b < LLHIST_NBUCKETS; b++) {
			if (!l->buckets[b])
				continue;
			fprintf(f, "%s\"%d\":%llu", bsep, b, (unsigned long long)l->buckets[b]);
			bsep = ",";
		}
		fputs("}}", f);
		sep = ",";
	}
	fputc('}', f);
}
