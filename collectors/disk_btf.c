/* disk_btf.c — reads btf_trace_<tracepoint> prototypes from /sys/kernel/btf/vmlinux
 * (libbpf's BTF API) to find the struct request argument: block_rq_issue lost its
 * request_queue argument in Linux 5.11. Each tracepoint's answer is kept. Also says
 * whether struct request carries the start time disk.queue reads. */
#include <stdio.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "disk_btf.h"

static const struct btf_type *skip_mods(const struct btf *btf, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(btf, id);

	while (t && (btf_is_mod(t) || btf_is_typedef(t)))
		t = btf__type_by_id(btf, t->type);
	return t;
}

static int request_arg(const char *tp, char *why, size_t n)
{
	char name[128];
	struct btf *btf = btf__load_vmlinux_btf();
	const struct btf_type *t;
	int id, arg = -1;

	if (!btf) {
		snprintf(why, n, "kernel has no BTF (/sys/kernel/btf/vmlinux): disk statistics need it");
		return -1;
	}
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id < 0) {
		snprintf(why, n, "kernel lacks the block:%s tracepoint", tp);
		goto out;
	}
	t = skip_mods(btf, (__u32)id);
	if (t && btf_is_ptr(t))
		t = skip_mods(btf, t->type);
	if (!t || !btf_is_func_proto(t)) {
		snprintf(why, n, "unexpected BTF for tracepoint %s", tp);
		goto out;
	}
	for (int i = 1; i < btf_vlen(t); i++) { /* param 0 is the hidden context pointer */
		const struct btf_type *p = skip_mods(btf, btf_params(t)[i].type);

		if (p && btf_is_ptr(p)) {
			const struct btf_type *s = skip_mods(btf, p->type);

			if (s && btf_is_struct(s) && strcmp(btf__name_by_offset(btf, s->name_off), "request") == 0) {
				arg = i - 1;
				break;
			}
		}
	}
	if (arg < 0 || arg > 1) {
		snprintf(why, n, "tracepoint %s has no struct request argument where expected", tp);
		arg = -1;
	}
out:
	btf__free(btf);
	return arg;
}

/* The answers so far: the kernel's BTF does not change while the collector runs, and
 * parsing it takes a while (each dataset added asks). */
static struct {
	char tp[48];
	int arg;
	char why[160];
} answers[4];

int disk_btf_request_arg(const char *tp, char *why, size_t n)
{
	size_t i;

	for (i = 0; i < sizeof(answers) / sizeof(answers[0]) && answers[i].tp[0]; i++)
		if (strcmp(answers[i].tp, tp) == 0)
			break;
	if (i == sizeof(answers) / sizeof(answers[0]) || strlen(tp) >= sizeof(answers[i].tp))
		return request_arg(tp, why, n);
	if (!answers[i].tp[0]) {
		answers[i].arg = request_arg(tp, answers[i].why, sizeof(answers[i].why));
		snprintf(answers[i].tp, sizeof(answers[i].tp), "%s", tp);
	}
	if (answers[i].arg < 0)
		snprintf(why, n, "%s", answers[i].why);
	return answers[i].arg;
}

bool disk_btf_supported(char *why, size_t n)
{
	return disk_btf_request_arg("block_rq_issue", why, n) >= 0 &&
	       disk_btf_request_arg("block_rq_complete", why, n) >= 0;
}

/* Whether struct s of btf has a member called name. */
static bool has_member(const struct btf *btf, const struct btf_type *s, const char *name)
{
	const struct btf_member *m = btf_members(s);

	for (int i = 0; i < btf_vlen(s); i++, m++)
		if (strcmp(btf__name_by_offset(btf, m->name_off), name) == 0)
			return true;
	return false;
}

bool disk_btf_request_start(void)
{
	static int answer = -1; /* kept: the kernel's BTF does not change while the collector runs */
	struct btf *btf;
	int id;

	if (answer >= 0)
		return answer;
	btf = btf__load_vmlinux_btf();
	id = btf ? btf__find_by_name_kind(btf, "request", BTF_KIND_STRUCT) : -1;
	answer = id >= 0 && has_member(btf, btf__type_by_id(btf, (__u32)id), "start_time_ns");
	btf__free(btf);
	return answer;
}
