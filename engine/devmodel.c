/* devmodel.c — HDD and SSD latency emulation on top of real I/O (devmodel.h). */
#include "devmodel.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define F(x) TIER_STAT_FIELD(struct devmodel_stats, x)
const struct tier_stat_field devmodel_stat_fields[] = {
	F(dm_ios), F(dm_seeks), F(dm_modeled_ns), F(dm_slept_ns), F(dm_queue_ns),
};
#undef F
const size_t devmodel_stat_nfields = sizeof(devmodel_stat_fields) / sizeof(devmodel_stat_fields[0]);

enum kind { HDD, SSD };

struct devmodel {
	enum kind kind;
	/* hdd */
	double rpm, seek_ns, settle_ns, span;
	pthread_mutex_t spindle;
	uint64_t head;          /* end of the previous I/O (under spindle) */
	int flushed;            /* a cache flush since the previous I/O (under spindle) */
	/* ssd */
	double read_ns, write_ns, jitter;
	unsigned channels;
	sem_t chan;
	/* both */
	double rate;            /* bytes per second */
	uint64_t rng;           /* atomic counter for the random stream */
	int64_t oversleep_ns;   /* low estimate of wake-up lateness, slept less by it */
	struct devmodel_stats st;
};

/* Uniform in [0, 1), thread-safe (splitmix64 over an atomic counter). */
static double uniform(struct devmodel *m)
{
	uint64_t x = __atomic_add_fetch(&m->rng, 0x9E3779B97F4A7C15ull, __ATOMIC_RELAXED);
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	x ^= x >> 31;
	return (double)(x >> 11) * 0x1.0p-53;
}

/* The default 50 us timer slack would blur the SSD band: ask for 1 us
 * (once per thread that services modelled I/O). */
static void sleep_until(uint64_t deadline_ns)
{
	static __thread int slack_set;
	if (!slack_set) {
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
		slack_set = 1;
	}
	struct timespec ts = { (time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ---- parsing ---- */

static int parse_num(const char *s, double *v, const char **rest)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	if (end == s || errno || !isfinite(*v) || *v < 0)
		return -1;
	*rest = end;
	return 0;
}

static int parse_duration(const char *s, double *ns)
{
	const char *u;
	double v;
	if (parse_num(s, &v, &u))
		return -1;
	static const struct { const char *u; double mul; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 } };
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(u, units[i].u)) {
			*ns = v * units[i].mul;
			return 0;
		}
	}
	return -1;
}

static int parse_bytes(const char *s, double *out)
{
	const char *u;
	double v;
	if (parse_num(s, &v, &u))
		return -1;
	const char *sfx = "kmgt";
	double mul = 1;
	if (*u) {
		const char *p = strchr(sfx, u[0] | 0x20);
		if (!p || u[1])
			return -1;
		for (long i = 0; i <= p - sfx; i++)
			mul *= 1024;
	}
	*out = v * mul;
	return 0;
}

static int parse_fraction(const char *s, double *out)
{
	const char *u;
	double v;
	if (parse_num(s, &v, &u))
		return -1;
	if (!strcmp(u, "%"))
		v /= 100;
	else if (*u)
		return -1;
	if (v >= 1)
		return -1;
	*out = v;
	return 0;
}

static int set_param(struct devmodel *m, const char *key, const char *val)
{
	double v;
	if (m->kind == HDD) {
		if (!strcmp(key, "rpm"))
			return parse_num(val, &m->rpm, &val) || *val || m->rpm < 1 ? -1 : 0;
		if (!strcmp(key, "seek"))
			return parse_duration(val, &m->seek_ns);
		if (!strcmp(key, "settle"))
			return parse_duration(val, &m->settle_ns);
		if (!strcmp(key, "span"))
			return parse_bytes(val, &m->span) || m->span < 1 ? -1 : 0;
	} else {
		if (!strcmp(key, "read"))
			return parse_duration(val, &m->read_ns);
		if (!strcmp(key, "write"))
			return parse_duration(val, &m->write_ns);
		if (!strcmp(key, "jitter"))
			return parse_fraction(val, &m->jitter);
		if (!strcmp(key, "channels")) {
			if (parse_num(val, &v, &val) || *val || v < 1 || v > 1024 || v != floor(v))
				return -1;
			m->channels = (unsigned)v;
			return 0;
		}
	}
	if (!strcmp(key, "rate"))
		return parse_bytes(val, &m->rate) || m->rate < 1 ? -1 : 0;
	return -2;
}

int devmodel_parse(const char *spec, uint64_t span_hint, struct devmodel **out, char *err, size_t errsz)
{
	*out = NULL;
	if (!spec || !*spec || !strcmp(spec, "none"))
		return 0;
	const char *colon = strchr(spec, ':');
	size_t klen = colon ? (size_t)(colon - spec) : strlen(spec);
	struct devmodel *m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errsz, "devmodel: out of memory");
		return -ENOMEM;
	}
	if (klen == 3 && !strncmp(spec, "hdd", 3)) {
		m->kind = HDD;
		m->rpm = 7200;
		m->seek_ns = 2.5e6;
		m->settle_ns = 1e6;
		m->rate = 150.0 * 1024 * 1024;
		m->span = span_hint ? (double)span_hint : 1024.0 * 1024 * 1024 * 1024;
	} else if (klen == 3 && !strncmp(spec, "ssd", 3)) {
		m->kind = SSD;
		m->read_ns = 120e3;
		m->write_ns = 140e3;
		m->jitter = 0.10;
		m->rate = 1000.0 * 1024 * 1024;
		m->channels = 8;
	} else {
		snprintf(err, errsz, "devmodel: unknown model '%.*s' (none, hdd, ssd)", (int)klen, spec);
		free(m);
		return -EINVAL;
	}
	if (colon && !colon[1]) {
		snprintf(err, errsz, "devmodel: '%s' has an empty parameter list", spec);
		free(m);
		return -EINVAL;
	}
	char *params = colon ? strdup(colon + 1) : NULL, *save = NULL;
	for (char *kv = params ? strtok_r(params, ",", &save) : NULL; kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		int rc = eq ? (*eq = 0, set_param(m, kv, eq + 1)) : -2;
		if (rc) {
			if (rc == -2)
				snprintf(err, errsz, "devmodel: unknown %s parameter '%s'",
					 m->kind == HDD ? "hdd" : "ssd", kv);
			else
				snprintf(err, errsz, "devmodel: bad value '%s' for %s", eq + 1, kv);
			free(params);
			free(m);
			return -EINVAL;
		}
	}
	free(params);
	if (m->kind == HDD && m->seek_ns < m->settle_ns) {
		snprintf(err, errsz, "devmodel: hdd seek (average) must be at least settle");
		free(m);
		return -EINVAL;
	}
	if (m->kind == HDD)
		pthread_mutex_init(&m->spindle, NULL);
	else
		sem_init(&m->chan, 0, m->channels);
	m->rng = (uint64_t)clock_mono_ns();
	*out = m;
	return 0;
}

void devmodel_free(struct devmodel *m)
{
	if (!m)
		return;
	if (m->kind == HDD)
		pthread_mutex_destroy(&m->spindle);
	else
		sem_destroy(&m->chan);
	free(m);
}

void devmodel_describe(const struct devmodel *m, char *buf, size_t len)
{
	if (!m)
		snprintf(buf, len, "none");
	else if (m->kind == HDD)
		snprintf(buf, len, "hdd:rpm=%g,seek=%gus,settle=%gus,rate=%gk,span=%gk", m->rpm,
			 m->seek_ns / 1e3, m->settle_ns / 1e3, m->rate / 1024, m->span / 1024);
	else
		snprintf(buf, len, "ssd:read=%gus,write=%gus,jitter=%g%%,rate=%gk,channels=%u",
			 m->read_ns / 1e3, m->write_ns / 1e3, m->jitter * 100, m->rate / 1024, m->channels);
}

/* ---- service ---- */

/* A sequential write after a cache flush (a sync-write log: write, flush,
 * next write) cannot stream: its sector has gone by. */
static double hdd_time(struct devmodel *m, enum devmodel_op op, uint64_t offset, uint32_t size)
{
	uint64_t d = offset > m->head ? offset - m->head : m->head - offset;
	int flushed = m->flushed;
	m->head = offset + size;
	m->flushed = 0;
	double t = (double)size * 1e9 / m->rate;
	if (!d && op == DEVMODEL_WRITE && flushed) {
		t += uniform(m) * 60e9 / m->rpm;
	} else if (d) {
		double full = m->settle_ns + (m->seek_ns - m->settle_ns) * 15.0 / 8.0;
		double frac = (double)d >= m->span ? 1.0 : sqrt((double)d / m->span);
		t += m->settle_ns + (full - m->settle_ns) * frac;
		t += uniform(m) * 60e9 / m->rpm;
		__atomic_add_fetch(&m->st.dm_seeks, 1, __ATOMIC_RELAXED);
	}
	return t;
}

uint64_t devmodel_service(struct devmodel *m, enum devmodel_op op, uint64_t offset, uint32_t size,
			  uint64_t real_elapsed_ns)
{
	if (!m)
		return real_elapsed_ns;
	if (op == DEVMODEL_FLUSH) { /* its real cost only; an HDD's next write cannot stream */
		if (m->kind == HDD) {
			pthread_mutex_lock(&m->spindle);
			m->flushed = 1;
			pthread_mutex_unlock(&m->spindle);
		}
		return real_elapsed_ns;
	}
	uint64_t entry = clock_mono_ns(), got;
	double model;
	if (m->kind == HDD) {
		pthread_mutex_lock(&m->spindle);
		got = clock_mono_ns();
		model = hdd_time(m, op, offset, size);
	} else {
		while (sem_wait(&m->chan) && errno == EINTR)
			;
		got = clock_mono_ns();
		double base = op == DEVMODEL_WRITE ? m->write_ns : m->read_ns;
		model = base * (1.0 + m->jitter * (2.0 * uniform(m) - 1.0)) + (double)size * 1e9 / m->rate;
	}
	uint64_t modeled = (uint64_t)model;
	uint64_t done = got;
	if (modeled > real_elapsed_ns) {
		/* Wake-ups come late by tens of us (more in VMs): aim earlier by
		 * a low estimate of that lateness (drops at once, rises slowly),
		 * so an I/O rarely ends before its modelled time. */
		uint64_t want = got + (modeled - real_elapsed_ns);
		int64_t ov = __atomic_load_n(&m->oversleep_ns, __ATOMIC_RELAXED);
		uint64_t aim = ov > 0 && (uint64_t)ov < want - got ? want - (uint64_t)ov : want;
		sleep_until(aim);
		done = clock_mono_ns();
		int64_t late = (int64_t)(done - aim);
		__atomic_store_n(&m->oversleep_ns, late < ov ? late : ov + (late - ov) / 16, __ATOMIC_RELAXED);
	}
	if (m->kind == HDD)
		pthread_mutex_unlock(&m->spindle);
	else
		sem_post(&m->chan);
	__atomic_add_fetch(&m->st.dm_ios, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->st.dm_modeled_ns, modeled, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->st.dm_slept_ns, done - got, __ATOMIC_RELAXED);
	__atomic_add_fetch(&m->st.dm_queue_ns, got - entry, __ATOMIC_RELAXED);
	return real_elapsed_ns + (done - entry);
}

void devmodel_get_stats(struct devmodel *m, struct devmodel_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!m)
		return;
	out->dm_ios = __atomic_load_n(&m->st.dm_ios, __ATOMIC_RELAXED);
	out->dm_seeks = __atomic_load_n(&m->st.dm_seeks, __ATOMIC_RELAXED);
	out->dm_modeled_ns = __atomic_load_n(&m->st.dm_modeled_ns, __ATOMIC_RELAXED);
	out->dm_slept_ns = __atomic_load_n(&m->st.dm_slept_ns, __ATOMIC_RELAXED);
	out->dm_queue_ns = __atomic_load_n(&m->st.dm_queue_ns, __ATOMIC_RELAXED);
}

void devmodel_delay(uint64_t ns)
{
	if (ns)
		sleep_until(clock_mono_ns() + ns);
}
