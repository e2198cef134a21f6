/* disk_btf.h — what the running kernel's BTF says about the block tracepoints the
 * disk layer uses: are they there, and which argument is the struct request. */
#ifndef STRATA_COLLECT_DISK_BTF_H
#define STRATA_COLLECT_DISK_BTF_H

#include <stdbool.h>
#include <stddef.h>

/* Index (0-based, after the hidden context pointer) of the struct request * argument of
 * tracepoint tp ("block_rq_issue"), or -1 with a reason in why. */
int disk_btf_request_arg(const char *tp, char *why, size_t n);
/* Both block tracepoints present with a request argument. */
bool disk_btf_supported(char *why, size_t n);
/* struct request has start_time_ns, the start of disk.queue. */
bool disk_btf_request_start(void);

#endif
