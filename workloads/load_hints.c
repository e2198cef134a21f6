/* load_hints.c — the advice of load_hints.h, one place for the export options of the
 * servers strata-load is pointed at (the strata engine, nfsd, nfs-ganesha). */
#include "load_hints.h"

#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>
#include "load_stats.h"

const char *load_hint_status(int proc, int status, bool netns)
{
	if (proc == LOAD_PROC_MNT && status == MNT3ERR_ACCES)
		return netns
		       ? "; the export refuses the --netns clients' addresses 10.213.0.0/16: allow them "
			 "(strata-engine: --export 'NAME:allow=127.0.0.0/8,allow=10.213.0.0/16'; nfsd: "
			 "'/PATH 10.213.0.0/16(rw)' in /etc/exports; ganesha: Clients = 10.213.0.0/16)"
		       : "; the export refuses this client's address: allow it (strata-engine: "
			 "--export 'NAME:allow=ADDR/PREFIX'; nfsd: /etc/exports; ganesha: Clients =)";
	if (status == NFS3ERR_ACCES && (proc == NFS3_CREATE || proc == NFS3_SETATTR || proc == NFS3_WRITE))
		return "; the export's root is not writable by the load's uids 10000+: make it so "
		       "(strata-engine: --export 'NAME:mode=1777'; nfsd or ganesha: chmod 1777 the "
		       "exported directory) or drop --setup and create the files another way";
	return "";
}

const char *load_hint_portmap(void)
{
	return "; without rpcbind on that host give the ports: --nfsport P --mountport Q "
	       "(strata-engine prints them at start: 'listening nfs=ADDR:P mount=ADDR:Q')";
}
