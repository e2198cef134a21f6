/* wire_config.h — what the wire layer is told on the command line: the interfaces to
 * hook, the server ports to follow, and how to hook them (collectors/layers/wire.c). */
#ifndef STRATA_COLLECT_WIRE_CONFIG_H
#define STRATA_COLLECT_WIRE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include "wire_rpc.h"

#define WIRE_PATTERNS_MAX 32

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

#endif
