/* load_run.c — the run loop and the profiles (workloads/PROFILES.md):
 * randread, seqread, write, mixed, stepup, seed-l2arc. One slot = one stream
 * of dependent requests with at most one RPC in flight. */
#include "load_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load_pattern.h"
#include "load_workingset.h"

#define DRAIN_TIMEOUT_S 30.0
#define SEED_L2ARC_BLOCKS 8
#define MAX_WAIT_NS 100000000ull /* wake at least every 100 ms */

static uint64_t rng_next(struct load_client *c)
{
	c->rng += 0x9E3779B97F4A7C15ull;
	return splitmix64(c->rng);
}

static uint64_t rng_below(struct load_client *c, uint64_t n)
{
	return n ? rng_next(c) % n : 0;
}

int stepup_threads(const struct load_opts *o, uint64_t t_ns)
{
	double n = 1 + floor((double)t_ns / 1e9 / o->step_interval);

	return n < o->threads ? (int)n : o->threads;
}

static int active_slots(const struct load_client *c, uint64_t now)
{
	if (c->o->profile == PROFILE_STEPUP)
		return stepup_threads(c->o, now - c->sh->run_start_ns);
	return c->o->threads;
}

/* ---- completions ---- */

static void on_read(struct call *call, int stat, void *res)
{
	struct slot *s = call->arg;
	READ3res *r = res;

	s->busy = false;
	if (stat == NFS3_OK)
		call->ph->bytes_read += r->READ3res_u.resok.count;
}

static void on_write(struct call *call, int stat, void *res)
{
	struct slot *s = call->arg;
	WRITE3res *w = res;

	s->busy = false;
	if (stat != NFS3_OK)
		return;
	call->ph->bytes_written += w->WRITE3res_u.resok.count;
	if (w->WRITE3res_u.resok.committed == UNSTABLE)
		call->c->dirty[s->file] = 1;
}

static void on_commit(struct call *call, int stat, void *res)
{
	(void)stat;
	(void)res;
	if (call->arg)
		((struct slot *)call->arg)->busy = false;
}

static void on_seed_lookup(struct call *call, int stat, void *res)
{
	struct slot *s = call->arg;
	LOOKUP3res *l = res;
	nfs_fh3 *fh = &l->LOOKUP3res_u.resok.object;

	s->busy = false;
	if (stat != NFS3_OK || fh->data.data_len == 0 || fh->data.data_len > NFS3_FHSIZE)
		return; /* pick another file next time */
	s->fh.len = fh->data.data_len;
	memcpy(s->fh.data, fh->data.data_val, s->fh.len);
	s->state = 1;
}

/* ---- one step of a slot ---- */

static uint32_t io_len(const struct load_client *c, uint64_t off)
{
	uint64_t left = c->o->file_size - off;

	return (uint32_t)(left < c->o->io_size ? left : c->o->io_size);
}

static uint64_t random_offset(struct load_client *c)
{
	return rng_below(c, c->o->file_size / c->o->io_size) * c->o->io_size;
}

static int issue_random_read(struct load_client *c, struct slot *s)
{
	uint32_t f = (uint32_t)rng_below(c, c->o->files);

	return issue_read(c, &c->run, &c->files[f].fh, random_offset(c),
			  (uint32_t)c->o->io_size, on_read, s);
}

static int issue_slot_write(struct load_client *c, struct slot *s, uint32_t f, uint64_t off)
{
	uint32_t n = io_len(c, off);

	s->file = f; /* for on_write's dirty mark */
	pattern_fill(s->buf, n, c->o->seed, f, off);
	return issue_write(c, &c->run, &c->files[f].fh, off, n, c->o->stable, s->buf, false,
			   on_write, s);
}

static int step_seqread(struct load_client *c, struct slot *s)
{
	int rc = issue_read(c, &c->run, &c->files[s->file].fh, s->off, io_len(c, s->off),
			    on_read, s);

	s->off += c->o->io_size;
	if (s->off >= c->o->file_size) {
		s->off = 0;
		s->file = (s->file + 1) % c->o->files;
	}
	return rc;
}

static int step_write(struct load_client *c, struct slot *s)
{
	if (s->commit_file >= 0) { /* this slot finished a pass over a file */
		int f = s->commit_file;

		s->commit_file = -1;
		c->dirty[f] = 0;
		return issue_commit(c, &c->run, &c->files[f].fh, on_commit, s);
	}
	uint32_t f = c->wfile;
	uint64_t off = c->woff;

	c->woff += c->o->io_size;
	if (c->woff >= c->o->file_size) {
		c->woff = 0;
		c->wfile = (c->wfile + 1) % c->o->files;
		if (c->o->stable == STABLE_UNSTABLE)
			s->commit_file = (int)f;
	}
	return issue_slot_write(c, s, f, off);
}

static int step_mixed(struct load_client *c, struct slot *s)
{
	if ((int)rng_below(c, 100) < c->o->read_pct)
		return issue_random_read(c, s);
	return issue_slot_write(c, s, (uint32_t)rng_below(c, c->o->files), random_offset(c));
}

static int step_seed_l2arc(struct load_client *c, struct slot *s)
{
	uint64_t blocks = c->o->file_size / c->o->io_size;
	uint64_t run = blocks < SEED_L2ARC_BLOCKS ? blocks : SEED_L2ARC_BLOCKS;

	if (s->state == 0) { /* "open": LOOKUP a random file by name */
		char name[FILE_NAME_MAX];

		s->file = (uint32_t)rng_below(c, c->o->files);
		s->base = rng_below(c, blocks - run + 1) * c->o->io_size;
		workingset_name(s->file, name);
		return issue_lookup(c, &c->run, &c->root, name, false, on_seed_lookup, s);
	}
	uint64_t off = s->base + (uint64_t)(s->state - 1) * c->o->io_size;

	s->state = (uint64_t)s->state >= run ? 0 : s->state + 1; /* "close" after the run */
	return issue_read(c, &c->run, &s->fh, off, (uint32_t)c->o->io_size, on_read, s);
}

static int step(struct load_client *c, struct slot *s)
{
	s->busy = true;
	switch (c->o->profile) {
	case PROFILE_RANDREAD:
	case PROFILE_STEPUP: return issue_random_read(c, s);
	case PROFILE_SEQREAD: return step_seqread(c, s);
	case PROFILE_WRITE: return step_write(c, s);
	case PROFILE_MIXED: return step_mixed(c, s);
	case PROFILE_SEED_L2ARC: return step_seed_l2arc(c, s);
	case PROFILE_NONE: break;
	}
	return -1;
}

/* Starts a step on every idle active slot the rate allows; returns the time
 * until the next token when the rate is what holds a slot back, else 0. */
static uint64_t top_up(struct load_client *c, uint64_t now)
{
	int active = active_slots(c, now);

	for (int i = 0; i < active && !c->broken; i++) {
		struct slot *s = &c->slots[i];

		if (s->busy)
			continue;
		if (c->token_ns) {
			if (now < c->next_token_ns)
				return c->next_token_ns - now;
			c->next_token_ns += c->token_ns;
			if (c->next_token_ns + 1000000000ull < now) /* fell behind: no burst */
				c->next_token_ns = now;
		}
		if (step(c, s) < 0)
			s->busy = false;
	}
	return 0;
}

/* After the run: COMMIT every file that still holds unstable writes. */
static int commit_dirty(struct load_client *c)
{
	int n = 0;

	for (uint32_t f = 0; f < c->o->files && !c->broken; f++) {
		if (!c->dirty[f])
			continue;
		c->dirty[f] = 0;
		if (issue_commit(c, &c->run, &c->files[f].fh, on_commit, NULL) == 0)
			n++;
	}
	return n;
}

static int init_slots(struct load_client *c)
{
	const struct load_opts *o = c->o;
	bool writes = o->profile == PROFILE_WRITE || o->profile == PROFILE_MIXED;

	c->slots = calloc((size_t)o->threads, sizeof(*c->slots));
	c->dirty = calloc(o->files, 1);
	if (!c->slots || !c->dirty)
		return -1;
	for (int i = 0; i < o->threads; i++) {
		struct slot *s = &c->slots[i];

		s->idx = i;
		s->commit_file = -1;
		s->file = (uint32_t)(((uint64_t)c->idx * (uint64_t)o->threads + (uint64_t)i) % o->files);
		if (writes && !(s->buf = malloc(o->io_size)))
			return -1;
	}
	c->wfile = (uint32_t)c->idx % o->files;
	c->rng = o->seed * 0xD1B54A32D192ED03ull + (uint64_t)c->idx + 1;
	if (o->rate > 0)
		c->token_ns = (uint64_t)(1e9 * o->clients / o->rate);
	c->next_token_ns = c->sh->run_start_ns;
	return 0;
}

void run_free(struct load_client *c)
{
	for (int i = 0; c->slots && i < c->o->threads; i++)
		free(c->slots[i].buf);
	free(c->slots);
	free(c->dirty);
	c->slots = NULL;
	c->dirty = NULL;
}

int run_client(struct load_client *c)
{
	uint64_t end = c->sh->run_end_ns;
	bool stopping = false, committed = false;

	if (init_slots(c) < 0) {
		client_fail(c, "out of memory for %d slots", c->o->threads);
		return -1;
	}
	for (;;) {
		uint64_t now = clock_mono_ns(), wait = MAX_WAIT_NS;

		if (!stopping && (now >= end || atomic_load(&c->sh->abort) || *c->sh->stop))
			stopping = true;
		if (!stopping) {
			uint64_t token_wait = top_up(c, now);

			if (token_wait && token_wait < wait)
				wait = token_wait;
			if (end - now < wait)
				wait = end - now;
		} else if (c->inflight == 0) {
			if (committed || commit_dirty(c) == 0)
				break;
			committed = true;
		} else if (now > end + (uint64_t)(DRAIN_TIMEOUT_S * 1e9)) {
			client_fail(c, "%d RPCs unanswered %.0f s after the run", c->inflight,
				    DRAIN_TIMEOUT_S);
			break;
		}
		if (c->broken || client_pump(c, wait) < 0)
			break;
	}
	return c->broken ? -1 : 0;
}

