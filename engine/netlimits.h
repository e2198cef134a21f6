/* netlimits.h — what the front-end lets a client hold: record and reply sizes,
 * connections per address, the limits serve sets from flags (net.h, netconn.h). */
#ifndef ENGINE_NETLIMITS_H
#define ENGINE_NETLIMITS_H

#include <stdint.h>

/* Largest record accepted: a 1 MiB WRITE plus RPC and NFS headers. */
#define NET_MAX_RECORD (1024u * 1024u + 4096u)
/* Reply buffer: a 1 MiB READ plus headers and attributes. */
#define NET_REPLY_CAP (1024u * 1024u + 16384u)
/* Largest record from an address no export allows (MOUNT and NULL fit). */
#define NET_UNTRUSTED_RECORD 4096u
/* Connections at once from one address no export allows, and from all such
 * addresses: at most max_conns / NET_UNTRUSTED_SHARE. */
#define NET_UNTRUSTED_PER_ADDR 4u
#define NET_UNTRUSTED_SHARE 8u

/* What clients may hold; net_start takes them, serve sets them from flags. */
struct net_limits {
	uint32_t max_conns;          /* connections at once (lowered to fit RLIMIT_NOFILE) */
	uint32_t max_conns_per_addr; /* from one client address */
	uint64_t record_mem;         /* bytes of unfinished records, all connections */
	uint64_t reply_queue;        /* unsent reply bytes at which a connection stops being read */
	uint64_t reply_mem;          /* unsent reply bytes, all connections */
	uint64_t record_timeout_ms;  /* a record's first byte to its last */
	uint64_t idle_timeout_ms;    /* no byte moved and nothing running: closed */
};
#define NET_LIMITS_DEFAULT { .max_conns = 4096, .max_conns_per_addr = 256, \
	.record_mem = 64ull << 20, .reply_queue = 4ull << 20, .reply_mem = 128ull << 20, \
	.record_timeout_ms = 30000, .idle_timeout_ms = 600000 }

#endif
