/* wire_test_run.c — runs bpf/wire.bpf.c's TC programs on packets given on stdin
 * (BPF_PROG_TEST_RUN), for tests/test_wire_parse.py. Needs root (or CAP_BPF).
 *
 * usage: wire_test_run [--bounded] [--loopback] PORT...   (the server ports the program follows;
 *        --bounded: the programs without bpf_loop, which kernels before 5.17 load)
 * stdin, one command a line:
 *   i HEX | e HEX   run the ingress / egress program on the Ethernet frame HEX (with
 *                   --loopback, both run the loopback program, which tells a call from a
 *                   reply by its port); a run that fails, or returns anything but
 *                   TC_ACT_UNSPEC, prints "fail ..."
 *   stats           one JSON line: {"runs":N,"ops":{OPKEY:N},"status":{KEY:N},
 *                   "size":{BUCKET:N},"counters":[...],"run_ns":[INGRESS,EGRESS],"odd":N}
 *                   (keys are the u32 key bytes; run_ns: the kernel's run time summed;
 *                   odd: the operations counted under AGG_EPOCH_BIT, an odd interval's)
 *   epoch N         sets agg_epoch to N (bpf/aggregate.h: an interval's end on
 *                   CLOCK_MONOTONIC | the parity of the interval it ends)
 *   hooks tc|lo     from now on run the ingress/egress programs, or the loopback one
 *   reset           empties every map (arrays zeroed) and the run counts, prints "reset":
 *                   the next packets meet a program in its just-loaded state
 * Dataset slots: 0 = wire.ops by op, 1 = wire.ops by status, 2 = wire.size. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "aggregate.h"
#include "wire_rpc.h"
#include "wire.skel.h"

#define FRAME_MAX 65536

static int unhex(const char *s, unsigned char *out, size_t max)
{
	size_t n = 0;

	for (; s[0] && s[0] != '\n' && s[1]; s += 2) {
		unsigned v;

		if (n == max || sscanf(s, "%2x", &v) != 1)
			return -1;
		out[n++] = (unsigned char)v;
	}
	return (int)n;
}

/* The counts of one key summed over CPUs, over both places a chunk lives (bpf/aggregate.h:
 * the per-CPU agg_table first, the agg_counts hash for collisions) and both parities. */
struct summed {
	struct agg_key key;
	uint64_t counts[AGG_CHUNK];
};

static struct summed *summed_of(struct summed **all, size_t *n, const struct agg_key *parity_key)
{
	struct agg_key key = *parity_key, *k = &key;

	key.bucket &= ~AGG_EPOCH_BIT; /* both intervals' counts */
	for (size_t i = 0; i < *n; i++)
		if (!memcmp(&(*all)[i].key, k, sizeof(*k)))
			return &(*all)[i];
	*all = realloc(*all, (*n + 1) * sizeof(**all));
	memset(&(*all)[*n], 0, sizeof(**all));
	(*all)[*n].key = *k;
	return &(*all)[(*n)++];
}

static void print_stats(struct wire_bpf *s, unsigned long runs, const uint64_t run_ns[2])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(s->maps.agg_counts);
	struct agg_chunk *vals = calloc((size_t)ncpu, sizeof(*vals));
	struct agg_table_entry *tvals = calloc((size_t)ncpu, sizeof(*tvals));
	struct agg_key key, next;
	const char *sep[3] = { "", "", "" };
	uint64_t counters[WIRE_COUNTERS] = { 0 }, *cv = calloc((size_t)ncpu, sizeof(*cv));
	struct summed *all = NULL;
	uint64_t odd = 0;
	size_t nall = 0;
	int started = 0;
	char *parts[3];
	size_t lens[3];
	FILE *out[3];

	while (bpf_map_get_next_key(fd, started ? &key : NULL, &next) == 0) {
		key = next;
		started = 1;
		if (key.slot > 2 || bpf_map_lookup_elem(fd, &key, vals))
			continue;
		struct summed *sm = summed_of(&all, &nall, &key);
		for (int c = 0; c < ncpu; c++)
			for (int b = 0; b < AGG_CHUNK; b++) {
				sm->counts[b] += vals[c].counts[b];
				if (key.slot == 0 && (key.bucket & AGG_EPOCH_BIT))
					odd += vals[c].counts[b];
			}
	}
	for (__u32 i = 0; i < AGG_TABLE_SIZE; i++) {
		if (bpf_map_lookup_elem(bpf_map__fd(s->maps.agg_table), &i, tvals))
			continue;
		for (int c = 0; c < ncpu; c++) {
			if (!tvals[c].used || tvals[c].k.slot > 2)
				continue;
			struct summed *sm = summed_of(&all, &nall, &tvals[c].k);
			for (int b = 0; b < AGG_CHUNK; b++) {
				sm->counts[b] += tvals[c].c.counts[b];
				if (tvals[c].k.slot == 0 && (tvals[c].k.bucket & AGG_EPOCH_BIT))
					odd += tvals[c].c.counts[b];
			}
		}
	}
	for (int i = 0; i < 3; i++)
		out[i] = open_memstream(&parts[i], &lens[i]);
	for (size_t i = 0; i < nall; i++) {
		const struct agg_key *k0 = &all[i].key;
		for (int b = 0; b < AGG_CHUNK; b++) {
			uint32_t k;

			if (!all[i].counts[b])
				continue;
			memcpy(&k, k0->key, sizeof(k));
			if (k0->slot == 2)
				k = k0->bucket + (uint32_t)b;
			fprintf(out[k0->slot], "%s\"%u\":%" PRIu64, sep[k0->slot], k, all[i].counts[b]);
			sep[k0->slot] = ",";
		}
	}
	for (__u32 i = 0; i < WIRE_COUNTERS; i++)
		if (bpf_map_lookup_elem(bpf_map__fd(s->maps.wire_counters), &i, cv) == 0)
			for (int c = 0; c < ncpu; c++)
				counters[i] += cv[c];
	for (int i = 0; i < 3; i++)
		fclose(out[i]);
	printf("{\"runs\":%lu,\"ops\":{%s},\"status\":{%s},\"size\":{%s},\"counters\":[", runs, parts[0], parts[1],
	       parts[2]);
	for (int i = 0; i < WIRE_COUNTERS; i++)
		printf("%s%" PRIu64, i ? "," : "", counters[i]);
	printf("],\"run_ns\":[%" PRIu64 ",%" PRIu64 "],\"odd\":%" PRIu64 "}\n", run_ns[0], run_ns[1], odd);
	fflush(stdout);
	for (int i = 0; i < 3; i++)
		free(parts[i]);
	free(all);
	free(vals);
	free(tvals);
	free(cv);
}

/* Hash maps emptied, array maps zeroed; .bss/.data (the ports and slots set up in main) kept. */
static void reset(struct wire_bpf *s)
{
	int ncpu = libbpf_num_possible_cpus();
	struct bpf_map *m;

	bpf_object__for_each_map(m, s->obj) {
		enum bpf_map_type type = bpf_map__type(m);
		int fd = bpf_map__fd(m), percpu = type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PERCPU_HASH ||
						 type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
		size_t vsize = percpu ? ((bpf_map__value_size(m) + 7) & ~7u) * (size_t)ncpu : bpf_map__value_size(m);
		void *key = calloc(1, bpf_map__key_size(m)), *zero = calloc(1, vsize);

		if (bpf_map__is_internal(m)) {
		} else if (type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY) {
			for (__u32 i = 0; i < bpf_map__max_entries(m); i++)
				if (bpf_map_update_elem(fd, &i, zero, BPF_ANY))
					printf("fail reset %s: %s\n", bpf_map__name(m), strerror(errno));
		} else {
			while (bpf_map_get_next_key(fd, NULL, key) == 0)
				if (bpf_map_delete_elem(fd, key)) {
					printf("fail reset %s: %s\n", bpf_map__name(m), strerror(errno));
					break;
				}
		}
		free(key);
		free(zero);
	}
	printf("reset\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static char line[2 * FRAME_MAX + 16];
	static unsigned char frame[FRAME_MAX];
	static const __u32 stats[3] = { AGG_STAT_WIRE_OPS, AGG_STAT_WIRE_OPS, AGG_STAT_WIRE_SIZE };
	static const __u32 dims[3] = { AGG_DIM_OP, AGG_DIM_STATUS, AGG_DIM_NONE };
	struct wire_bpf *s = wire_bpf__open();
	struct bpf_program *ingress, *egress, *lo;
	unsigned long runs = 0;
	uint64_t run_ns[2] = { 0, 0 };
	int err, arg = 1, loopback = 0, bounded = 0;

	for (; arg < argc && strncmp(argv[arg], "--", 2) == 0; arg++) {
		if (strcmp(argv[arg], "--loopback") == 0) {
			loopback = 1;
		} else if (strcmp(argv[arg], "--bounded") == 0) {
			bounded = 1;
		} else {
			fprintf(stderr, "wire_test_run: unknown option %s\n", argv[arg]);
			return 2;
		}
	}
	if (!s)
		return 2;
	ingress = bounded ? s->progs.wire_ingress_bounded : s->progs.wire_ingress;
	egress = bounded ? s->progs.wire_egress_bounded : s->progs.wire_egress;
	lo = bounded ? s->progs.wire_loopback_bounded : s->progs.wire_loopback;
	bpf_program__set_autoload(bounded ? s->progs.wire_ingress : s->progs.wire_ingress_bounded, false);
	bpf_program__set_autoload(bounded ? s->progs.wire_egress : s->progs.wire_egress_bounded, false);
	bpf_program__set_autoload(bounded ? s->progs.wire_loopback : s->progs.wire_loopback_bounded, false);
	if ((err = wire_bpf__load(s))) {
		fprintf(stderr, "wire_test_run: cannot load bpf/wire.bpf.c: %s\n", strerror(-err));
		return 2;
	}
	for (int i = arg; i < argc; i++) {
		__u16 port = (__u16)atoi(argv[i]);

		s->bss->wire_port_bits[port >> 3] |= (__u8)(1u << (port & 7));
	}
	for (int i = 0; i < 3; i++) {
		s->bss->agg_slots[i].breakdown = dims[i];
		s->bss->agg_slots[i].gen = 1;
		s->bss->agg_slots[i].stat = stats[i];
	}
	s->bss->agg_nslots = 3;
	while (fgets(line, sizeof(line), stdin)) {
		int n, prog;
		LIBBPF_OPTS(bpf_test_run_opts, run);

		if (strncmp(line, "stats", 5) == 0) {
			print_stats(s, runs, run_ns);
			continue;
		}
		if (strncmp(line, "epoch ", 6) == 0) {
			s->bss->agg_epoch = strtoull(line + 6, NULL, 10);
			continue;
		}
		if (strncmp(line, "hooks ", 6) == 0) {
			loopback = strncmp(line + 6, "lo", 2) == 0;
			continue;
		}
		if (strncmp(line, "reset", 5) == 0) {
			reset(s);
			runs = 0;
			run_ns[0] = run_ns[1] = 0;
			continue;
		}
		if ((line[0] != 'i' && line[0] != 'e') || line[1] != ' ' ||
		    (n = unhex(line + 2, frame, sizeof(frame))) < 14) {
			printf("fail bad command\n");
			fflush(stdout);
			continue;
		}
		prog = bpf_program__fd(loopback ? lo : line[0] == 'i' ? ingress : egress);
		run.data_in = frame;
		run.data_size_in = (__u32)n;
		run.repeat = 1;
		err = bpf_prog_test_run_opts(prog, &run);
		runs++;
		run_ns[line[0] == 'e'] += run.duration;
		if (err || (int)run.retval != -1) {
			printf("fail run %lu: err %d retval %d\n", runs, err, (int)run.retval);
			fflush(stdout);
		}
	}
	wire_bpf__destroy(s);
	return 0;
}
