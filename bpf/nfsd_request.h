/* nfsd_request.h — what the nfsd layers (bpf/nfsd.bpf.c: requests; bpf/nfsd_io.bpf.c:
 * their file reads and writes) read of an nfsd request: sunrpc's struct svc_rqst through
 * CO-RE, its client as a key, and the export of a file handle (struct knfsd_fh) as a key. */
#ifndef STRATA_NFSD_REQUEST_H
#define STRATA_NFSD_REQUEST_H

#define NFS_PROGRAM 100003
#define AF_INET_ 2
#define AF_INET6_ 10

/* The parts of sunrpc's types read here; CO-RE finds their offsets in the running
 * kernel's sunrpc BTF (the ___nfsd suffix keeps them apart from vmlinux.h). */
struct xdr_buf___nfsd {
	unsigned int len;
} __attribute__((preserve_access_index));

struct svc_rqst___nfsd {
	struct { __u16 ss_family; } rq_addr;
	struct xdr_buf___nfsd rq_arg;
	struct xdr_buf___nfsd rq_res;
	__u32 rq_prog;
	__u32 rq_vers;
	__u32 rq_proc;
	__s64 rq_stime;
	void *rq_argp;
	void *rq_resp;
	void *rq_xprt;
} __attribute__((preserve_access_index));

/* READ(direct, p, field): a plain load where the verifier knows p's BTF type (tp_btf),
 * bpf_probe_read_kernel otherwise (raw_tp). */
#define READ(direct, p, field) ((direct) ? (p)->field : BPF_CORE_READ(p, field))

/* The client as 16 key bytes, all written: IPv6, or IPv4 as ::ffff:a.b.c.d. The address's
 * first bytes are copied by a helper read in both flavours: rq_addr is a struct
 * sockaddr_storage (128 bytes) whose layout a direct load would have to match exactly, and
 * libbpf refuses a CO-RE load whose size differs from the field's (Debian's 6.1.0-56 puts
 * svc_rqst in vmlinux's BTF, where the tp_btf flavour met it). */
static __always_inline void set_client(struct agg_event *ev, struct svc_rqst___nfsd *r)
{
	__u64 *key = (__u64 *)ev->dims[AGG_DIM_CLIENT];
	__u8 sa[24];
	__u16 family;

	if (bpf_probe_read_kernel(sa, sizeof(sa), __builtin_preserve_access_index(&r->rq_addr)))
		__builtin_memset(sa, 0, sizeof(sa));
	family = *(const __u16 *)sa;
	key[0] = 0;
	key[1] = 0;
	if (family == AF_INET_) {
		key[1] = 0xffff0000ull | (__u64)*(const __u32 *)(sa + 4) << 32;
	} else if (family == AF_INET6_) {
		key[0] = *(const __u64 *)(sa + 8);
		key[1] = *(const __u64 *)(sa + 16);
	}
}

/* Bytes of the fsid after a file handle's 4-byte header, by fsid type (the kernel's
 * key_len(), fs/nfsd/nfsfh.h); 0 for a type it does not know. */
static __always_inline __u32 fsid_len(__u8 type)
{
	switch (type) {
	case 1: return 4;   /* FSID_NUM: the export's fsid= */
	case 0:             /* FSID_DEV */
	case 3:             /* FSID_ENCODE_DEV */
	case 4:             /* FSID_UUID4_INUM */
	case 5: return 8;   /* FSID_UUID8 */
	case 2: return 12;  /* FSID_MAJOR_MINOR */
	case 6:             /* FSID_UUID16 */
	case 7: return 16;  /* FSID_UUID16_INUM (24, of which the uuid's 16) */
	}
	return 0;
}

/* The export of the file handle at fh (a struct knfsd_fh: its length, then the handle):
 * key byte 0 is 1, byte 1 the fsid type, bytes 4.. the fsid's first 12 bytes (as
 * /proc/net/rpc/nfsd.fh lists it). All zero ("none") unless a version-1 handle. */
static __always_inline void set_export(struct agg_event *ev, const void *fh)
{
	__u32 *key = (__u32 *)ev->dims[AGG_DIM_EXPORT];
	struct { __u32 size; __u8 version, auth, fsid_type, fileid_type; __u32 fsid[3]; } h;
	__u32 len;

	key[0] = key[1] = key[2] = key[3] = 0;
	if (!fh || bpf_probe_read_kernel(&h, sizeof(h), fh) || h.version != 1)
		return;
	len = fsid_len(h.fsid_type);
	if (!len || h.size < 4 + len)
		return;
	key[0] = 1 | (__u32)h.fsid_type << 8; /* bytes 0 and 1, little-endian */
	key[1] = h.fsid[0];
	key[2] = len > 4 ? h.fsid[1] : 0;
	key[3] = len > 8 ? h.fsid[2] : 0;
}

#endif
