/* wire.h — the wire layer's collector side: loads bpf/wire.bpf.c, keeps its TC programs
 * attached (ingress and egress; tcx links, else clsact filters) on the chosen interfaces
 * as interfaces come and go (rtnetlink), and reads the program's stream counters. */
#ifndef STRATA_COLLECT_WIRE_H
#define STRATA_COLLECT_WIRE_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wire_config.h"
#include "wire_ports.h"
#include "wire_tc.h"
#include "wire_rpc.h"

#define WIRE_ATTACH_MAX   WIRE_IFACES_MAX
#define WIRE_PORTS_RECHECK_MS 3000 /* how often the local rpcbind is asked again */

struct layer;

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

/* The wire layer itself is LAYER_OPS(WIRE), collectors/layers/wire.c. */
#endif
