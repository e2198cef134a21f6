/* load_netns.h — --netns: each client thread gets a network namespace of its
 * own, joined to the root namespace by a veth pair, with source address
 * 10.213.B.(idx+1). The client side has no loopback, so 127.0.0.1 routes over
 * the veth; route_localnet on both ends lets the root namespace deliver it to a
 * server bound on 127.0.0.1 (or any local address) and route the reply back.
 * A namespace lives as long as its thread: a killed strata-load leaves nothing. */
#ifndef STRATA_LOAD_NETNS_H
#define STRATA_LOAD_NETNS_H

#include <stddef.h>

/* A /24 block B of 10.213.B.0 not used by another strata-load, or -1. */
int netns_pick_block(void);

/* Moves the calling thread into a new namespace wired as above. */
int netns_enter(int block, int idx, char *err, size_t errlen);

/* Deletes the host ends of clients 0..n-1 that still exist. */
void netns_cleanup(int block, int n);

#endif
