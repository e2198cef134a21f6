/* load_pair.c — the paired randread run of strata-load (load_pair.h). */
#include "load_pair.h"

#include <errno.h>
#include <time.h>

#include "load_pattern.h"

#define REPLY_TIMEOUT_S 30.0
#define MAX_SLEEP_NS 100000000ull /* look at the stop flag at least every 100 ms */

static uint64_t pair_rng(struct load_client *c)
{
	c->rng += 0x9E3779B97F4A7C15ull;
	return splitmix64(c->rng);
}

static void on_pair_read(struct call *call, int stat, void *res)
{
	READ3res *r = res;

	if (stat == NFS3_OK)
		call->ph->bytes_read += r->READ3res_u.resok.count;
}

/* One READ to one side, waited for; -1 when that side broke. */
static int read_one(struct load_client *c, uint32_t f, uint64_t off)
{
	if (issue_read(c, &c->run, &c->files[f].fh, off, (uint32_t)c->o->io_size,
		       on_pair_read, NULL) < 0)
		return -1;
	return client_wait_inflight(c, 0, REPLY_TIMEOUT_S);
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { (time_t)(t_ns / 1000000000ull), (long)(t_ns % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int run_pair(struct load_client *c)
{
	struct load_client *b = c->peer;
	const struct load_opts *o = c->o;
	uint64_t end = c->sh->run_end_ns, blocks = o->file_size / o->io_size;
	uint64_t token_ns = o->rate > 0 ? (uint64_t)(1e9 * o->clients / o->rate) : 0;
	uint64_t next = c->sh->run_start_ns;

	c->rng = o->seed * 0xD1B54A32D192ED03ull + (uint64_t)c->idx + 1;
	for (;;) {
		uint64_t now = clock_mono_ns();

		if (now >= end || atomic_load(&c->sh->abort) || *c->sh->stop)
			break;
		if (token_ns) {
			if (now < next) {
				uint64_t wake = next - now < MAX_SLEEP_NS ? next : now + MAX_SLEEP_NS;

				sleep_until(wake < end ? wake : end);
				continue;
			}
			next += token_ns;
			if (next + 1000000000ull < now) /* fell behind: no burst */
				next = now;
		}
		uint32_t f = (uint32_t)(pair_rng(c) % o->files);
		uint64_t off = (pair_rng(c) % blocks) * o->io_size;
		bool b_first = pair_rng(c) & 1;
		struct load_client *first = b_first ? b : c, *second = b_first ? c : b;

		if (read_one(first, f, off) < 0 || read_one(second, f, off) < 0)
			break;
	}
	return c->broken || b->broken ? -1 : 0;
}
