/* ctl.c — the run-time switches of `strata-engine ctl`: the L2ARC on or off and
 * its compression, a fault-injection delay per tier (l2arc, zil, pool, nfs), the
 * ARC's size.  It sits above what it switches (tiers.c, nfs3.c, arc.c), which call
 * nothing back; the control socket (stats.c) hands it each request. */
#include "ctl.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "l2arc.h"
#include "nfs3.h"
#include "tiers.h"
#include "util.h"

static int ctl_reply(char *out, size_t outsz, int rc, const char *fmt, const char *arg)
{
	snprintf(out, outsz, fmt, arg);
	return rc;
}

static int on_off(const char *word, bool *v)
{
	if (!strcmp(word, "on"))
		*v = true;
	else if (!strcmp(word, "off"))
		*v = false;
	else
		return -1;
	return 0;
}

/* What a delay of ns on tier set, in words ("inject-delay pool: 50us added to every I/O of pool");
 * a bare number (seconds) is named as such. */
static const char *delay_said(const char *tier, uint64_t ns, const char *dur)
{
	static char said[128];
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "s", 1000000000 }, { "ms", 1000000 }, { "us", 1000 }, { "ns", 1 },
	};
	size_t i = 0;
	if (!ns) {
		snprintf(said, sizeof(said), "inject-delay %s: cleared", tier);
		return said;
	}
	while (ns % units[i].ns)
		i++;
	snprintf(said, sizeof(said), "inject-delay %s: %llu%s added to every %s%s%s", tier,
		 (unsigned long long)(ns / units[i].ns), units[i].unit, strcmp(tier, "nfs") ? "I/O of " : "NFS reply", strcmp(tier, "nfs") ? tier : "",
		 strspn(dur, "0123456789") == strlen(dur) ? " (a number without a unit is seconds)" : "");
	return said;
}

static int ctl_delay(const char *tier, const char *dur, char *out, size_t outsz)
{
	uint64_t ns;
	if (parse_duration_ns(dur, &ns) || ns > 10ull * 1000000000ull)
		return ctl_reply(out, outsz, -1, "bad delay '%s' (e.g. 50us, 2ms, 0; at most 10s)", dur);
	int rc = 0;
	if (!strcmp(tier, "nfs"))
		nfs3_set_reply_delay(ns);
	else
		rc = tiers_set_delay(tier, ns);
	if (rc == -1)
		return ctl_reply(out, outsz, -1, "%s", !strcmp(tier, "l2arc") ?
				 "no L2ARC: serve was started without --cache" : "no intent log on this engine");
	if (rc)
		return ctl_reply(out, outsz, -1, "unknown tier '%s' (l2arc, zil, pool or nfs)", tier);
	return ctl_reply(out, outsz, 0, "%s", delay_said(tier, ns, dur));
}

int engine_ctl(const char *request, char *out, size_t outsz)
{
	char w[3][64] = { "", "", "" };
	char extra[2];
	int n = sscanf(request, "%63s %63s %63s %1s", w[0], w[1], w[2], extra);
	bool v;
	struct l2arc *l2 = tiers_l2arc();
	if (n >= 2 && !strcmp(w[0], "l2arc")) {
		if (!l2)
			return ctl_reply(out, outsz, -1, "%s", "no L2ARC: serve was started without --cache");
		if (n == 2 && !on_off(w[1], &v)) {
			l2arc_set_enabled(l2, v);
			return ctl_reply(out, outsz, 0, "l2arc %s", w[1]);
		}
		if (n == 3 && !strcmp(w[1], "compress") && !on_off(w[2], &v)) {
			l2arc_set_compress(l2, v);
			return ctl_reply(out, outsz, 0, "l2arc compress %s", w[2]);
		}
		return ctl_reply(out, outsz, -1, "%s", "usage: l2arc on|off, l2arc compress on|off");
	}
	if (n == 3 && !strcmp(w[0], "inject-delay"))
		return ctl_delay(w[1], w[2], out, outsz);
	if (n == 2 && !strcmp(w[0], "arc-max")) {
		uint64_t size;
		if (parse_size(w[1], &size) || size < (1u << 20))
			return ctl_reply(out, outsz, -1, "bad size '%s' (at least 1M)", w[1]);
		arc_set_max(g_engine.arc, size);
		g_engine.arc_max = size;
		return ctl_reply(out, outsz, 0, "arc-max %s", w[1]);
	}
	return ctl_reply(out, outsz, -1, "unknown request '%s' (l2arc on|off, l2arc compress on|off, "
			 "inject-delay TIER DURATION, arc-max SIZE)", request);
}
