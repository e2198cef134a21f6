/* syscall_cost.c — bench helper (build/bench/strata-syscall-cost FILE): times, in
 * alternating batches, a syscall the file-system layer ignores (getppid) and one it
 * follows (pread64 of SIZE bytes, 4 KiB unless set, at random 4 KiB-aligned offsets of
 * FILE, which should be in the page cache), and prints "getppid_ns pread_ns": the fastest
 * batch of each over ROUNDS, per call. CALLS per batch (2000 unless set): with ROUNDS=1
 * and CALLS=1000000, the figures are a whole run's time per call. The fastest batch is the one the shared machine disturbed least. Run bare,
 * chosen by strata-collect --fs-pid, and not chosen: the differences are the layer's
 * whole cost per syscall (tracepoint entry, BPF, return). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"

#define CALLS 2000
#define ROUNDS 400


int main(int argc, char **argv)
{
	static char buf[4096];
	long calls = getenv("CALLS") ? atol(getenv("CALLS")) : CALLS;
	size_t size = getenv("SIZE") ? (size_t)atol(getenv("SIZE")) : sizeof(buf);
	uint64_t best_ppid = UINT64_MAX, best_pread = UINT64_MAX, blocks, x = 88172645463325252ULL;
	struct stat st;
	int fd;

	if (argc != 2 || (fd = open(argv[1], O_RDONLY)) < 0 || fstat(fd, &st) < 0 || st.st_size < 4096 ||
	    calls < 1 || size < 1 || size > sizeof(buf)) {
		fprintf(stderr, "usage: [CALLS=N] [SIZE=1..4096] strata-syscall-cost FILE (a readable file of at "
				"least 4 KiB)\n");
		return 2;
	}
	blocks = (uint64_t)st.st_size / 4096;
	int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : ROUNDS; /* fewer: smoke mode */
	if (getenv("WAIT")) /* let the caller attach first: one line on stdin */
		getchar();
	for (int r = 0; r < rounds; r++) {
		uint64_t t0 = clock_mono_ns(), t1, t2;

		for (long i = 0; i < calls; i++)
			syscall(SYS_getppid);
		t1 = clock_mono_ns();
		for (long i = 0; i < calls; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			if (pread(fd, buf, size, (off_t)(x % blocks * 4096)) != (ssize_t)size)
				return 1;
		}
		t2 = clock_mono_ns();
		if (t1 - t0 < best_ppid)
			best_ppid = t1 - t0;
		if (t2 - t1 < best_pread)
			best_pread = t2 - t1;
	}
	printf("%.1f %.1f\n", (double)best_ppid / calls, (double)best_pread / calls);
	return 0;
}
