/* wire.c — the wire layer (bpf/wire.bpf.c): loading it with the server ports, and
 * keeping its TC programs on the chosen interfaces. Interfaces are chosen by
 * --wire-iface patterns, or are every interface with an address; an rtnetlink
 * socket reports links and addresses as they appear, so interfaces created later
 * (a container's veth, a client namespace) are attached within one poll. The programs
 * hook an interface with tcx links where the kernel has them (Linux 6.6+), else with TC
 * clsact filters, which are not owned by a file descriptor: ours carry our pid as
 * handle and strata's priority (collectors/wire_tc.c reaps those of a killed
 * collector); detach removes ours and leaves the clsact qdisc (other filters may use it).
 * Server ports: --wire-port's, and with --wire-port rpcbind (the default with 2049) the
 * NFS and MOUNT ports the local rpcbind maps (collectors/wire_ports.c), asked when
 * attaching and again every few seconds. */
#include <errno.h>
#include <inttypes.h>
#include <fnmatch.h>
#include <ifaddrs.h>
#include <net/if_arp.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "catalogue.h"
#include "kernel_features.h"
#include "layers.h"
#include "wire.h"
#include "emit.h"
#include "clock.h"
#include "wire.skel.h"

static const char *const counter_names[WIRE_COUNTERS] = {
	[WIRE_CALLS] = "calls",         [WIRE_REPLIES] = "replies",     [WIRE_JOINED] = "joined",
	[WIRE_DESYNCS] = "desyncs",     [WIRE_RESYNCS] = "resyncs",     [WIRE_UNMATCHED] = "unmatched",
	[WIRE_FOREIGN] = "foreign",     [WIRE_PENDING_FULL] = "pending_full",
};


static void port_set(struct wire_state *w, uint16_t port, bool on)
{
	if (on)
		w->port_bits[port >> 3] |= (uint8_t)(1u << (port & 7));
	else
		w->port_bits[port >> 3] &= (uint8_t)~(1u << (port & 7));
}

static bool port_followed(const struct wire_state *w, uint16_t port)
{
	return w->port_bits[port >> 3] >> (port & 7) & 1;
}

static bool port_in(const uint16_t *ports, int n, uint16_t port)
{
	for (int i = 0; i < n; i++)
		if (ports[i] == port)
			return true;
	return false;
}

/* Follows the ports the local rpcbind maps NFS and MOUNT to now, and stops following
 * those it no longer maps (unless given by --wire-port); no rpcbind: nothing changes. */
static void ports_recheck(struct wire_state *w, bool force)
{
	uint16_t found[WIRE_PORTS_FOUND_MAX];
	long long now = (long long)(clock_mono_ns() / 1000000);
	int n;

	if (!w->cfg.rpcbind || (!force && now < w->ports_next_ms))
		return;
	w->ports_next_ms = now + WIRE_PORTS_RECHECK_MS;
	if ((n = wire_ports_query(found, WIRE_PORTS_FOUND_MAX, 300)) < 0)
		return;
	for (int i = 0; i < w->nfound; i++)
		if (!port_in(found, n, w->found[i]) && !port_in(w->cfg.ports, w->cfg.nports, w->found[i]))
			port_set(w, w->found[i], false);
	for (int i = 0; i < n; i++)
		port_set(w, found[i], true);
	memcpy(w->found, found, (size_t)n * sizeof(found[0]));
	w->nfound = n;
}

/* --wire-iface, --wire-port, --wire-hook */
static struct wire_config options;

static int iface_option(const char *arg, char *err, size_t n)
{
	if (options.nifaces == WIRE_PATTERNS_MAX) {
		snprintf(err, n, "too many --wire-iface patterns");
		return -1;
	}
	if (!arg[0] || strlen(arg) >= 64) {
		snprintf(err, n, "--wire-iface needs an interface name or pattern, not %s", arg);
		return -1;
	}
	options.ifaces[options.nifaces++] = arg;
	return 0;
}

static int port_option(const char *arg, char *err, size_t n)
{
	long port;

	if (strcmp(arg, "rpcbind") == 0) {
		options.rpcbind = true;
		return 0;
	}
	if ((port = option_long(arg, 1, 65535)) < 0) {
		snprintf(err, n, "--wire-port needs a TCP port (1-65535) or rpcbind, not %s", arg);
		return -1;
	}
	if (options.nports == WIRE_PORTS_MAX) {
		snprintf(err, n, "too many --wire-port ports");
		return -1;
	}
	options.ports[options.nports++] = (uint16_t)port;
	return 0;
}

static int hook_option(const char *arg, char *err, size_t n)
{
	static const char *const hooks[] = { [WIRE_HOOK_AUTO] = "auto", [WIRE_HOOK_TCX] = "tcx", [WIRE_HOOK_TC] = "tc" };

	for (int h = 0; h < 3; h++) {
		if (strcmp(arg, hooks[h]) == 0) {
			options.hook = (enum wire_hook)h;
			return 0;
		}
	}
	snprintf(err, n, "--wire-hook needs auto, tcx or tc, not %s", arg);
	return -1;
}

/* No port given: NFS's 2049 and the ports the local rpcbind maps. */
static int options_done(char *err, size_t n)
{
	if (options.nports == 0 && !options.rpcbind) {
		options.ports[options.nports++] = 2049;
		options.rpcbind = true;
	}
	return 0;
}

static int load(struct layer *L, const struct layer_config *lc, char *why, size_t n)
{
	const struct wire_config *cfg = &options;
	unsigned max_keys = lc->max_keys;
	struct wire_bpf *s = wire_bpf__open();
	struct wire_state *w;
	bool bounded;
	int err;

	if (!s)
		return -errno;
	if (!(w = calloc(1, sizeof(*w)))) {
		wire_bpf__destroy(s);
		return -ENOMEM;
	}
	/* the trio this kernel allows: with bpf_loop (Linux 5.17+), else bounded */
	bounded = !kernel_has_bpf_loop();
	bpf_program__set_autoload(s->progs.wire_ingress, !bounded);
	bpf_program__set_autoload(s->progs.wire_egress, !bounded);
	bpf_program__set_autoload(s->progs.wire_loopback, !bounded);
	bpf_program__set_autoload(s->progs.wire_ingress_bounded, bounded);
	bpf_program__set_autoload(s->progs.wire_egress_bounded, bounded);
	bpf_program__set_autoload(s->progs.wire_loopback_bounded, bounded);
	s->rodata->agg_max_keys = max_keys;
	bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * max_keys);
	if ((err = wire_bpf__load(s))) {
		snprintf(why, n, "the kernel refused the wire TC programs (%s)", strerror(-err));
		wire_bpf__destroy(s);
		free(w);
		return err;
	}
	w->cfg = *cfg;
	w->nl_fd = -1;
	w->prog_fd[0] = bpf_program__fd(bounded ? s->progs.wire_ingress_bounded : s->progs.wire_ingress);
	w->prog_fd[1] = bpf_program__fd(bounded ? s->progs.wire_egress_bounded : s->progs.wire_egress);
	w->prog_fd[2] = bpf_program__fd(bounded ? s->progs.wire_loopback_bounded : s->progs.wire_loopback);
	w->l2len_fd = bpf_map__fd(s->maps.wire_l2len);
	w->counters_fd = bpf_map__fd(s->maps.wire_counters);
	w->l2_table = s->bss->wire_l2_table;
	w->port_bits = s->bss->wire_port_bits;
	for (int i = 0; i < cfg->nports; i++)
		port_set(w, cfg->ports[i], true);
	L->skel = s;
	L->state = w;
	LAYER_BIND_COMMON(L, s);
	layer_add_probe(L, "wire", NULL, PROBE_OWN);
	return 0;
}

static void detach(struct layer *L, struct probe *p);

static void unload(struct layer *L)
{
	detach(L, NULL);
	free(L->state);
	L->state = NULL;
	wire_bpf__destroy(L->skel);
}

/* Bytes before the IP header on this interface: 14 for Ethernet-like (and lo), 0 for
 * IP-only devices (tun, wireguard); -1 for link types not followed. *loopback: lo. */
static int l2_length(const char *name, bool *loopback)
{
	char path[64 + IF_NAMESIZE];
	unsigned type;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/class/net/%s/type", name);
	if (!(f = fopen(path, "r")))
		return -1;
	ok = fscanf(f, "%u", &type) == 1;
	fclose(f);
	if (!ok)
		return -1;
	*loopback = type == ARPHRD_LOOPBACK;
	if (type == ARPHRD_ETHER || type == ARPHRD_LOOPBACK)
		return 14;
	if (type == ARPHRD_NONE || type == 519 /* ARPHRD_RAWIP */)
		return 0;
	return -1;
}

static bool chosen(const struct wire_state *w, const char *name, const struct ifaddrs *addrs)
{
	if (w->cfg.nifaces) {
		for (int i = 0; i < w->cfg.nifaces; i++)
			if (fnmatch(w->cfg.ifaces[i], name, 0) == 0)
				return true;
		return false;
	}
	for (const struct ifaddrs *a = addrs; a; a = a->ifa_next)
		if (a->ifa_addr && (a->ifa_addr->sa_family == AF_INET || a->ifa_addr->sa_family == AF_INET6) &&
		    strcmp(a->ifa_name, name) == 0)
			return true;
	return false;
}

/* The attachment's hooks removed: tcx links closed and, unless the interface is gone
 * (and its filters with it), TC filters detached. */
static void detach_one(struct wire_attachment *a, bool gone)
{
	for (int d = 0; d < 2; d++) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = a->ifindex,
			    .attach_point = d ? BPF_TC_EGRESS : BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts, .handle = a->handle[d], .priority = a->priority[d]);

		if (a->link_fd[d] >= 0)
			close(a->link_fd[d]);
		else if (a->handle[d] && !gone)
			bpf_tc_detach(&hook, &opts);
		a->link_fd[d] = -1;
		a->handle[d] = 0;
	}
}

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

/* The clsact qdisc, created unless it exists; libbpf's warning about an existing one is muted. */
static int hook_create(struct bpf_tc_hook *hook)
{
	libbpf_print_fn_t old = libbpf_set_print(silent);
	int err = bpf_tc_hook_create(hook);

	libbpf_set_print(old);
	return err == -EEXIST ? 0 : err;
}

static int attach_one(struct wire_state *w, int ifindex, const char *name)
{
	struct wire_attachment *a = &w->att[w->natt];
	__u32 key = (__u32)ifindex, l2;
	bool loopback = false;
	int len = l2_length(name, &loopback), err;

	if (len < 0 || w->natt >= WIRE_ATTACH_MAX)
		return 0; /* not an interface the program can parse, or too many: skipped */
	l2 = (__u32)len;
	if (key < WIRE_L2_TABLE)
		w->l2_table[key] = (uint8_t)(l2 + 1);
	else
		bpf_map_update_elem(w->l2len_fd, &key, &l2, BPF_ANY);
	memset(a, 0, sizeof(*a));
	a->ifindex = ifindex;
	a->link_fd[0] = a->link_fd[1] = -1;
	snprintf(a->name, sizeof(a->name), "%s", name);
	wire_tc_reap(ifindex);
	for (int d = loopback ? 1 : 0; d < 2; d++) { /* lo: one program at egress sees both directions */
		int prog = w->prog_fd[loopback ? 2 : d];
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = d ? BPF_TC_EGRESS : BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog, .handle = (__u32)getpid(), .priority = WIRE_TC_PRIORITY);

		if (w->cfg.hook != WIRE_HOOK_TC) {
			if ((a->link_fd[d] = wire_tcx_attach(prog, ifindex, d)) >= 0)
				continue;
			err = a->link_fd[d];
			a->link_fd[d] = -1;
			if (w->cfg.hook == WIRE_HOOK_TCX)
				goto fail;
		}
		if ((err = hook_create(&hook)))
			goto fail;
		if ((err = bpf_tc_attach(&hook, &opts)))
			goto fail;
		a->handle[d] = opts.handle;
		a->priority[d] = opts.priority;
	}
	w->natt++;
	return 0;
fail:
	detach_one(a, false);
	snprintf(w->error, sizeof(w->error), "cannot attach the wire TC programs to %s%s: %s", name,
		 w->cfg.hook == WIRE_HOOK_TCX ? " with tcx links (Linux 6.6+)" : "", strerror(-err));
	return -1;
}

/* Attaches to chosen interfaces not yet attached; forgets interfaces that are gone. */
static int sync_interfaces(struct wire_state *w)
{
	struct if_nameindex *names = if_nameindex(), *ni;
	struct ifaddrs *addrs = NULL;
	int rc = 0, keep = 0;

	if (!names)
		return -1;
	if (!w->cfg.nifaces && getifaddrs(&addrs) < 0)
		addrs = NULL;
	for (int i = 0; i < w->natt; i++) {
		bool present = false;

		for (ni = names; ni->if_index; ni++)
			if ((int)ni->if_index == w->att[i].ifindex && strcmp(ni->if_name, w->att[i].name) == 0)
				present = true;
		if (present)
			w->att[keep++] = w->att[i];
		else /* its hooks went with it; a tcx link's fd is still ours */
			detach_one(&w->att[i], true);
	}
	w->natt = keep;
	for (ni = names; ni->if_index; ni++) {
		bool have = false;

		for (int i = 0; i < w->natt; i++)
			have |= w->att[i].ifindex == (int)ni->if_index;
		if (!have && chosen(w, ni->if_name, addrs) && attach_one(w, (int)ni->if_index, ni->if_name) < 0)
			rc = -1;
	}
	freeifaddrs(addrs);
	if_freenameindex(names);
	return rc;
}

static int events_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int attach(struct layer *L, struct probe *p, char *err, size_t n)
{
	struct wire_state *w = L->state;

	w->error[0] = 0;
	if (w->nl_fd < 0)
		w->nl_fd = events_open(); /* before the scan: nothing created in between is missed */
	ports_recheck(w, true);
	if (sync_interfaces(w) < 0 && w->natt == 0) {
		snprintf(err, n, "%s", w->error[0] ? w->error : "cannot list the network interfaces");
		detach(L, p);
		return -1;
	}
	return 0;
}

static void detach(struct layer *L, struct probe *p)
{
	struct wire_state *w = L->state;

	for (int i = 0; i < w->natt; i++)
		detach_one(&w->att[i], false);
	w->natt = 0;
	if (w->nl_fd >= 0)
		close(w->nl_fd);
	w->nl_fd = -1;
}

static int event_fd(const struct layer *L)
{
	const struct wire_state *w = L->state;

	return w->nl_fd;
}

static void events(struct layer *L, bool rescan)
{
	struct wire_state *w = L->state;
	char buf[8192];
	bool any = rescan;

	if (w->nl_fd < 0)
		return;
	while (recv(w->nl_fd, buf, sizeof(buf), 0) > 0)
		any = true;
	if (any || errno == ENOBUFS) /* ENOBUFS: events overflowed, rescan anyway */
		sync_interfaces(w);
	if (rescan)
		ports_recheck(w, false);
}

static void counters_read(const struct wire_state *w, uint64_t out[WIRE_COUNTERS])
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;

	memset(out, 0, WIRE_COUNTERS * sizeof(out[0]));
	if (ncpu <= 0 || !(vals = calloc((size_t)ncpu, sizeof(*vals))))
		return;
	for (__u32 i = 0; i < WIRE_COUNTERS; i++)
		if (bpf_map_lookup_elem(w->counters_fd, &i, vals) == 0)
			for (int c = 0; c < ncpu; c++)
				out[i] += vals[c];
	free(vals);
}

/* The last attach problem, once. */
static void refresh(struct layer *L, layer_report_fn *report, void *ctx)
{
	struct wire_state *w = L->state;

	if (w->error[0])
		report(ctx, w->error);
	w->error[0] = 0;
}

/* ,"wire":{interfaces, hooks, ports followed, stream counters} (collectors/FORMAT.md). */
static void status(const struct layer *L, FILE *out)
{
	const struct wire_state *w = L->state;
	uint64_t counters[WIRE_COUNTERS];

	if (!L->loaded)
		return;
	counters_read(w, counters);
	fprintf(out, ",\"wire\":{\"interfaces\":[");
	for (int i = 0; i < w->natt; i++) {
		fprintf(out, "%s", i ? "," : "");
		emit_json_string(out, w->att[i].name);
	}
	fprintf(out, "],\"hooks\":{");
	for (int i = 0; i < w->natt; i++) {
		const struct wire_attachment *a = &w->att[i];

		fprintf(out, "%s", i ? "," : "");
		emit_json_string(out, a->name);
		fprintf(out, ":\"%s\"", a->link_fd[0] >= 0 || a->link_fd[1] >= 0 ? "tcx" : "tc");
	}
	fprintf(out, "},\"ports\":[");
	for (int port = 1, n = 0; port < 65536; port++)
		if (port_followed(w, (uint16_t)port))
			fprintf(out, "%s%d", n++ ? "," : "", port);
	fprintf(out, "]");
	for (int i = 0; i < WIRE_COUNTERS; i++)
		fprintf(out, ",\"%s\":%" PRIu64, counter_names[i], counters[i]);
	fprintf(out, "}");
}

static const struct layer_option option_table[] = {
	{ "wire-iface", "PATTERN ...", iface_option },
	{ "wire-port", "PORT|rpcbind ...", port_option },
	{ "wire-hook", "auto|tcx|tc", hook_option },
	{ NULL },
};

const struct layer_ops LAYER_OPS(WIRE) = {
	.options = option_table, .options_done = options_done, .load = load, .unload = unload, .attach = attach, .detach = detach,
	.event_fd = event_fd, .events = events, .refresh = refresh, .status = status,
};
