/* load_workingset.c — creates the working set through NFS and looks up its
 * file handles; all RPCs go through the counted issue helpers (setup phase). */
#include "load_workingset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load_pattern.h"

#define SETUP_DEPTH   16        /* writes in flight while creating a file */
#define LOOKUP_DEPTH  32        /* lookups in flight while opening the set */
#define SETUP_CHUNK   (128u << 10)
#define WAIT_S        30.0

void workingset_name(uint32_t i, char name[FILE_NAME_MAX])
{
	snprintf(name, FILE_NAME_MAX, "load-%07u", i);
}

struct lookup_result {
	int stat;           /* nfsstat3, -1 = no reply */
	struct fh fh;
	uint64_t size;
	bool have_size;
};

static void keep_fh(struct fh *dst, const nfs_fh3 *src)
{
	if (src->data.data_len == 0 || src->data.data_len > NFS3_FHSIZE)
		return;
	dst->len = src->data.data_len;
	memcpy(dst->data, src->data.data_val, dst->len);
}

static void on_lookup(struct call *call, int stat, void *res)
{
	struct lookup_result *r = call->arg;
	LOOKUP3res *l = res;

	r->stat = stat;
	if (stat != NFS3_OK)
		return;
	keep_fh(&r->fh, &l->LOOKUP3res_u.resok.object);
	if (l->LOOKUP3res_u.resok.obj_attributes.attributes_follow) {
		r->size = l->LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes.size;
		r->have_size = true;
	}
}

static void on_create(struct call *call, int stat, void *res)
{
	struct lookup_result *r = call->arg;
	CREATE3res *cr = res;

	r->stat = stat;
	if (stat == NFS3_OK && cr->CREATE3res_u.resok.obj.handle_follows)
		keep_fh(&r->fh, &cr->CREATE3res_u.resok.obj.post_op_fh3_u.handle);
}

static void on_status(struct call *call, int stat, void *res)
{
	(void)res;
	*(int *)call->arg = stat;
}

static void on_setup_write(struct call *call, int stat, void *res)
{
	WRITE3res *w = res;

	if (stat == NFS3_OK)
		call->ph->bytes_written += w->WRITE3res_u.resok.count;
}

static int lookup_sync(struct load_client *c, const char *name, struct lookup_result *r)
{
	*r = (struct lookup_result){ .stat = -1 };
	if (issue_lookup(c, &c->setup, &c->root, name, true, on_lookup, r) < 0 ||
	    client_wait_inflight(c, 0, WAIT_S) < 0)
		return -1;
	return 0;
}

static int fill_file(struct load_client *c, uint32_t i, const struct fh *fh)
{
	uint64_t size = c->o->file_size;
	uint32_t chunk = SETUP_CHUNK < c->wtmax ? SETUP_CHUNK : c->wtmax;
	int stat = -1;

	for (uint64_t off = 0; off < size; off += chunk) {
		uint32_t n = size - off < chunk ? (uint32_t)(size - off) : chunk;
		char *buf = malloc(n);

		if (!buf) {
			client_fail(c, "out of memory");
			return -1;
		}
		pattern_fill(buf, n, 0, i, off);
		if (issue_write(c, &c->setup, fh, off, n, UNSTABLE, buf, true,
				on_setup_write, NULL) < 0 ||
		    client_wait_inflight(c, SETUP_DEPTH - 1, WAIT_S) < 0)
			return -1;
		if (*c->sh->stop)
			return -1;
	}
	if (client_wait_inflight(c, 0, WAIT_S) < 0 ||
	    issue_commit(c, &c->setup, fh, on_status, &stat) < 0 ||
	    client_wait_inflight(c, 0, WAIT_S) < 0)
		return -1;
	return stat == NFS3_OK && c->setup.errors == 0 ? 0 : -1;
}

static int create_one(struct load_client *c, uint32_t i)
{
	char name[FILE_NAME_MAX];
	struct lookup_result r;
	int stat = -1;

	workingset_name(i, name);
	if (lookup_sync(c, name, &r) < 0)
		return -1;
	if (r.stat == NFS3_OK && r.have_size && r.size == c->o->file_size)
		return 0;
	if (r.stat == NFS3ERR_NOENT) {
		r = (struct lookup_result){ .stat = -1 };
		if (issue_create(c, &c->setup, &c->root, name, on_create, &r) < 0 ||
		    client_wait_inflight(c, 0, WAIT_S) < 0 || r.stat != NFS3_OK)
			return -1;
		if (r.fh.len == 0 && (lookup_sync(c, name, &r) < 0 || r.stat != NFS3_OK))
			return -1;
	} else if (r.stat == NFS3_OK) {
		/* wrong size: truncate, then rewrite the whole file */
		if (issue_setattr_size(c, &c->setup, &r.fh, 0, on_status, &stat) < 0 ||
		    client_wait_inflight(c, 0, WAIT_S) < 0 || stat != NFS3_OK)
			return -1;
	} else {
		return -1;
	}
	return fill_file(c, i, &r.fh);
}

int workingset_create(struct load_client *c)
{
	for (uint32_t i = (uint32_t)c->idx; i < c->o->files; i += (uint32_t)c->o->clients) {
		if (create_one(c, i) < 0) {
			client_fail(c, "setup of file %u under %s failed", i, c->export);
			return -1;
		}
	}
	return 0;
}

static void on_open_lookup(struct call *call, int stat, void *res)
{
	struct file_ref *f = call->arg;
	LOOKUP3res *l = res;

	if (stat != NFS3_OK)
		return;
	keep_fh(&f->fh, &l->LOOKUP3res_u.resok.object);
	if (l->LOOKUP3res_u.resok.obj_attributes.attributes_follow)
		f->size = l->LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes.size;
}

int workingset_open(struct load_client *c)
{
	const struct load_opts *o = c->o;
	char name[FILE_NAME_MAX];

	c->files = calloc(o->files, sizeof(*c->files));
	if (!c->files) {
		client_fail(c, "out of memory for %u file handles", o->files);
		return -1;
	}
	for (uint32_t i = 0; i < o->files; i++) {
		workingset_name(i, name);
		if (issue_lookup(c, &c->setup, &c->root, name, true, on_open_lookup,
				 &c->files[i]) < 0 ||
		    client_wait_inflight(c, LOOKUP_DEPTH - 1, WAIT_S) < 0)
			return -1;
	}
	if (client_wait_inflight(c, 0, WAIT_S) < 0)
		return -1;
	for (uint32_t i = 0; i < o->files; i++) {
		workingset_name(i, name);
		if (c->files[i].fh.len == 0) {
			client_fail(c, "%s:%s/%s is missing (create the working set with --setup)",
				    o->server, c->export, name);
			return -1;
		}
		if (c->files[i].size < o->file_size) {
			client_fail(c, "%s:%s/%s has %llu bytes, expected %llu (rerun with --setup)",
				    o->server, c->export, name,
				    (unsigned long long)c->files[i].size,
				    (unsigned long long)o->file_size);
			return -1;
		}
	}
	return 0;
}
