/* load_netns.c — per-client network namespaces and veth pairs (see
 * load_netns.h). Links, addresses and routes are made by iproute2's `ip`,
 * run from the thread whose namespace it must act in. */
#include "load_netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NETNS_PREFIX "stl"   /* host-side veth names: stlB-I */

static void host_ifname(int block, int idx, char name[IF_NAMESIZE])
{
	snprintf(name, IF_NAMESIZE, NETNS_PREFIX "%hhu-%hhu", (unsigned char)block, (unsigned char)idx);
}

int netns_pick_block(void)
{
	char name[IF_NAMESIZE];
	int start = (int)(getpid() % 256);

	for (int i = 0; i < 256; i++) {
		int b = (start + i) % 256;

		host_ifname(b, 0, name);
		if (if_nametoindex(name) == 0)
			return b;
	}
	return -1;
}

/* Runs `ip -batch -` with cmds, in the calling thread's namespace. */
static int ip_batch(const char *cmds, bool quiet)
{
	FILE *p = popen(quiet ? "ip -force -batch - 2>/dev/null" : "ip -batch -", "w");

	if (!p)
		return -1;
	fputs(cmds, p);
	int st = pclose(p);
	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int route_localnet(const char *dev)
{
	char path[128];

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/route_localnet", dev);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int ok = write(fd, "1", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

int netns_enter(int block, int idx, char *err, size_t errlen)
{
	char host[IF_NAMESIZE], addr[32], cmds[512];
	int rootfd = -1, myfd = -1, rc = -1;

	host_ifname(block, idx, host);
	snprintf(addr, sizeof(addr), "10.213.%d.%d", block, idx + 1);
	rootfd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (rootfd < 0 || unshare(CLONE_NEWNET) < 0) {
		snprintf(err, errlen, "netns: cannot create a network namespace: %s", strerror(errno));
		goto out;
	}
	myfd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	snprintf(cmds, sizeof(cmds),
		 "link add eth0 type veth peer name %s netns %d\n"
		 "addr add %s/32 dev eth0\n"
		 "link set eth0 up\n"
		 "route add default dev eth0\n", host, (int)getpid(), addr);
	if (myfd < 0 || ip_batch(cmds, false) < 0 || route_localnet("eth0") < 0) {
		snprintf(err, errlen, "netns: cannot wire client side %s", addr);
		goto out;
	}
	if (setns(rootfd, CLONE_NEWNET) < 0) {
		snprintf(err, errlen, "netns: setns: %s", strerror(errno));
		goto out;
	}
	snprintf(cmds, sizeof(cmds), "link set %s up\nroute add %s/32 dev %s\n", host, addr, host);
	int host_ok = ip_batch(cmds, false) == 0 && route_localnet(host) == 0;
	if (setns(myfd, CLONE_NEWNET) < 0 || !host_ok) {
		snprintf(err, errlen, "netns: cannot wire host side %s", host);
		goto out;
	}
	rc = 0;
out:
	if (rootfd >= 0)
		close(rootfd);
	if (myfd >= 0)
		close(myfd);
	return rc;
}

void netns_cleanup(int block, int n)
{
	char name[IF_NAMESIZE], line[64], cmds[64 * 256];
	size_t len = 0;

	cmds[0] = 0;
	for (int i = 0; i < n && i < 256; i++) {
		host_ifname(block, i, name);
		if (if_nametoindex(name) == 0)
			continue;
		snprintf(line, sizeof(line), "link del %s\n", name);
		memcpy(cmds + len, line, strlen(line) + 1);
		len += strlen(line);
	}
	if (len)
		ip_batch(cmds, true);
}
