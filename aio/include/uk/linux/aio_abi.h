/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The AIO user ABI (include/uapi/linux/aio_abi.h), x86-64 / little-endian
 * layout. Kept under uk/ so that the host's <linux/aio_abi.h> is never
 * shadowed; the structures are binary-identical to the host's.
 *
 * Upstream: include/uapi/linux/aio_abi.h @ v6.12
 */
#ifndef UK_LINUX_AIO_ABI_H
#define UK_LINUX_AIO_ABI_H

#include <stdint.h>

typedef unsigned long aio_context_t;

enum {
	IOCB_CMD_PREAD = 0,
	IOCB_CMD_PWRITE = 1,
	IOCB_CMD_FSYNC = 2,
	IOCB_CMD_FDSYNC = 3,
	/* no 4: that value went to IOCB_CMD_PREADX, an experiment since dropped */
	IOCB_CMD_POLL = 5,
	IOCB_CMD_NOOP = 6,
	IOCB_CMD_PREADV = 7,
	IOCB_CMD_PWRITEV = 8,
};

#define IOCB_FLAG_RESFD (1 << 0)
#define IOCB_FLAG_IOPRIO (1 << 1)

struct io_event {
	uint64_t data;
	uint64_t obj;
	int64_t res;
	int64_t res2;
};

struct iocb {
	uint64_t aio_data;
	uint32_t aio_key;
	int aio_rw_flags;
	uint16_t aio_lio_opcode;
	int16_t aio_reqprio;
	uint32_t aio_fildes;
	uint64_t aio_buf;
	uint64_t aio_nbytes;
	int64_t aio_offset;
	uint64_t aio_reserved2;
	uint32_t aio_flags;
	uint32_t aio_resfd;
};

#ifdef __cplusplus
static_assert(sizeof(struct io_event) == 32, "io_event is ABI");
static_assert(sizeof(struct iocb) == 64, "iocb is ABI");
#endif

#endif /* UK_LINUX_AIO_ABI_H */
