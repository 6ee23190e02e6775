/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Block layer data types (include/linux/blk_types.h): blk_status_t, the
 * request operations and flags, and struct bio.
 *
 * Upstream: include/linux/blk_types.h @ v6.12
 */
#ifndef UK_LINUX_BLK_TYPES_H
#define UK_LINUX_BLK_TYPES_H

#include <uk/linux/atomic.h>
#include <uk/linux/bvec.h>
#include <uk/linux/types.h>

struct bio;
struct block_device;
struct bio_set;
typedef void(bio_end_io_t)(struct bio *);

#ifndef SECTOR_SHIFT
#define SECTOR_SHIFT 9
#endif
#ifndef SECTOR_SIZE
#define SECTOR_SIZE (1 << SECTOR_SHIFT)
#endif

#define PAGE_SECTORS_SHIFT (PAGE_SHIFT - SECTOR_SHIFT)
#define PAGE_SECTORS (1 << PAGE_SECTORS_SHIFT)
#define SECTOR_MASK (PAGE_SECTORS - 1)

/* Block status codes; block/blk-core.c maps them to errnos. */
typedef u8 blk_status_t;
typedef u16 blk_short_t;
#define BLK_STS_OK 0
#define BLK_STS_NOTSUPP ((blk_status_t)1)
#define BLK_STS_TIMEOUT ((blk_status_t)2)
#define BLK_STS_NOSPC ((blk_status_t)3)
#define BLK_STS_TRANSPORT ((blk_status_t)4)
#define BLK_STS_TARGET ((blk_status_t)5)
#define BLK_STS_RESV_CONFLICT ((blk_status_t)6)
#define BLK_STS_MEDIUM ((blk_status_t)7)
#define BLK_STS_PROTECTION ((blk_status_t)8)
#define BLK_STS_RESOURCE ((blk_status_t)9)
#define BLK_STS_IOERR ((blk_status_t)10)
/* device mapper internal retry; never leaves dm */
#define BLK_STS_DM_REQUEUE ((blk_status_t)11)
/* only for REQ_NOWAIT I/O that would block */
#define BLK_STS_AGAIN ((blk_status_t)12)
/* device resource busy: the driver guarantees a queue rerun later */
#define BLK_STS_DEV_RESOURCE ((blk_status_t)13)
#define BLK_STS_ZONE_OPEN_RESOURCE ((blk_status_t)14)
#define BLK_STS_ZONE_ACTIVE_RESOURCE ((blk_status_t)15)
#define BLK_STS_OFFLINE ((blk_status_t)16)
#define BLK_STS_DURATION_LIMIT ((blk_status_t)17)
#define BLK_STS_INVAL ((blk_status_t)19)

/* False for errors that a retry on another path cannot fix. */
static inline bool blk_path_error(blk_status_t error)
{
	switch (error) {
	case BLK_STS_NOTSUPP:
	case BLK_STS_NOSPC:
	case BLK_STS_TARGET:
	case BLK_STS_RESV_CONFLICT:
	case BLK_STS_MEDIUM:
	case BLK_STS_PROTECTION:
		return false;
	}
	return true;
}

blk_status_t errno_to_blk_status(int errno_val); /* errno: the C library's macro */
int blk_status_to_errno(blk_status_t status);
const char *blk_status_to_str(blk_status_t status);

typedef u32 blk_opf_t;
typedef unsigned int blk_qc_t;
/* Request allocation flags: BLK_MQ_REQ_* (include/linux/blk-mq.h). */
typedef __u32 blk_mq_req_flags_t;
#define BLK_QC_T_NONE -1U

#define REQ_OP_BITS 8
#define REQ_OP_MASK ((blk_opf_t)((1 << REQ_OP_BITS) - 1))
#define REQ_FLAG_BITS 24

/* The low bit of an operation is its data direction: set = to the device. */
enum req_op {
	REQ_OP_READ = 0,
	REQ_OP_WRITE = 1,
	REQ_OP_FLUSH = 2,
	REQ_OP_DISCARD = 3,
	REQ_OP_SECURE_ERASE = 5,
	REQ_OP_ZONE_APPEND = 7,
	REQ_OP_WRITE_ZEROES = 9,
	REQ_OP_ZONE_OPEN = 10,
	REQ_OP_ZONE_CLOSE = 11,
	REQ_OP_ZONE_FINISH = 12,
	REQ_OP_ZONE_RESET = 13,
	REQ_OP_ZONE_RESET_ALL = 15,
	REQ_OP_DRV_IN = 34,
	REQ_OP_DRV_OUT = 35,
	REQ_OP_LAST = 36,
};

enum req_flag_bits {
	__REQ_FAILFAST_DEV = REQ_OP_BITS,
	__REQ_FAILFAST_TRANSPORT,
	__REQ_FAILFAST_DRIVER,
	__REQ_SYNC,
	__REQ_META,
	__REQ_PRIO,
	__REQ_NOMERGE,
	__REQ_IDLE,
	__REQ_INTEGRITY,
	__REQ_FUA,
	__REQ_PREFLUSH,
	__REQ_RAHEAD,
	__REQ_BACKGROUND,
	__REQ_NOWAIT,
	__REQ_POLLED,
	__REQ_ALLOC_CACHE,
	__REQ_SWAP,
	__REQ_DRV,
	__REQ_FS_PRIVATE,
	__REQ_ATOMIC,
	__REQ_NOUNMAP, /* REQ_OP_WRITE_ZEROES only */
	__REQ_NR_BITS,
};

#define REQ_FAILFAST_DEV ((blk_opf_t)(1ULL << __REQ_FAILFAST_DEV))
#define REQ_FAILFAST_TRANSPORT ((blk_opf_t)(1ULL << __REQ_FAILFAST_TRANSPORT))
#define REQ_FAILFAST_DRIVER ((blk_opf_t)(1ULL << __REQ_FAILFAST_DRIVER))
#define REQ_SYNC ((blk_opf_t)(1ULL << __REQ_SYNC))
#define REQ_META ((blk_opf_t)(1ULL << __REQ_META))
#define REQ_PRIO ((blk_opf_t)(1ULL << __REQ_PRIO))
#define REQ_NOMERGE ((blk_opf_t)(1ULL << __REQ_NOMERGE))
#define REQ_IDLE ((blk_opf_t)(1ULL << __REQ_IDLE))
#define REQ_INTEGRITY ((blk_opf_t)(1ULL << __REQ_INTEGRITY))
#define REQ_FUA ((blk_opf_t)(1ULL << __REQ_FUA))
#define REQ_PREFLUSH ((blk_opf_t)(1ULL << __REQ_PREFLUSH))
#define REQ_RAHEAD ((blk_opf_t)(1ULL << __REQ_RAHEAD))
#define REQ_BACKGROUND ((blk_opf_t)(1ULL << __REQ_BACKGROUND))
#define REQ_NOWAIT ((blk_opf_t)(1ULL << __REQ_NOWAIT))
#define REQ_POLLED ((blk_opf_t)(1ULL << __REQ_POLLED))
#define REQ_ALLOC_CACHE ((blk_opf_t)(1ULL << __REQ_ALLOC_CACHE))
#define REQ_SWAP ((blk_opf_t)(1ULL << __REQ_SWAP))
#define REQ_DRV ((blk_opf_t)(1ULL << __REQ_DRV))
#define REQ_FS_PRIVATE ((blk_opf_t)(1ULL << __REQ_FS_PRIVATE))
#define REQ_ATOMIC ((blk_opf_t)(1ULL << __REQ_ATOMIC))
#define REQ_NOUNMAP ((blk_opf_t)(1ULL << __REQ_NOUNMAP))

#define REQ_FAILFAST_MASK (REQ_FAILFAST_DEV | REQ_FAILFAST_TRANSPORT | REQ_FAILFAST_DRIVER)
#define REQ_NOMERGE_FLAGS (REQ_NOMERGE | REQ_PREFLUSH | REQ_FUA)

/* bio->bi_flags bits */
enum {
	BIO_PAGE_PINNED,
	BIO_CLONED,
	BIO_BOUNCED,
	BIO_QUIET,
	BIO_CHAIN,
	BIO_REFFED,
	BIO_BPS_THROTTLED,
	BIO_TRACE_COMPLETION,
	BIO_CGROUP_ACCT,
	BIO_QOS_THROTTLED,
	BIO_QOS_MERGED,
	BIO_REMAPPED,
	BIO_ZONE_WRITE_PLUGGING,
	BIO_EMULATES_ZONE_APPEND,
	BIO_FLAG_LAST
};

/*
 * The unit of block I/O: an operation on a device range (bi_iter) over a
 * list of memory segments (bi_io_vec). Only what ukern uses is kept.
 */
struct bio {
	struct bio *bi_next; /* next bio of the same request */
	struct block_device *bi_bdev;
	blk_opf_t bi_opf; /* REQ_OP_* in the low bits, REQ_* flags above */
	unsigned short bi_flags;
	unsigned short bi_ioprio;
	unsigned short bi_write_hint; /* enum rw_hint: 0, no hint, here */
	blk_status_t bi_status;
	atomic_t __bi_remaining;

	struct bvec_iter bi_iter;

	blk_qc_t bi_cookie;
	bio_end_io_t *bi_end_io;
	void *bi_private;

	unsigned short bi_vcnt;	    /* how many bio_vecs are filled in */
	unsigned short bi_max_vecs; /* how many bi_io_vec can hold */
	atomic_t __bi_cnt;	    /* references (bio_get / bio_put) */
	struct bio_vec *bi_io_vec;
	struct bio_set *bi_pool;

	struct bio_vec bi_inline_vecs[]; /* must stay last */
};

#define BIO_RESET_BYTES offsetof(struct bio, bi_max_vecs)
#define BIO_MAX_SECTORS (UINT_MAX >> SECTOR_SHIFT)

static inline enum req_op bio_op(const struct bio *bio)
{
	return static_cast<enum req_op>(bio->bi_opf & REQ_OP_MASK);
}

static inline bool op_is_write(blk_opf_t op)
{
	return !!(op & (__force blk_opf_t)1);
}

/* Driver-private commands (REQ_OP_DRV_IN/OUT), as blk_execute_rq() sends. */
static inline bool blk_op_is_passthrough(blk_opf_t op)
{
	op &= REQ_OP_MASK;
	return op == REQ_OP_DRV_IN || op == REQ_OP_DRV_OUT;
}

static inline bool op_is_flush(blk_opf_t op)
{
	return op & (REQ_FUA | REQ_PREFLUSH);
}

static inline bool op_is_sync(blk_opf_t op)
{
	return (op & REQ_OP_MASK) == REQ_OP_READ || (op & (REQ_SYNC | REQ_FUA | REQ_PREFLUSH));
}

static inline bool op_is_discard(blk_opf_t op)
{
	return (op & REQ_OP_MASK) == REQ_OP_DISCARD;
}

static inline bool op_is_zone_mgmt(enum req_op op)
{
	switch (op & REQ_OP_MASK) {
	case REQ_OP_ZONE_RESET:
	case REQ_OP_ZONE_RESET_ALL:
	case REQ_OP_ZONE_OPEN:
	case REQ_OP_ZONE_CLOSE:
	case REQ_OP_ZONE_FINISH:
		return true;
	default:
		return false;
	}
}

enum stat_group { STAT_READ, STAT_WRITE, STAT_DISCARD, STAT_FLUSH, NR_STAT_GROUPS };

static inline int op_stat_group(enum req_op op)
{
	if (op_is_discard(op))
		return STAT_DISCARD;
	return op_is_write(op);
}

#endif /* UK_LINUX_BLK_TYPES_H */
