/* syscall_hooks.c — bench helper (build/bench/strata-syscall-hooks raw|per): attaches
 * one flavour of bench/syscall_hooks.bpf.c, prints "attached", and holds it until EOF
 * on stdin; then prints how many followed syscall entries and exits it saw. */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "syscall_hooks.skel.h"

int main(int argc, char **argv)
{
	struct syscall_hooks_bpf *s;
	int raw;

	if (argc != 2 || (strcmp(argv[1], "raw") && strcmp(argv[1], "per"))) {
		fprintf(stderr, "usage: strata-syscall-hooks raw|per\n");
		return 2;
	}
	raw = strcmp(argv[1], "raw") == 0;
	if (!(s = syscall_hooks_bpf__open()))
		return 1;
	bpf_program__set_autoload(s->progs.raw_enter, raw);
	bpf_program__set_autoload(s->progs.raw_exit, raw);
	bpf_program__set_autoload(s->progs.per_enter, !raw);
	bpf_program__set_autoload(s->progs.per_exit, !raw);
	if (syscall_hooks_bpf__load(s) || syscall_hooks_bpf__attach(s)) {
		fprintf(stderr, "strata-syscall-hooks: cannot load or attach the %s programs\n", argv[1]);
		syscall_hooks_bpf__destroy(s);
		return 1;
	}
	printf("attached\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	printf("%llu\n", (unsigned long long)s->bss->hits);
	syscall_hooks_bpf__destroy(s);
	return 0;
}
