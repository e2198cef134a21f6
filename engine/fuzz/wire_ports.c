/* wire_ports.c (fuzz) — libFuzzer harness for the collector's portmapper DUMP reply
 * parser (collectors/wire_ports.c): an input is one reply record body, its first four
 * bytes taken as the xid expected (so inputs get past the xid check). Oracle beyond the
 * sanitizers: the result is -1 or at most the ports room, and no port returned is 0. */
#include <stdint.h>
#include <stdlib.h>

#include "wire_ports.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t ports[4];
	uint32_t xid;
	int n;

	if (size < 4)
		return 0;
	xid = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 | (uint32_t)data[2] << 8 | data[3];
	n = wire_ports_parse(data, size, xid, ports, 4);
	if (n < -1 || n > 4)
		abort();
	for (int i = 0; i < n; i++)
		if (ports[i] == 0)
			abort();
	return 0;
}
