/* wire_ports_test.c — collectors/wire_ports.c's portmapper DUMP reply parser on crafted
 * replies (expected ports), every truncation of a good one, and 200,000 mutated ones
 * (the result stays in bounds; run under ASan with `make fuzz-smoke`'s wire_ports target). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wire_ports.h"

static int failures;

#define CHECK(cond, ...) do { if (!(cond)) { failures++; printf("FAIL %s:%d ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); } } while (0)

struct msg {
	uint8_t b[4096];
	size_t n;
};

static void put(struct msg *m, uint32_t v)
{
	m->b[m->n++] = v >> 24;
	m->b[m->n++] = v >> 16;
	m->b[m->n++] = v >> 8;
	m->b[m->n++] = v;
}

static void head(struct msg *m, uint32_t xid, uint32_t verf_len)
{
	m->n = 0;
	put(m, xid);
	put(m, 1); /* REPLY */
	put(m, 0); /* MSG_ACCEPTED */
	put(m, 0); /* verifier flavor */
	put(m, verf_len);
	for (uint32_t i = 0; i < (verf_len + 3) / 4; i++)
		put(m, 0xabababab);
	put(m, 0); /* SUCCESS */
}

static void mapping(struct msg *m, uint32_t prog, uint32_t vers, uint32_t prot, uint32_t port)
{
	put(m, 1);
	put(m, prog);
	put(m, vers);
	put(m, prot);
	put(m, port);
}

/* What rpcbind answers with ganesha registered (rpcinfo -p), plus entries to skip. */
static void typical(struct msg *m, uint32_t xid)
{
	head(m, xid, 0);
	mapping(m, 100000, 4, 6, 111);
	mapping(m, 100000, 2, 17, 111);
	mapping(m, 100003, 3, 6, 2049);
	mapping(m, 100003, 4, 6, 2049);
	mapping(m, 100005, 1, 6, 20048);
	mapping(m, 100005, 3, 6, 20048);
	mapping(m, 100005, 3, 17, 20049); /* UDP: not followed */
	mapping(m, 100021, 4, 6, 32803); /* NLM */
	mapping(m, 100003, 3, 6, 0);     /* no port */
	mapping(m, 100005, 3, 6, 70000); /* not a port */
	put(m, 0);
}

int main(void)
{
	struct msg m;
	uint16_t ports[WIRE_PORTS_FOUND_MAX];
	int n;

	typical(&m, 77);
	n = wire_ports_parse(m.b, m.n, 77, ports, WIRE_PORTS_FOUND_MAX);
	CHECK(n == 2 && ports[0] == 2049 && ports[1] == 20048, "typical reply: n=%d", n);
	CHECK(wire_ports_parse(m.b, m.n, 78, ports, WIRE_PORTS_FOUND_MAX) == -1, "another xid");
	for (size_t len = 0; len < m.n; len++)
		CHECK(wire_ports_parse(m.b, len, 77, ports, WIRE_PORTS_FOUND_MAX) == -1, "truncated to %zu", len);
	m.b[m.n++] = 0;
	CHECK(wire_ports_parse(m.b, m.n, 77, ports, WIRE_PORTS_FOUND_MAX) == -1, "trailing byte");

	head(&m, 5, 400);
	mapping(&m, 100003, 4, 6, 2049);
	put(&m, 0);
	CHECK(wire_ports_parse(m.b, m.n, 5, ports, 4) == 1, "a 400-byte verifier is skipped");
	head(&m, 5, 401);
	put(&m, 0);
	CHECK(wire_ports_parse(m.b, m.n, 5, ports, 4) == -1, "a verifier over 400 bytes");

	head(&m, 6, 0);
	mapping(&m, 100003, 3, 6, 2049);
	put(&m, 2); /* a boolean that is neither */
	CHECK(wire_ports_parse(m.b, m.n, 6, ports, 4) == -1, "value_follows 2");

	head(&m, 7, 0);
	m.b[11] = 1; /* MSG_DENIED */
	put(&m, 0);
	CHECK(wire_ports_parse(m.b, m.n, 7, ports, 4) == -1, "denied");

	head(&m, 8, 0);
	for (uint32_t p = 1000; p < 1000 + 2 * WIRE_PORTS_FOUND_MAX; p++)
		mapping(&m, 100005, 3, 6, p);
	put(&m, 0);
	n = wire_ports_parse(m.b, m.n, 8, ports, WIRE_PORTS_FOUND_MAX);
	CHECK(n == WIRE_PORTS_FOUND_MAX && ports[n - 1] == 1000 + WIRE_PORTS_FOUND_MAX - 1, "capped: n=%d", n);

	srand(1433);
	for (int round = 0; round < 200000; round++) {
		typical(&m, 9);
		for (int k = rand() % 6; k >= 0; k--)
			m.b[rand() % m.n] = (uint8_t)rand();
		if (rand() % 4 == 0)
			m.n = (size_t)rand() % (m.n + 1);
		n = wire_ports_parse(m.b, m.n, 9, ports, 3);
		CHECK(n >= -1 && n <= 3, "mutated: n=%d", n);
		for (int i = 0; i < n; i++)
			CHECK(ports[i] != 0, "port 0 returned");
	}
	printf("wire_ports_test: %s\n", failures ? "FAILED" : "ok");
	return failures != 0;
}
