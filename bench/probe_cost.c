/* probe_cost.c — bench helper (build/bench/strata-probe-cost): fires the engine's
 * strata:nfs_keys and strata:nfs_ops USDT probes in a tight loop, the way an engine
 * worker does, and prints each second the loop's time per operation for three probe
 * sites, in alternating batches so all see the same machine:
 *   "single": one operation per hit (an idle engine's case), sys/sdt.h's 1-byte nop;
 *   "nop5":   the same with a 5-byte nop, which Linux 6.18+ turns from an int3 trap
 *             into a call to the uprobe trampoline;
 *   "batch":  STRATA_NFS_BATCH operations per hit (a busy engine's case).
 * Run bare, then under strata-collect --engine-pid: the difference is the probe's whole
 * cost per operation (entry, BPF, return). */
#define STRATA_PROBES_DEFINE_SEMAPHORES
#include <stdio.h>
#include <time.h>
#include "strata_probes.h"
#include "clock.h"

#define OPS 16384 /* operations per timed run */

static struct strata_nfs_batch batch;


/* A getattr/read/write mix from one IPv4 client, served by the ARC, with latencies
 * spread over 100 log-linear buckets (20 us .. 2 ms) as a real engine's are. */
static void op_add(unsigned i, __u64 now)
{
	static const __u16 procs[] = { 1, 6, 7 };
	__u64 latency = 20000ULL << (i % 7) | (i % 97) * 1000;

	strata_nfs_batch_put(&batch, &(struct strata_nfs_op){
		.start_ns = now - latency, .end_ns = now, .prog = STRATA_PROG_NFS, .proc = procs[i % 3],
		.tiers = STRATA_TIER_ARC, .family = 2, .client = { 127, 0, 0, 1 }, .arc_hits = 1,
		.bytes = 8192 }, STRATA_NFS_WHOLE());
}

#define TIMED_RUN(name, per_hit)                                                  \
	static __attribute__((noinline)) __u64 name(void)                         \
	{                                                                         \
		__u64 t0 = clock_mono_ns();                                             \
		for (unsigned i = 0; i < OPS; i++) {                              \
			op_add(i, t0);                                            \
			if (batch.count == (per_hit)) {                           \
				STRATA_NFS_FIRE(&batch);                          \
				strata_nfs_batch_empty(&batch);                   \
			}                                                         \
			__asm__ volatile("" ::: "memory");                        \
		}                                                                 \
		return clock_mono_ns() - t0;                                            \
	}

TIMED_RUN(run_batch, STRATA_NFS_BATCH)
TIMED_RUN(run_single, 1)
#undef _SDT_NOP
#define _SDT_NOP .nops 5
TIMED_RUN(run_nop5, 1)

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		__u64 end = clock_mono_ns() + 1000000000ULL, ts = 0, t5 = 0, tb = 0, n = 0;

		while (clock_mono_ns() < end) {
			ts += run_single();
			t5 += run_nop5();
			tb += run_batch();
			n += OPS;
		}
		printf("single %.1f nop5 %.1f batch %.1f\n", (double)ts / n, (double)t5 / n, (double)tb / n);
	}
}
