/* netaddr.c — a chained hash table of client addresses and their connection
 * counts (see netaddr.h); entries live while connections do. */
#include "netaddr.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define NETADDR_BUCKETS 4096

static struct netaddr *table[NETADDR_BUCKETS];

static void key_of(const struct sockaddr_storage *ss, uint8_t key[17])
{
	memset(key, 0, 17);
	if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			key[0] = AF_INET;
			memcpy(key + 1, a->s6_addr + 12, 4);
		} else {
			key[0] = AF_INET6;
			memcpy(key + 1, a->s6_addr, 16);
		}
	} else if (ss->ss_family == AF_INET) {
		key[0] = AF_INET;
		memcpy(key + 1, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	}
}

static uint32_t bucket_of(const uint8_t key[17])
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (int i = 0; i < 17; i++)
		h = (h ^ key[i]) * 16777619u;
	return h % NETADDR_BUCKETS;
}

struct netaddr *netaddr_get(const struct sockaddr_storage *peer)
{
	uint8_t key[17];
	key_of(peer, key);
	struct netaddr **head = &table[bucket_of(key)];
	for (struct netaddr *a = *head; a; a = a->next)
		if (!memcmp(a->key, key, sizeof(key)))
			return a;
	struct netaddr *a = xcalloc(1, sizeof(*a));
	memcpy(a->key, key, sizeof(key));
	a->next = *head;
	*head = a;
	return a;
}

void netaddr_put(struct netaddr *a)
{
	if (--a->count)
		return;
	for (struct netaddr **pp = &table[bucket_of(a->key)]; *pp; pp = &(*pp)->next)
		if (*pp == a) {
			*pp = a->next;
			free(a);
			return;
		}
}
