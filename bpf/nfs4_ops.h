/* nfs4_ops.h — which operation of an NFSv4.x COMPOUND is its main op, and the op key it
 * counts as (RFC 7530, 5661, 7862): the one rule both the wire view (bpf/wire_nfs4.h,
 * from the packet) and the nfsd layer (bpf/nfsd.bpf.c, from nfsd's decoded ops) follow.
 *
 * The main op is the first operation that does more than choose a file or fetch
 * what a client always fetches: the prefix ops SEQUENCE (v4.1+), PUTFH, PUTROOTFH,
 * PUTPUBFH, SAVEFH and RESTOREFH (RENAME and LINK send PUTFH SAVEFH PUTFH op) and the
 * lookup ops LOOKUP, LOOKUPP, GETFH, GETATTR and ACCESS, which walk to a file and read
 * its attributes around the op that matters (Linux opens with PUTFH OPEN GETFH ACCESS
 * GETATTR; libnfs with PUTROOTFH LOOKUP dir GETATTR ACCESS OPEN name ...), are skipped.
 * A compound with no other op counts as its first lookup op (PUTFH LOOKUP GETFH GETATTR
 * is a lookup, PUTFH GETATTR a getattr), and one of prefix ops only (a lone SEQUENCE:
 * a v4.1 lease renewal) as its first op. Key values: bpf/aggregate.h's AGG_NFS_OP_*
 * (catalogue/statistics.def). */
#ifndef STRATA_NFS4_OPS_H
#define STRATA_NFS4_OPS_H

#define NFS4_OPS_SCANNED 10 /* ops looked at for the main op */

enum nfs4_opcode {
	OP4_ACCESS = 3, OP4_COMMIT = 5, OP4_CREATE = 6, OP4_GETATTR = 9, OP4_GETFH = 10, OP4_LINK = 11,
	OP4_LOOKUP = 15, OP4_LOOKUPP = 16, OP4_PUTFH = 22, OP4_PUTPUBFH = 23, OP4_PUTROOTFH = 24,
	OP4_READ = 25, OP4_READDIR = 26, OP4_READLINK = 27, OP4_REMOVE = 28, OP4_RENAME = 29,
	OP4_RESTOREFH = 31, OP4_SAVEFH = 32, OP4_SETATTR = 34, OP4_WRITE = 38, OP4_SEQUENCE = 53, OP4_READ_PLUS = 68,
	OP4_LAST = 75, /* REMOVEXATTR (RFC 8276) */
};

enum { NF4DIR = 2, NF4BLK = 3, NF4CHR = 4, NF4LNK = 5, NF4SOCK = 6, NF4FIFO = 7 };

enum nfs4_role { NFS4_PREFIX, NFS4_LOOKUP_OP, NFS4_MAIN };

static __always_inline enum nfs4_role nfs4_role(__u32 opcode)
{
	switch (opcode) {
	case OP4_SEQUENCE:
	case OP4_PUTFH:
	case OP4_PUTROOTFH:
	case OP4_PUTPUBFH:
	case OP4_SAVEFH:
	case OP4_RESTOREFH:
		return NFS4_PREFIX;
	case OP4_LOOKUP:
	case OP4_LOOKUPP:
	case OP4_GETFH:
	case OP4_GETATTR:
	case OP4_ACCESS:
		return NFS4_LOOKUP_OP;
	}
	return NFS4_MAIN;
}

/* The key of opcode, the main op; type is CREATE's createtype4. */
static __always_inline __u32 nfs4_op_key(__u32 opcode, __u32 type)
{
	switch (opcode) {
	case OP4_ACCESS:    return AGG_NFS_OP_ACCESS;
	case OP4_COMMIT:    return AGG_NFS_OP_COMMIT;
	case OP4_GETATTR:   return AGG_NFS_OP_GETATTR;
	case OP4_LINK:      return AGG_NFS_OP_LINK;
	case OP4_LOOKUP:
	case OP4_LOOKUPP:   return AGG_NFS_OP_LOOKUP;
	case OP4_READ:
	case OP4_READ_PLUS: return AGG_NFS_OP_READ;
	case OP4_READDIR:   return AGG_NFS_OP_READDIR;
	case OP4_READLINK:  return AGG_NFS_OP_READLINK;
	case OP4_REMOVE:    return AGG_NFS_OP_REMOVE;
	case OP4_RENAME:    return AGG_NFS_OP_RENAME;
	case OP4_SETATTR:   return AGG_NFS_OP_SETATTR;
	case OP4_WRITE:     return AGG_NFS_OP_WRITE;
	case OP4_CREATE:
		if (type == NF4DIR)
			return AGG_NFS_OP_MKDIR;
		if (type == NF4LNK)
			return AGG_NFS_OP_SYMLINK;
		if (type >= NF4BLK && type <= NF4FIFO)
			return AGG_NFS_OP_MKNOD;
		return AGG_NFS_OP_COMPOUND;
	}
	return opcode >= OP4_ACCESS && opcode <= OP4_LAST ? AGG_NFS_OP_COMPOUND | opcode : AGG_NFS_OP_COMPOUND;
}

#endif
