/* privileges.c — effective capabilities from /proc/self/status (CapEff). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "privileges.h"

#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

bool privileges_ok(char *why, size_t n)
{
	uint64_t eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (f) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "CapEff: %" SCNx64, &eff) == 1)
				break;
		fclose(f);
	}
	if ((eff >> CAP_SYS_ADMIN_BIT & 1) || ((eff >> CAP_BPF_BIT & 1) && (eff >> CAP_PERFMON_BIT & 1)))
		return true;
	snprintf(why, n, "needs root (or CAP_BPF and CAP_PERFMON) to load BPF programs and attach probes");
	return false;
}
