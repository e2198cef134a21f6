/* wire_tc.c — how the wire layer's programs hook an interface, and who owns the hooks.
 * Preferred: a tcx link (Linux 6.6+), made with the raw BPF_LINK_CREATE (Debian 12's
 * libbpf predates its API); it runs without the clsact qdisc and classifier, and the
 * kernel removes it when the collector's file descriptor closes, however the collector
 * ends. Otherwise: a TC clsact filter made through netlink, which outlives the process
 * that made it, so strata marks its own: priority WIRE_TC_PRIORITY, handle = the
 * collector's pid, a program named wire_*. Before attaching to an interface, filters so
 * marked whose collector is gone (killed without detaching) are removed; every other
 * filter is left alone. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "wire_tc.h"

#define STALE_MAX 64

/* Attach types of tcx links (enum bpf_attach_type, kernel ABI since Linux 6.6). */
#define TCX_INGRESS 46
#define TCX_EGRESS  47

/* A strata collector with this pid is running. */
static bool collector_alive(uint32_t pid)
{
	char path[32], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if (!(f = fopen(path, "r")))
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return strncmp(comm, "strata-collect", 14) == 0;
}

/* The name of the BPF program in a bpf filter's options (TCA_BPF_NAME), or "". */
static const char *bpf_name(struct rtattr *opts)
{
	int len = RTA_PAYLOAD(opts);

	for (struct rtattr *a = RTA_DATA(opts); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == TCA_BPF_NAME && RTA_PAYLOAD(a) > 0 && ((char *)RTA_DATA(a))[RTA_PAYLOAD(a) - 1] == 0)
			return RTA_DATA(a);
	return "";
}

/* Handles of stale strata filters on (ifindex, parent); their number, or -1. */
static int stale_filters(int ifindex, uint32_t parent, uint32_t handles[STALE_MAX])
{
	struct {
		struct nlmsghdr n;
		struct tcmsg t;
	} req = { .n = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETTFILTER,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		  .t = { .tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex, .tcm_parent = parent } };
	char buf[16384];
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE), n = 0;
	bool done = false;

	if (fd < 0)
		return -1;
	if (send(fd, &req, sizeof(req), 0) < 0)
		goto fail;
	while (!done) {
		int len = (int)recv(fd, buf, sizeof(buf), 0);

		if (len <= 0)
			goto fail;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			struct tcmsg *t = NLMSG_DATA(h);
			struct rtattr *kind = NULL, *opts = NULL;
			int alen;

			if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
				done = true;
				break;
			}
			if (h->nlmsg_type != RTM_NEWTFILTER || h->nlmsg_len < NLMSG_LENGTH(sizeof(*t)))
				continue;
			alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*t)));
			for (struct rtattr *a = (void *)((char *)t + NLMSG_ALIGN(sizeof(*t))); RTA_OK(a, alen);
			     a = RTA_NEXT(a, alen)) {
				if (a->rta_type == TCA_KIND)
					kind = a;
				else if (a->rta_type == TCA_OPTIONS)
					opts = a;
			}
			if (!kind || !opts || strcmp(RTA_DATA(kind), "bpf") != 0 || !t->tcm_handle ||
			    TC_H_MAJ(t->tcm_info) >> 16 != WIRE_TC_PRIORITY ||
			    strncmp(bpf_name(opts), "wire_", 5) != 0 || t->tcm_handle == (uint32_t)getpid() ||
			    collector_alive(t->tcm_handle))
				continue;
			if (n < STALE_MAX)
				handles[n++] = t->tcm_handle;
		}
	}
	close(fd);
	return n;
fail:
	close(fd);
	return -1;
}

int wire_tc_reap(int ifindex)
{
	int reaped = 0;

	for (int d = 0; d < 2; d++) {
		uint32_t handles[STALE_MAX];
		int n = stale_filters(ifindex, TC_H_MAKE(TC_H_CLSACT, d ? TC_H_MIN_EGRESS : TC_H_MIN_INGRESS), handles);

		for (int i = 0; i < n; i++) {
			LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = d ? BPF_TC_EGRESS : BPF_TC_INGRESS);
			LIBBPF_OPTS(bpf_tc_opts, opts, .handle = handles[i], .priority = WIRE_TC_PRIORITY);

			if (bpf_tc_detach(&hook, &opts) == 0)
				reaped++;
		}
	}
	return reaped;
}

int wire_tcx_attach(int prog_fd, int ifindex, bool egress)
{
	int fd = bpf_link_create(prog_fd, ifindex, egress ? TCX_EGRESS : TCX_INGRESS, NULL);

	return fd < 0 ? -errno : fd;
}
