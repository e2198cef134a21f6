/* fs_hook.h — where the file-system layer's programs (bpf/fs.bpf.c) hook the followed
 * syscalls: fentry / fexit on each syscall's function where this kernel allows it, else
 * the per-syscall tracepoints (syscalls:sys_enter_pread64 ...); or the one --fs-hook names. */
#ifndef STRATA_COLLECT_FS_HOOK_H
#define STRATA_COLLECT_FS_HOOK_H

#include <stdbool.h>
#include <stddef.h>

enum fs_hook { FS_HOOK_AUTO, FS_HOOK_FENTRY, FS_HOOK_SYSCALLS, FS_HOOK_COUNT };

/* --fs-hook auto|fentry|syscalls; 0, or -1 with a message. */
int fs_hook_option(const char *arg, char *err, size_t n);

/* The hook to load (never FS_HOOK_AUTO), or FS_HOOK_AUTO with why none can be. */
enum fs_hook fs_hook_choose(char *why, size_t n);

/* "fentry" or "syscalls": the status record's name of a hook. */
const char *fs_hook_name(enum fs_hook h);

/* The entry and exit probes as the status record lists them ("syscalls:sys_enter_*" ...). */
const char *fs_hook_probe(enum fs_hook h, bool exit);

#endif
