/* rpcbind.h — registration with the local rpcbind (portmapper v2 over TCP
 * to 127.0.0.1:111), when it runs; the engine works without it. */
#ifndef ENGINE_RPCBIND_H
#define ENGINE_RPCBIND_H

#include <stdint.h>

/* PMAPPROC_SET for NFS v3 and MOUNT v3 over TCP; returns how many succeeded. */
int rpcbind_register(uint16_t nfs_port, uint16_t mount_port);
/* PMAPPROC_UNSET for what rpcbind_register set. */
void rpcbind_unregister(void);

#endif
