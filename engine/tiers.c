/* tiers.c — wires the L2ARC, the ZIL and the device models into the running
 * engine (see tiers.h): set-up and replay at start, stable writes and COMMIT,
 * the switches `strata-engine ctl` sets (ctl.c), and their stats. */
#include "tiers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devmodel.h"
#include "engine.h"
#include "l2arc.h"
#include "nfsstat.h"
#include "strata_probes.h"
#include "util.h"
#include "zil.h"

/* COMMIT of more dirty data than this goes to a txg sync, not the log. */
#define COMMIT_LOG_MAX (2ull << 20)

static struct {
	struct l2arc *l2;
	struct zil *zil;
	struct devmodel *vdev_model, *cache_model, *log_model;
	char log_where[300];
	uint64_t delay_l2arc, delay_pool, delay_zil;
} tg;

/* "PATH[:SIZE]" -> path, size (0 when absent). */
static int split_dev(const char *spec, char *path, size_t psz, uint64_t *size)
{
	const char *colon = strrchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
	*size = 0;
	if (!n || n >= psz || (colon && parse_size(colon + 1, size)))
		return -1;
	memcpy(path, spec, n);
	path[n] = 0;
	return 0;
}

static int model(const char *spec, uint64_t span, struct devmodel **out, const char *what,
		 char *err, size_t errsz)
{
	char why[256];
	if (!spec)
		return 0;
	if (devmodel_parse(spec, span, out, why, sizeof(why))) {
		snprintf(err, errsz, "bad %s model '%s': %s", what, spec, why);
		return -1;
	}
	return 0;
}

/* Replay: one logged write applied to the open txg. */
static int replay_write(void *ctx, const struct zil_record *rec)
{
	struct objset *os = ctx;
	struct object *o = obj_get(os, rec->objid);
	if (!o)
		return 0; /* removed since: nothing to restore */
	struct io_acct acct = { 0 };
	pthread_rwlock_rdlock(&os->txg_lock);
	pthread_rwlock_wrlock(&o->lock);
	int err = o->type == OBJ_REG && !o->removed
		? obj_write(os, o, rec->offset, rec->length, rec->data, &acct) : 0;
	pthread_rwlock_unlock(&o->lock);
	pthread_rwlock_unlock(&os->txg_lock);
	obj_put(o);
	return err;
}

static void on_synced(void *ctx, uint64_t txg)
{
	zil_checkpoint(ctx, txg);
}

static int setup_log(const struct tier_opts *o, char *err, size_t errsz)
{
	struct engine *e = &g_engine;
	char path[256], why[256];
	uint64_t off = 0, size = 0;
	if (o->no_zil)
		return 0;
	if (o->log) {
		uint64_t create;
		if (split_dev(o->log, path, sizeof(path), &create)) {
			snprintf(err, errsz, "bad --log '%s' (PATH[:SIZE])", o->log);
			return -1;
		}
		if (create && access(path, F_OK)) { /* a missing file is created at SIZE */
			FILE *f = fopen(path, "w");
			if (!f || ftruncate(fileno(f), (off_t)create)) {
				snprintf(err, errsz, "cannot create log device %s: %s", path, strerror(errno));
				if (f)
					fclose(f);
				return -1;
			}
			fclose(f);
		}
		snprintf(tg.log_where, sizeof(tg.log_where), "slog %s", path);
		tg.log_where[strcspn(tg.log_where, "\"\\")] = 0; /* shown inside a JSON string */
	} else if (e->pool->log_size) {
		snprintf(path, sizeof(path), "%s", e->pool->vdevs[0].path);
		off = e->pool->log_offset;
		size = e->pool->log_size;
		snprintf(tg.log_where, sizeof(tg.log_where), "pool %s", path);
		tg.log_where[strcspn(tg.log_where, "\"\\")] = 0;
	} else {
		return 0; /* a pool made without a log region: stable writes sync the txg */
	}
	tg.zil = zil_open(path, off, size, e->pool->guid, why, sizeof(why));
	if (!tg.zil) {
		snprintf(err, errsz, "intent log: %s", why);
		return -1;
	}
	/* a SLOG has a model of its own; the pool's log region shares vdev 0's (its spindle) */
	if (o->log && model(o->log_model, 1ull << 30, &tg.log_model, "log", err, errsz))
		return -1;
	zil_set_model(tg.zil, o->log ? tg.log_model : e->pool->vdevs[0].model);
	uint64_t synced = e->txg.synced_txg;
	int n = zil_replay(tg.zil, synced, replay_write, e->os);
	if (n < 0) {
		snprintf(err, errsz, "intent log replay failed: %s", strerror(-n));
		return -1;
	}
	if (n)
		fprintf(stderr, "strata-engine serve: replayed %d logged write%s\n", n, n == 1 ? "" : "s");
	e->txg.synced_fn = on_synced;
	e->txg.synced_ctx = tg.zil;
	return 0;
}

static int setup_cache(const struct tier_opts *o, char *err, size_t errsz)
{
	struct engine *e = &g_engine;
	if (!o->ncache)
		return 0;
	struct l2arc_config cfg;
	l2arc_config_defaults(&cfg);
	if (o->l2arc_write_max)
		cfg.write_max = o->l2arc_write_max;
	cfg.compress = !o->l2arc_nocompress;
	tg.l2 = l2arc_create(&cfg);
	uint64_t span = 0;
	for (int i = 0; i < o->ncache; i++) {
		char path[256], why[256];
		uint64_t size;
		if (split_dev(o->cache[i], path, sizeof(path), &size)) {
			snprintf(err, errsz, "bad --cache '%s' (PATH[:SIZE])", o->cache[i]);
			return -1;
		}
		if (l2arc_add_device(tg.l2, path, size ? size : 1ull << 30, why, sizeof(why))) {
			snprintf(err, errsz, "cache device %s: %s", path, why);
			return -1;
		}
		span = size > span ? size : span;
	}
	if (model(o->cache_model, span ? span : 1ull << 30, &tg.cache_model, "cache", err, errsz))
		return -1;
	l2arc_set_model(tg.l2, tg.cache_model);
	l2arc_set_enabled(tg.l2, !o->l2arc_off);
	arc_set_evict_hook(e->arc, l2arc_arc_evict_hook, tg.l2);
	e->os->l2arc = tg.l2;
	return 0;
}

int tiers_setup(const struct tier_opts *o, char *err, size_t errsz)
{
	struct pool *p = g_engine.pool;
	for (uint32_t i = 0; i < p->nvdevs; i++) /* one model each: every disk its own spindle */
		if (model(o->vdev_model, p->vdevs[i].size, &p->vdevs[i].model, "vdev", err, errsz))
			return -1;
	return setup_cache(o, err, errsz) || setup_log(o, err, errsz) ? -1 : 0;
}

void tiers_shutdown(void)
{
	/* Stops feeding (nothing half-written at exit); the devices stay open for
	 * a stats request still in flight and close with the process. */
	if (tg.l2)
		l2arc_set_enabled(tg.l2, false);
}

bool tiers_log_write(uint64_t objid, uint64_t off, uint32_t len, const void *data, uint64_t txg,
		     struct io_acct *acct)
{
	struct zil_record rec = { .objid = objid, .offset = off, .txg = txg, .length = len, .data = data };
	if (!tg.zil || zil_commit(tg.zil, &rec, 1))
		return false;
	acct->tiers |= STRATA_TIER_ZIL;
	return true;
}

struct log_ctx { const struct object *o; uint64_t txg; struct zil_record *recs; uint32_t n; };

static int log_record(uint64_t blkid, struct blkrec *r, void *arg)
{
	struct log_ctx *c = arg;
	uint64_t start = blkid * c->o->recordsize;
	if (!r->dirty || start >= c->o->size || c->n == c->o->ndirty)
		return 0;
	uint64_t left = c->o->size - start;
	c->recs[c->n++] = (struct zil_record){ .objid = c->o->id, .offset = start, .txg = c->txg,
		.length = (uint32_t)(left < c->o->recordsize ? left : c->o->recordsize), .data = r->dirty };
	return 0;
}

/* Logs o's dirty records (caller holds o->lock shared); 0 or -errno. */
static int log_dirty(struct object *o, uint64_t txg)
{
	if (!o->ndirty)
		return 0;
	if (o->ndirty * (uint64_t)o->recordsize > COMMIT_LOG_MAX)
		return -E2BIG;
	struct log_ctx c = { o, txg, xcalloc(o->ndirty, sizeof(*c.recs)), 0 };
	blkmap_walk(&o->recs, 0, log_record, &c);
	int err = zil_commit(tg.zil, c.recs, c.n);
	free(c.recs);
	return err;
}

uint32_t tiers_commit(struct object *o, struct io_acct *acct)
{
	struct objset *os = g_engine.os;
	/* txg_lock shared: no sync is in its pass over the objects, so every record
	 * of o is either still dirty (logged here) or in a txg <= open - 1 */
	pthread_rwlock_rdlock(&os->txg_lock);
	pthread_rwlock_rdlock(&o->lock);
	uint64_t open = __atomic_load_n(&os->open_txg, __ATOMIC_ACQUIRE);
	uint64_t dirty_txg = o->dirty_txg;
	int err = tg.zil ? log_dirty(o, open) : -ENODEV;
	pthread_rwlock_unlock(&o->lock);
	pthread_rwlock_unlock(&os->txg_lock);
	if (err) {
		acct->tiers |= STRATA_TIER_POOL;
		return txg_wait_synced(&g_engine.txg, dirty_txg) ? NFS3ERR_IO : NFS3_OK;
	}
	acct->tiers |= STRATA_TIER_ZIL;
	/* Records a sync in flight took off the dirty list are durable when it ends. */
	return txg_wait_synced(&g_engine.txg, open - 1 < dirty_txg ? open - 1 : dirty_txg)
		? NFS3ERR_IO : NFS3_OK;
}

/* ---- switches ---- */

struct l2arc *tiers_l2arc(void)
{
	return tg.l2;
}

int tiers_set_delay(const char *tier, uint64_t ns)
{
	if (!strcmp(tier, "l2arc")) {
		if (!tg.l2)
			return -1;
		l2arc_set_read_delay(tg.l2, ns);
		tg.delay_l2arc = ns;
	} else if (!strcmp(tier, "zil")) {
		if (!tg.zil)
			return -1;
		zil_set_write_delay(tg.zil, ns);
		tg.delay_zil = ns;
	} else if (!strcmp(tier, "pool")) {
		__atomic_store_n(&g_engine.pool->read_delay_ns, ns, __ATOMIC_RELAXED);
		tg.delay_pool = ns;
	} else {
		return -2;
	}
	return 0;
}

/* ---- stats ---- */

static void put_fields(char **s, size_t *len, const char *name, const char *lead, const void *st,
		       const struct tier_stat_field *f, size_t nf)
{
	FILE *m = open_memstream(s, len);
	fprintf(m, "\"%s\":{%s", name, lead);
	for (size_t i = 0; i < nf; i++)
		fprintf(m, "%s\"%s\":%llu", i ? "," : "", f[i].name,
			(unsigned long long)tier_stat_value(st, &f[i]));
	fprintf(m, "}");
	fclose(m);
}

char *tiers_stats_json(uint64_t nfs_delay_ns)
{
	char *parts[5] = { 0 }, *s;
	size_t len, np = 0;
	if (tg.l2) {
		struct l2arc_stats st;
		l2arc_get_stats(tg.l2, &st);
		char lead[96]; /* the gauges l2arc.size and l2arc.asize */
		snprintf(lead, sizeof(lead), "\"size\":%llu,\"asize\":%llu,", (unsigned long long)st.l2_size,
			 (unsigned long long)st.l2_asize);
		put_fields(&parts[np++], &len, "l2arc", lead, &st, l2arc_stat_fields, l2arc_stat_nfields);
	}
	if (tg.zil) {
		struct zil_stats st;
		zil_get_stats(tg.zil, &st);
		put_fields(&parts[np++], &len, "zil", "", &st, zil_stat_fields, zil_stat_nfields);
	}
	struct pool *p = g_engine.pool;
	struct devmodel_stats vd = { 0 };
	for (uint32_t i = 0; i < p->nvdevs && p->vdevs[i].model; i++) { /* the pool's vdevs, summed */
		struct devmodel_stats st;
		devmodel_get_stats(p->vdevs[i].model, &st);
		for (size_t f = 0; f < devmodel_stat_nfields; f++)
			*(uint64_t *)((char *)&vd + devmodel_stat_fields[f].off) +=
				tier_stat_value(&st, &devmodel_stat_fields[f]);
	}
	if (p->vdevs[0].model)
		put_fields(&parts[np++], &len, "vdev_model", "", &vd, devmodel_stat_fields, devmodel_stat_nfields);
	struct { const char *name; struct devmodel *m; } models[] = {
		{ "cache_model", tg.cache_model }, { "log_model", tg.log_model },
	};
	for (size_t i = 0; i < 2; i++) {
		if (!models[i].m)
			continue;
		struct devmodel_stats st;
		devmodel_get_stats(models[i].m, &st);
		put_fields(&parts[np++], &len, models[i].name, "", &st, devmodel_stat_fields, devmodel_stat_nfields);
	}
	FILE *m = open_memstream(&s, &len);
	fprintf(m, "\"tiers\":{\"l2arc\":%s,\"zil\":\"%s\",\"inject_delay_ns\":{\"l2arc\":%llu,\"zil\":%llu,"
		"\"pool\":%llu,\"nfs\":%llu}}", tg.l2 ? (l2arc_enabled(tg.l2) ? "\"on\"" : "\"off\"") : "null",
		tg.zil ? tg.log_where : "none", (unsigned long long)tg.delay_l2arc,
		(unsigned long long)tg.delay_zil, (unsigned long long)tg.delay_pool,
		(unsigned long long)nfs_delay_ns);
	for (size_t i = 0; i < np; i++) {
		fprintf(m, ",%s", parts[i]);
		free(parts[i]);
	}
	fclose(m);
	return s;
}
