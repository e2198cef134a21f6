/* fs_processes.h — which processes the file-system layer (bpf/fs.bpf.c) follows: the
 * --fs-pid, --fs-comm and --fs-cgroup choices, turned once per interval into the
 * program's process map and cgroup. A choice that matches nothing (a pid that is
 * gone, a name no process has yet, a cgroup not created yet) is reported as a
 * status error each interval and collects nothing; names and cgroups are picked up
 * when they appear, a pid never comes back (another process may reuse it). */
#ifndef STRATA_COLLECT_FS_PROCESSES_H
#define STRATA_COLLECT_FS_PROCESSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Command-line choices; 0, or -1 with a message (a bad value, too many). */
int fs_choose_pid(const char *text, char *err, size_t n);
int fs_choose_comm(const char *name, char *err, size_t n);
int fs_choose_cgroup(const char *path, char *err, size_t n);
/* Whether any choice was given. */
bool fs_chosen_any(void);

/* Nanoseconds per /proc/PID/stat clock tick (the program's ns_per_tick). */
uint64_t fs_ns_per_tick(void);

/* Binds the loaded program's process map, cgroup map, cgroup switch and gate (words of 64
 * bits, bit pid mod its size set for each process followed). */
void fs_bind(int pids_fd, int cgroup_fd, uint32_t *use_cgroup, uint64_t *gate, size_t words);
/* Brings the process map and the cgroup up to date with the choices; each choice
 * that matches nothing is passed to report as one sentence. */
void fs_refresh(void (*report)(void *ctx, const char *msg), void *ctx);

/* The processes followed at the last refresh (for resolving file names). */
size_t fs_chosen_pids(pid_t *out, size_t max);

#endif
