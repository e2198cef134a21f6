/* netaddr.h — how many connections each client address holds: the event loop's
 * table behind the per-address connection limit (one thread uses it; no lock). */
#ifndef ENGINE_NETADDR_H
#define ENGINE_NETADDR_H

#include <stdint.h>
#include <sys/socket.h>

struct netaddr {
	uint8_t key[17]; /* family, then the address (IPv4-mapped IPv6 as IPv4) */
	uint32_t count;  /* connections open from it */
	struct netaddr *next;
};

/* The entry of the peer's address, created with count 0 when new. */
struct netaddr *netaddr_get(const struct sockaddr_storage *peer);
/* Drops one connection; the entry is freed when none is left. */
void netaddr_put(struct netaddr *a);

#endif
