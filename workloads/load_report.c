/* load_report.c — writes the JSON report: the run's ops, rates, bytes and
 * llhist latencies per NFSv3 procedure, per client, and the setup phase's
 * RPCs apart from the run's so client counts compare exactly with a server's. */
#include "load_report.h"

#include <math.h>
#include <string.h>

#include "load_run.h"

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

int report_merge(const struct load_shared *sh, struct load_client *clients, int n,
		 struct load_totals *t)
{
	if (stats_init_series(&t->run, sh->nsec) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		stats_merge(&t->setup, &clients[i].setup);
		stats_merge(&t->run, &clients[i].run);
	}
	return 0;
}

static void setup_json(FILE *f, const struct phase_stats *s)
{
	fputs("{\"ops\":", f);
	stats_json_ops(f, s);
	fprintf(f, ",\"mount_ops\":{\"mnt\":%llu},\"bytes\":{\"write\":%llu},\"errors\":%llu",
		(unsigned long long)s->ops[LOAD_PROC_MNT], (unsigned long long)s->bytes_written,
		(unsigned long long)s->errors);
}

static void rates_json(FILE *f, const struct phase_stats *s, double secs)
{
	double d = secs > 0 ? secs : 1;
	const char *sep = "";

	fputc('{', f);
	for (int p = 0; p < LOAD_NFS_PROCS; p++) {
		if (!s->ops[p])
			continue;
		fprintf(f, "%s\"%s\":%.3f", sep, load_proc_name(p), (double)s->ops[p] / d);
		sep = ",";
	}
	fprintf(f, "%s\"total\":%.3f}", sep, (double)stats_total_ops(s) / d);
}

static void series_json(FILE *f, const struct load_opts *o, const struct phase_stats *s)
{
	uint32_t len = (uint32_t)ceil(o->duration);

	while (len < s->nsec && s->per_sec[len]) /* keep the drain's tail */
		len++;
	fputs("{\"ops\":[", f);
	for (uint32_t i = 0; i < len && i < s->nsec; i++)
		fprintf(f, "%s%llu", i ? "," : "", (unsigned long long)s->per_sec[i]);
	fputs("],\"threads_per_client\":[", f);
	for (uint32_t i = 0; i < len; i++)
		fprintf(f, "%s%d", i ? "," : "", o->profile == PROFILE_STEPUP
			? stepup_threads(o, (uint64_t)i * 1000000000ull) : o->threads);
	fputs("]}", f);
}

static void config_json(FILE *f, const struct load_opts *o)
{
	fprintf(f, "{\"io_size\":%llu,\"files\":%u,\"file_size\":%llu,\"working_set\":%llu,"
		"\"clients\":%d,\"threads\":%d,\"duration\":%g,\"rate\":%g,\"stable\":\"%s\","
		"\"step_interval\":%g,\"read_pct\":%d,\"netns\":%s,\"seed\":%llu,\"setup\":%s,"
		"\"setup_only\":%s,\"file_names\":\"load-%%07u\"}",
		(unsigned long long)o->io_size, o->files, (unsigned long long)o->file_size,
		(unsigned long long)(o->file_size * o->files), o->clients, o->threads,
		o->duration, o->rate, load_stable_name(o->stable), o->step_interval,
		o->read_pct, o->netns ? "true" : "false", (unsigned long long)o->seed,
		o->setup ? "true" : "false", o->setup_only ? "true" : "false");
}

void report_write(FILE *f, const struct load_opts *o, const struct load_shared *sh,
		  const struct load_client *clients, int n, const struct load_totals *t,
		  const char *error)
{
	const struct phase_stats *r = &t->run;
	uint64_t failures = 0;

	fprintf(f, "{\"version\":1,\"server\":");
	char server[300];
	snprintf(server, sizeof(server), "%s:%d", o->server, sh->nfsport);
	json_str(f, server);
	fprintf(f, ",\"mount_port\":%d,\"export\":", sh->mountport);
	json_str(f, o->export);
	if (o->pair_nfsport) {
		fprintf(f, ",\"pair\":{\"nfs_port\":%d,\"mount_port\":%d,\"export\":",
			o->pair_nfsport, o->pair_mountport);
		json_str(f, o->pair_export);
		fputc('}', f);
	}
	fprintf(f, ",\"profile\":\"%s\",\"config\":", load_profile_name(o->profile));
	config_json(f, o);
	fprintf(f, ",\"start_unix\":%.6f,\"duration_s\":%.6f,\"clients\":[", t->run_start_unix, t->run_s);
	for (int i = 0; i < n; i++) {
		const struct load_client *c = &clients[i];

		failures += c->rpc_failures;
		fprintf(f, "%s{\"name\":", i ? "," : "");
		json_str(f, c->name);
		fputs(",\"addr\":", f);
		json_str(f, c->addr);
		fputs(",\"machine\":", f);
		json_str(f, c->machine);
		fprintf(f, ",\"uid\":%u,\"ops\":", c->uid);
		stats_json_ops(f, &c->run);
		fprintf(f, ",\"ops_total\":%llu,\"bytes\":{\"read\":%llu,\"write\":%llu},\"errors\":%llu,"
			"\"setup\":", (unsigned long long)stats_total_ops(&c->run),
			(unsigned long long)c->run.bytes_read,
			(unsigned long long)c->run.bytes_written, (unsigned long long)c->run.errors);
		setup_json(f, &c->setup);
		fputs("}}", f);
	}
	fputs("],\"ops\":", f);
	stats_json_ops(f, r);
	fprintf(f, ",\"ops_total\":%llu,\"ops_per_sec\":", (unsigned long long)stats_total_ops(r));
	rates_json(f, r, t->run_s);
	double d = t->run_s > 0 ? t->run_s : 1;
	fprintf(f, ",\"bytes\":{\"read\":%llu,\"write\":%llu},"
		"\"bytes_per_sec\":{\"read\":%.1f,\"write\":%.1f},\"errors\":%llu,"
		"\"rpc_failures\":%llu,\"latency_ns\":",
		(unsigned long long)r->bytes_read, (unsigned long long)r->bytes_written,
		(double)r->bytes_read / d, (double)r->bytes_written / d,
		(unsigned long long)r->errors, (unsigned long long)failures);
	stats_json_latency(f, r);
	fputs(",\"per_second\":", f);
	series_json(f, o, r);
	fputs(",\"setup\":", f);
	setup_json(f, &t->setup);
	fprintf(f, ",\"duration_s\":%.6f},\"error\":", t->setup_s);
	if (error)
		json_str(f, error);
	else
		fputs("null", f);
	fputs("}\n", f);
}

void report_summary(FILE *f, const struct load_opts *o, const struct load_totals *t)
{
	const struct phase_stats *r = &t->run;
	double d = t->run_s > 0 ? t->run_s : 1;

	if (o->setup_only) {
		fprintf(f, "strata-load: working set ready: %u files of %llu bytes, %llu bytes written, "
			"%.2f s\n", o->files, (unsigned long long)o->file_size,
			(unsigned long long)t->setup.bytes_written, t->setup_s);
		return;
	}
	fprintf(f, "strata-load: %s, %d clients x %d threads, %.2f s: %llu ops (%.0f ops/s), "
		"read %.1f MiB/s, write %.1f MiB/s, %llu errors\n", load_profile_name(o->profile),
		o->clients, o->threads, t->run_s, (unsigned long long)stats_total_ops(r),
		(double)stats_total_ops(r) / d, (double)r->bytes_read / d / 1048576.0,
		(double)r->bytes_written / d / 1048576.0, (unsigned long long)r->errors);
}
