/* wire_ports.h — the server ports the local rpcbind maps NFS and MOUNT to: the wire
 * layer follows them besides --wire-port (collectors/wire_ports.c). */
#ifndef STRATA_COLLECT_WIRE_PORTS_H
#define STRATA_COLLECT_WIRE_PORTS_H

#include <stddef.h>
#include <stdint.h>

#define WIRE_PORTS_FOUND_MAX 32   /* distinct NFS / MOUNT TCP ports taken from one reply */
#define WIRE_PORTS_REPLY_MAX 65536 /* a longer portmapper reply is refused */

/* The distinct TCP ports of NFS (100003) and MOUNT (100005) in a portmapper v2 DUMP
 * reply (RFC 1833: an RPC reply, record marker removed, whose xid is xid), at most max
 * in ports; the number found, or -1 if the bytes are not such a reply. */
int wire_ports_parse(const uint8_t *reply, size_t len, uint32_t xid, uint16_t *ports, int max);

/* Asks the rpcbind at 127.0.0.1:111 over TCP (waiting at most timeout_ms in all); the
 * number of ports found as wire_ports_parse, or -1 (no rpcbind, or no valid reply). */
int wire_ports_query(uint16_t *ports, int max, int timeout_ms);

#endif
