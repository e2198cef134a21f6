/* fs_processes.c — the processes the file-system layer follows (fs_processes.h): command-line choices,
 * /proc scans for names and start times, the cgroup, and the program's maps. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "fs_processes.h"
#include "layers.h"

#define GIVEN_MAX 64
#define CHOSEN_MAX 1024 /* the program's fs_pids map */
#define COMM_LEN 16

struct given_pid {
	pid_t pid;
	unsigned long long ticks; /* start time when chosen; 0: there was no such process */
};

struct chosen {
	pid_t pid;
	unsigned long long ticks;
};

static struct given_pid given[GIVEN_MAX];
static size_t ngiven;
static char comms[GIVEN_MAX][COMM_LEN];
static size_t ncomms;
static char *cgroup_path;

static int pids_fd = -1, cgroup_map_fd = -1, cgroup_fd = -1;
static uint32_t *use_cgroup;
static uint64_t *gate; /* the program's fs_gate: bit (pid mod gate_bits) per chosen process */
static size_t gate_bits;
static struct chosen chosen[CHOSEN_MAX];
static size_t nchosen;
static pid_t in_cgroup[CHOSEN_MAX];
static size_t nin_cgroup;

/* Start time of pid in clock ticks since boot (/proc/PID/stat field 22); 0 if none. */
static unsigned long long start_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks = 0;
	size_t got;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	got = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[got] = 0;
	if (!(p = strrchr(buf, ')')))
		return 0;
	/* after "pid (comm)": fields 3..21, then starttime */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &ticks) != 1)
		return 0;
	return ticks;
}

static bool read_comm(pid_t pid, char out[COMM_LEN])
{
	char path[64];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!(f = fopen(path, "r")))
		return false;
	ok = fgets(out, COMM_LEN, f) != NULL;
	fclose(f);
	if (ok)
		out[strcspn(out, "\n")] = 0;
	return ok;
}

int fs_choose_pid(const char *text, char *err, size_t n)
{
	long v = option_long(text, 1, INT_MAX);

	if (v < 0) {
		snprintf(err, n, "--fs-pid needs a process id, not %s", text);
		return -1;
	}
	if (ngiven == GIVEN_MAX) {
		snprintf(err, n, "at most %d --fs-pid", GIVEN_MAX);
		return -1;
	}
	given[ngiven].pid = (pid_t)v;
	given[ngiven++].ticks = start_ticks((pid_t)v);
	return 0;
}

int fs_choose_comm(const char *name, char *err, size_t n)
{
	if (!name[0] || strlen(name) >= COMM_LEN || strchr(name, '/')) {
		snprintf(err, n, "--fs-comm needs a process name of 1-15 characters (as in /proc/PID/comm), not '%s'",
			 name);
		return -1;
	}
	if (ncomms == GIVEN_MAX) {
		snprintf(err, n, "at most %d --fs-comm", GIVEN_MAX);
		return -1;
	}
	snprintf(comms[ncomms++], COMM_LEN, "%s", name);
	return 0;
}

/* Where the cgroup v2 hierarchy is mounted (/sys/fs/cgroup, or .../unified on hybrid hosts). */
static void cgroup2_root(char *out, size_t n)
{
	char dev[64], dir[PATH_MAX], type[32];
	FILE *f = fopen("/proc/self/mounts", "r");

	snprintf(out, n, "/sys/fs/cgroup");
	if (!f)
		return;
	while (fscanf(f, "%63s %4095s %31s %*[^\n]", dev, dir, type) == 3) {
		if (strcmp(type, "cgroup2") == 0) {
			snprintf(out, n, "%s", dir);
			break;
		}
	}
	fclose(f);
}

int fs_choose_cgroup(const char *path, char *err, size_t n)
{
	char full[2 * PATH_MAX + 2], root[PATH_MAX];

	if (cgroup_path) {
		snprintf(err, n, "give --fs-cgroup once");
		return -1;
	}
	if (!path[0] || strlen(path) >= PATH_MAX) {
		snprintf(err, n, "--fs-cgroup needs a cgroup path");
		return -1;
	}
	/* an absolute path as it is, else relative to the cgroup v2 mount */
	cgroup2_root(root, sizeof(root));
	if (path[0] == '/')
		snprintf(full, sizeof(full), "%s", path);
	else
		snprintf(full, sizeof(full), "%s/%s", root, path);
	cgroup_path = strdup(full);
	return 0;
}

bool fs_chosen_any(void)
{
	return ngiven || ncomms || cgroup_path;
}

uint64_t fs_ns_per_tick(void)
{
	long hz = sysconf(_SC_CLK_TCK);

	return 1000000000ull / (uint64_t)(hz > 0 ? hz : 100);
}

void fs_bind(int pids, int cgroup_map, uint32_t *use, uint64_t *gate_words, size_t words)
{
	pids_fd = pids;
	cgroup_map_fd = cgroup_map;
	use_cgroup = use;
	gate = gate_words;
	gate_bits = words * 64;
	nchosen = 0;
	if (cgroup_fd >= 0)
		close(cgroup_fd);
	cgroup_fd = -1;
}

static void add_chosen(struct chosen *set, size_t *nset, pid_t pid, unsigned long long ticks)
{
	for (size_t i = 0; i < *nset; i++)
		if (set[i].pid == pid)
			return;
	if (*nset < CHOSEN_MAX)
		set[(*nset)++] = (struct chosen){ pid, ticks };
}

typedef void (*report_fn)(void *ctx, const char *msg);

/* Adds every process whose comm is one of the chosen names; notes names with none. */
static void scan_comms(struct chosen *set, size_t *nset, report_fn report, void *ctx)
{
	bool matched[GIVEN_MAX] = { false };
	struct dirent *e;
	char comm[COMM_LEN], msg[128];
	DIR *d;

	if (!ncomms || !(d = opendir("/proc")))
		return;
	while ((e = readdir(d))) {
		pid_t pid = (pid_t)atoi(e->d_name);

		if (pid <= 0 || !read_comm(pid, comm))
			continue;
		for (size_t i = 0; i < ncomms; i++) {
			unsigned long long ticks;

			if (strcmp(comm, comms[i]) || !(ticks = start_ticks(pid)))
				continue;
			matched[i] = true;
			add_chosen(set, nset, pid, ticks);
		}
	}
	closedir(d);
	for (size_t i = 0; i < ncomms; i++) {
		if (!matched[i]) {
			snprintf(msg, sizeof(msg), "fs: no process named %s yet (--fs-comm): watching for one", comms[i]);
			report(ctx, msg);
		}
	}
}

static int add_cgroup_procs(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	char file[PATH_MAX + 16];
	FILE *f;
	int pid;

	(void)st;
	(void)ftw;
	if (flag != FTW_D)
		return 0;
	snprintf(file, sizeof(file), "%s/cgroup.procs", path);
	if (!(f = fopen(file, "r")))
		return 0;
	while (fscanf(f, "%d", &pid) == 1 && nin_cgroup < CHOSEN_MAX)
		in_cgroup[nin_cgroup++] = (pid_t)pid;
	fclose(f);
	return 0;
}

/* Opens the chosen cgroup once it exists and hands it to the program. */
static void refresh_cgroup(report_fn report, void *ctx)
{
	char msg[PATH_MAX + 96];
	__u32 zero = 0;

	nin_cgroup = 0;
	if (!cgroup_path)
		return;
	if (cgroup_fd < 0) {
		int fd = open(cgroup_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd < 0 || bpf_map_update_elem(cgroup_map_fd, &zero, &fd, BPF_ANY)) {
			snprintf(msg, sizeof(msg), "fs: no cgroup %s (--fs-cgroup): %s", cgroup_path,
				 fd < 0 ? strerror(errno) : "not a cgroup v2 directory");
			report(ctx, msg);
			if (fd >= 0)
				close(fd);
			return;
		}
		cgroup_fd = fd;
		__atomic_store_n(use_cgroup, 1, __ATOMIC_RELEASE);
	}
	if (access(cgroup_path, F_OK) != 0) {
		snprintf(msg, sizeof(msg), "fs: cgroup %s (--fs-cgroup) was removed", cgroup_path);
		report(ctx, msg);
		return;
	}
	nftw(cgroup_path, add_cgroup_procs, 16, FTW_PHYS);
}

/* Opens the program's gate to exactly the processes of set (after their map entries are in,
 * before those of the processes that left are taken out): one word written at a time. */
static void sync_gate(const struct chosen *set, size_t nset)
{
	static uint64_t words[4096];
	size_t n = gate_bits / 64;

	if (!gate || n > sizeof(words) / sizeof(words[0]))
		return;
	memset(words, 0, n * sizeof(words[0]));
	for (size_t j = 0; j < nset; j++) {
		size_t bit = (size_t)set[j].pid % gate_bits;

		words[bit / 64] |= 1ull << (bit % 64);
	}
	for (size_t i = 0; i < n; i++)
		if (__atomic_load_n(&gate[i], __ATOMIC_RELAXED) != words[i])
			__atomic_store_n(&gate[i], words[i], __ATOMIC_RELEASE);
}

/* Makes the program's map and gate hold exactly set. */
static void sync_map(const struct chosen *set, size_t nset)
{
	for (size_t j = 0; j < nset; j++) {
		__u32 key = (__u32)set[j].pid;
		__u64 ticks = set[j].ticks;

		bpf_map_update_elem(pids_fd, &key, &ticks, BPF_ANY);
	}
	sync_gate(set, nset);
	for (size_t i = 0; i < nchosen; i++) {
		bool keep = false; /* its pid still chosen: its entry was just rewritten */

		for (size_t j = 0; j < nset && !keep; j++)
			keep = set[j].pid == chosen[i].pid;
		if (!keep) {
			__u32 key = (__u32)chosen[i].pid;

			bpf_map_delete_elem(pids_fd, &key);
		}
	}
	memcpy(chosen, set, nset * sizeof(*set));
	nchosen = nset;
}

void fs_refresh(report_fn report, void *ctx)
{
	static struct chosen set[CHOSEN_MAX];
	size_t nset = 0;
	char msg[128];

	if (pids_fd < 0)
		return;
	for (size_t i = 0; i < ngiven; i++) {
		if (given[i].ticks && start_ticks(given[i].pid) == given[i].ticks) {
			add_chosen(set, &nset, given[i].pid, given[i].ticks);
			continue;
		}
		snprintf(msg, sizeof(msg), "fs: process %d (--fs-pid) %s: nothing collected for it", (int)given[i].pid,
			 given[i].ticks ? "has exited" : "does not exist");
		report(ctx, msg);
	}
	scan_comms(set, &nset, report, ctx);
	sync_map(set, nset);
	refresh_cgroup(report, ctx);
}

size_t fs_chosen_pids(pid_t *out, size_t max)
{
	size_t k = 0;

	for (size_t i = 0; i < nchosen && k < max; i++)
		out[k++] = chosen[i].pid;
	for (size_t i = 0; i < nin_cgroup && k < max; i++)
		out[k++] = in_cgroup[i];
	return k;
}
