/* wire.h — the wire layer's collector side: loads bpf/wire.bpf.c, keeps its TC programs
 * attached (ingress and egress; tcx links, else clsact filters) on the chosen interfaces
 * as interfaces come and go (rtnetlink), and reads the program's stream counters. */
#ifndef STRATA_COLLECT_WIRE_H
#define STRATA_COLLECT_WIRE_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wire_ports.h"
#include "wire_rpc.h"

#define WIRE_PATTERNS_MAX 32
#define WIRE_ATTACH_MAX   WIRE_IFACES_MAX
#define WIRE_TC_PRIORITY  0xc057 /* strata's TC filters: this priority, handle = collector pid */
#define WIRE_PORTS_RECHECK_MS 3000 /* how often the local rpcbind is asked again */

struct layer;

/* How the programs hook an interface: tcx links where the kernel has them, else TC clsact
 * filters (auto); or only one of the two. */
enum wire_hook { WIRE_HOOK_AUTO = 0, WIRE_HOOK_TCX, WIRE_HOOK_TC };

/* --wire-iface patterns (fnmatch; none = every interface with an address), --wire-port:
 * ports, and rpcbind (follow the ports the local rpcbind maps NFS and MOUNT to), and
 * --wire-hook. */
struct wire_config {
	const char *ifaces[WIRE_PATTERNS_MAX];
	int nifaces;
	uint16_t ports[WIRE_PORTS_MAX];
	int nports;
	bool rpcbind;
	enum wire_hook hook;
};

struct wire_attachment {
	int ifindex;
	char name[IF_NAMESIZE];
	int link_fd[2];                  /* ingress, egress tcx links; -1 where a TC filter is used */
	uint32_t handle[2], priority[2]; /* ingress, egress TC filters (handle 0: none) */
};

struct wire_state {
	struct wire_config cfg;
	int prog_fd[3];                   /* ingress, egress, loopback (both directions at lo's egress) */
	int l2len_fd, counters_fd;
	uint8_t *l2_table;                /* the program's wire_l2_table (L2 length + 1 by ifindex) */
	uint8_t *port_bits;               /* the program's wire_port_bits (server ports followed) */
	uint16_t found[WIRE_PORTS_FOUND_MAX]; /* NFS and MOUNT ports the local rpcbind maps */
	int nfound;
	long long ports_next_ms;          /* CLOCK_MONOTONIC ms of the next rpcbind query */
	int nl_fd;                        /* rtnetlink link/address events while attached, else -1 */
	struct wire_attachment att[WIRE_ATTACH_MAX];
	int natt;
	char error[256];                  /* the last attach problem, for the status record */
};

/* Loads the program into L (a LAYER_WIRE layer). 0, or a negative errno with a reason in why. */
int wire_load(struct layer *L, const struct wire_config *cfg, unsigned max_keys, char *why, size_t n);
void wire_unload(struct layer *L);

/* Attaches to every chosen interface and follows new ones. 0, or -1 with a message. */
int wire_attach(struct layer *L, char *err, size_t n);
/* Detaches from every interface. */
void wire_detach(struct layer *L);
/* The rtnetlink socket to poll while attached, else -1. */
int wire_event_fd(const struct layer *L);
/* Drains rtnetlink events and, after any (or with rescan), attaches to interfaces
 * that appeared and forgets those gone; with rescan and --wire-port rpcbind, follows
 * the NFS and MOUNT ports the local rpcbind maps (asked every WIRE_PORTS_RECHECK_MS). */
void wire_refresh(struct layer *L, bool rescan);

/* Cumulative stream counters (enum wire_counter), summed over CPUs. */
void wire_counters_read(const struct layer *L, uint64_t out[WIRE_COUNTERS]);
/* Whether the program follows server port port (--wire-port or rpcbind). */
bool wire_port_followed(const struct layer *L, uint16_t port);
/* Names of the counters, as the status record prints them. */
const char *wire_counter_name(int i);

/* Removes the wire filters on ifindex left by strata collectors no longer running
 * (collectors/wire_tc.c); the number removed. */
int wire_tc_reap(int ifindex);

/* A tcx link of prog_fd at ifindex's ingress or egress: its fd, or a negative errno
 * (-EINVAL before Linux 6.6). */
int wire_tcx_attach(int prog_fd, int ifindex, bool egress);

#endif
