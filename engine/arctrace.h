/* arctrace.h — reader for the ARC paper's block traces (.lis: "start nblocks
 * ignored reqno" per line), plain or zstd-compressed (detected by magic). */
#ifndef STRATA_ARCTRACE_H
#define STRATA_ARCTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct arctrace_req {
	uint64_t start;         /* first 512-byte block */
	uint32_t nblocks;       /* blocks (page accesses) in this request */
};

struct arctrace;

/* NULL on failure, with the reason in err. */
struct arctrace *arctrace_open(const char *path, char *err, size_t errlen);
/* Up to max requests into out: the count, 0 at the end of the trace, -1 on
 * bad input or a read error (reason, with the line number, from
 * arctrace_error). */
ssize_t arctrace_next(struct arctrace *t, struct arctrace_req *out, size_t max);
const char *arctrace_error(const struct arctrace *t);
void arctrace_close(struct arctrace *t);

#endif
