// SPDX-License-Identifier: GPL-2.0-only
// ukern-diffcheck: differential conformance of ukern's AIO against the host
// kernel's. Random sequences of io_setup, io_submit, io_getevents,
// io_pgetevents, io_cancel and io_destroy, with good and bad arguments, are
// generated from a seed; each sequence runs once on the host kernel (raw
// system calls) and once on ukern (the ukern_io_*() entry points), on
// equivalent objects (a regular file, one opened with O_DIRECT where the
// directory's file system has it, a non-blocking pipe, an eventfd,
// /dev/null, a directory, an O_PATH descriptor, closed and bad descriptor
// numbers) and the same user memory, and the two transcripts are compared:
// every return value and errno, and the completions (obj, data, res, res2)
// as a multiset. A difference that the allowlist below explains (the host
// runs a newer kernel than ukern's 6.12 base) is counted as known; any
// other makes the exit status 1. Run by `tools/ukern diffcheck`.
//
//   ukern-diffcheck [--seed S] [--sequences N] [--first I] [--ops M] [--verbose]
//     --seed S       the campaign's seed (default 1)
//     --sequences N  how many sequences (default 1000)
//     --first I      start at sequence I (a difference prints its I)
//     --ops M        at most M operations per sequence (default 16)
//     --verbose      print both transcripts of every sequence that differs,
//                    and of every sequence with --sequences 1
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/cpumask.h>

#include "aio_backend_testlib.h"

namespace
{

using aiotest::Backend;
using aiotest::host_has_aio;
using aiotest::HostBackend;
using aiotest::sys_ret;
using aiotest::UkernBackend;

constexpr unsigned long kKernelAddr = 0xffff880000000000UL;
constexpr int kSlots = 8;     // iocbs a sequence uses
constexpr int kMaxIov = 1025; // one past UIO_MAXIOV
constexpr size_t kPage = 4096;
constexpr size_t kFileSize = 16384;
constexpr int kClosedFd = 900; // a descriptor number that is not open
constexpr int kBadFd = 99999;  // past any RLIMIT_NOFILE here
constexpr long kWatchdogNs = 50 * 1000 * 1000;

// ---------------------------------------------------------------------
// User memory: the same addresses for both runs, so that obj, iocb and
// buffer pointers mean the same thing on both sides.

enum Page {
	kPgScratch = 0, // ctx variables, timespecs, sigsets, iocb pointer arrays, events
	kPgIocb = 1,	// the iocb slots
	kPgIov = 2,	// 5 pages of iovecs
	kPgData = 7,	// 4 pages of data buffers
	kPgRo = 11,	// read-only
	kPgNone = 12,	// PROT_NONE
	kNrPages = 13,
};

struct Scratch {
	aio_context_t ctxv;
	aio_context_t ctx_nonzero;
	struct timespec ts;
	struct __aio_sigset sig;
	sigset_t mask;
	struct iocb *ptrs[32];
	struct io_event ev[64];
};
static_assert(sizeof(Scratch) <= kPage, "scratch fits its page");

char *mem;

char *page(int n)
{
	return mem + n * kPage;
}

Scratch *scratch()
{
	return (Scratch *)page(kPgScratch);
}

struct iocb *slot(int i)
{
	return (struct iocb *)page(kPgIocb) + i;
}

void mem_init()
{
	mem = (char *)mmap(nullptr, kNrPages * kPage, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	memset(page(kPgRo), 0, kPage);
	mprotect(page(kPgRo), kPage, PROT_READ);
	mprotect(page(kPgNone), kPage, PROT_NONE);
}

void mem_reset()
{
	memset(mem, 0, kPgRo * kPage);
	for (size_t i = 0; i < 4 * kPage; i++)
		page(kPgData)[i] = (char)('A' + i % 23);
}

// ---------------------------------------------------------------------
// The sequence: operations generated from a seed, independent of either
// backend.

struct Rng {
	uint64_t s;
	uint64_t next()
	{
		uint64_t z = (s += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		return z ^ (z >> 31);
	}
	unsigned below(unsigned n)
	{
		return (unsigned)(next() % n);
	}
	bool pct(unsigned p)
	{
		return below(100) < p;
	}
	template <class T, size_t N> T pick(const T (&a)[N])
	{
		return a[below(N)];
	}
};

enum Fd {
	kFdFile,
	kFdFileRo,
	kFdFileWo,
	kFdDirect,
	kFdPipeR,
	kFdPipeW,
	kFdEventfd,
	kFdDevNull,
	kFdDir,
	kFdPath,
	kFdClosed,
	kFdBad,
	kFdNeg,
	kNrFds,
};
const char *const fd_name[kNrFds] = { "file",	"file_ro", "file_wo", "direct", "pipe_r",
				      "pipe_w", "eventfd", "devnull", "dir",	"opath",
				      "closed", "badfd",   "fd-1" };

// Where a pointer argument points.
enum Ptr {
	kPtrGood,
	kPtrNull,
	kPtrKernel,
	kPtrUnmapped,
	kPtrRo,
	kPtrMisaligned,
	kNrPtrs,
};
const char *const ptr_name[kNrPtrs] = { "good", "null", "kernel", "unmapped", "ro", "misaligned" };

enum Ctx {
	kCtxSlot0,
	kCtxSlot1,
	kCtxBogus,
	kCtxZero,
	kCtxKernel,
	kCtxNotRing,
	kCtxStale,
	kNrCtxs,
};
const char *const ctx_name[kNrCtxs] = {
	"ctx0", "ctx1", "bogus", "0", "kernel", "notring", "stale"
};

enum Timeout {
	kTsZero,
	kTs1ms,
	kTsNull,
	kTsKernel,
	kTsUnmapped,
	kTsBigNsec,
	kTsNegNsec,
	kTsNegSec,
	kNrTs,
};
const char *const ts_name[kNrTs] = { "{0,0}",	 "{0,1ms}",   "NULL",	"kernel",
				     "unmapped", "{0,1e9+5}", "{0,-1}", "{-1,0}" };

enum Sig {
	kSigNull,
	kSigEmpty,
	kSigMaskNull,
	kSigSize7,
	kSigKernel,
	kSigMaskKernel,
	kNrSigs,
};
const char *const sig_name[kNrSigs] = { "NULL",	     "{empty,8}", "{NULL,8}",
					"{empty,7}", "kernel",	  "{kernel,8}" };

enum OpKind {
	kOpSetup,
	kOpSubmit,
	kOpGetevents,
	kOpPgetevents,
	kOpCancel,
	kOpDestroy,
	kOpPipeWrite,
	kOpEfdWrite,
	kOpPipeDrain,
};

struct IocbSpec {
	int slot;
	uint16_t opcode;
	Fd fd;
	Ptr buf;
	uint64_t nbytes;
	int64_t offset;
	uint64_t reserved2;
	uint32_t key;
	int rw_flags;
	int16_t reqprio;
	uint32_t flags;
	Fd resfd;
	bool resfd2; // resfd: the second eventfd, which no request reads or polls
	uint64_t data;
	// PREADV/PWRITEV: iovecs in the iov pages; bad_iov: one has a bad base
	int niov;
	bool bad_iov;
};

struct Op {
	OpKind kind;
	Ctx ctx;
	int slot; // setup: ctx slot; cancel: iocb slot
	unsigned setup_nr;
	Ptr ptr; // setup: ctxp; submit: iocbpp; getevents: events; cancel: result
	long nr;
	long min_nr;
	Timeout ts;
	Sig sig;
	int null_at; // submit: this entry of the array is NULL (-1: none)
	Ptr entry;   // submit: the pointer put at null_at
	bool key1;   // cancel: aio_key set to 1 first
	Ptr iocb;    // cancel: the iocb pointer
	unsigned bytes;
	std::vector<IocbSpec> cbs;
};

// Which descriptors a request kind is tried on, weighted to the useful ones.
Fd pick_fd(Rng &r)
{
	static const Fd common[] = { kFdFile,  kFdFile,	 kFdFile,    kFdDirect, kFdDirect,
				     kFdPipeR, kFdPipeW, kFdEventfd, kFdDevNull };
	if (r.pct(85))
		return r.pick(common);
	return (Fd)r.below(kNrFds);
}

bool reads_or_writes(const IocbSpec &s)
{
	return s.opcode == IOCB_CMD_PREAD || s.opcode == IOCB_CMD_PWRITE ||
	       s.opcode == IOCB_CMD_PREADV || s.opcode == IOCB_CMD_PWRITEV;
}

bool on_test_file(const IocbSpec &s)
{
	return s.fd == kFdFile || s.fd == kFdFileRo || s.fd == kFdFileWo || s.fd == kFdDirect;
}

IocbSpec gen_iocb(Rng &r, int slot_nr)
{
	static const uint16_t ops[] = { IOCB_CMD_PREAD,	 IOCB_CMD_PREAD,  IOCB_CMD_PWRITE,
					IOCB_CMD_PWRITE, IOCB_CMD_PREADV, IOCB_CMD_PWRITEV,
					IOCB_CMD_FSYNC,	 IOCB_CMD_FDSYNC, IOCB_CMD_POLL,
					IOCB_CMD_POLL };
	static const uint16_t bad_ops[] = { IOCB_CMD_NOOP, 4, 9, 77, 0xffff };
	static const uint64_t sizes[] = { 0, 1, 8, 16, 100, 512, 4096, 8192, 1 << 20 };
	static const uint64_t bad_sizes[] = { 1ULL << 40, (uint64_t)-1, 1ULL << 63, 0x7fffffffULL };
	static const int64_t offs[] = { 0, 0, 1, 512, 4096, 8192, 16000, 100000 };
	static const int64_t bad_offs[] = { -1, -4096, INT64_MAX, 1LL << 40, INT64_MIN };
	static const int rwf[] = { 1 /* HIPRI */,     2 /* DSYNC */,
				   4 /* SYNC */,      8 /* NOWAIT */,
				   0x10 /* APPEND */, 0x20 /* NOAPPEND */,
				   0x40 /* ATOMIC */, 0x80 /* DONTCACHE */,
				   (int)0x80000000,   0x100 };
	static const int16_t prios[] = { (int16_t)(2 << 13 | 4), (int16_t)(3 << 13),
					 (int16_t)(1 << 13),	 (int16_t)(7 << 13),
					 (int16_t)(0 << 13 | 3), 0 };
	static const uint16_t masks[] = { POLLIN,	    POLLIN, POLLOUT,	POLLPRI,
					  POLLIN | POLLOUT, 0,	    POLLRDNORM, POLLHUP };
	IocbSpec s{};

	s.slot = slot_nr;
	s.opcode = r.pct(92) ? r.pick(ops) : r.pick(bad_ops);
	s.fd = pick_fd(r);
	s.data = r.next() & 0xffffffffffULL;
	s.resfd = kFdEventfd;
	if (s.opcode == IOCB_CMD_POLL) {
		s.buf = kPtrGood; // aio_buf holds the mask
		s.nbytes = r.pct(95) ? 0 : 1;
		s.offset = r.pct(95) ? 0 : 1;
		s.rw_flags = r.pct(95) ? 0 : 1;
		s.reqprio = (int16_t)r.pick(masks);
		if (r.pct(5))
			s.reqprio = -1; // a mask beyond 16 bits, below
		if (s.fd == kFdFile || s.fd == kFdDirect)
			s.fd = r.pct(50) ? kFdPipeR : kFdEventfd;
	} else if (s.opcode == IOCB_CMD_FSYNC || s.opcode == IOCB_CMD_FDSYNC) {
		s.buf = r.pct(90) ? kPtrNull : kPtrGood;
		s.nbytes = r.pct(90) ? 0 : 1;
		s.offset = r.pct(90) ? 0 : 1;
		s.rw_flags = r.pct(95) ? 0 : r.pick(rwf);
	} else {
		static const Ptr bufs[] = { kPtrGood,	  kPtrGood,	  kPtrGood, kPtrGood,
					    kPtrGood,	  kPtrMisaligned, kPtrNull, kPtrKernel,
					    kPtrUnmapped, kPtrRo };
		s.buf = r.pick(bufs);
		s.nbytes = r.pct(92) ? r.pick(sizes) : r.pick(bad_sizes);
		s.offset = r.pct(92) ? r.pick(offs) : r.pick(bad_offs);
		if (r.pct(15))
			s.rw_flags = r.pick(rwf);
		if (s.opcode == IOCB_CMD_PREADV || s.opcode == IOCB_CMD_PWRITEV) {
			static const int niovs[] = { 0, 1, 2, 3, 4, 1024, kMaxIov };
			s.niov = r.pick(niovs);
			s.bad_iov = r.pct(8);
		}
	}
	if (r.pct(3))
		s.reserved2 = 1;
	if (r.pct(5))
		s.key = 7;
	if (r.pct(10)) {
		s.flags = 1; // IOCB_FLAG_RESFD
		static const Fd resfds[] = { kFdEventfd, kFdEventfd, kFdEventfd, kFdFile,
					     kFdClosed,	 kFdBad,     kFdPipeR };
		s.resfd = r.pick(resfds);
	}
	if (r.pct(5)) {
		s.flags |= 2; // IOCB_FLAG_IOPRIO
		if (s.opcode != IOCB_CMD_POLL)
			s.reqprio = r.pick(prios);
	}
	if (r.pct(2))
		s.flags |= 1 << 5; // no such flag
	// A request that completes in a worker (an fsync, a poll) signals its
	// eventfd after its event shows in the ring, at a time that no call of
	// the sequence waits for: a read or poll of that eventfd in the same
	// batch, or right after the wait, would find the count 0 or 1 by
	// chance. Such a request signals a second eventfd instead.
	s.resfd2 =
		s.resfd == kFdEventfd && (s.opcode == IOCB_CMD_FSYNC ||
					  s.opcode == IOCB_CMD_FDSYNC || s.opcode == IOCB_CMD_POLL);
	return s;
}

Ptr pick_ptr(Rng &r, unsigned good_pct)
{
	if (r.pct(good_pct))
		return kPtrGood;
	return (Ptr)(1 + r.below(kNrPtrs - 1));
}

Ctx pick_ctx(Rng &r)
{
	if (r.pct(88))
		return r.pct(80) ? kCtxSlot0 : kCtxSlot1;
	return (Ctx)(2 + r.below(kNrCtxs - 2));
}

std::vector<Op> generate(uint64_t seed, int max_ops)
{
	Rng r{ seed };
	std::vector<Op> seq;
	int n = 2 + (int)r.below(max_ops - 1);
	static const unsigned nrs[] = { 1, 1, 2, 4, 8, 32, 128 };
	static const unsigned bad_nrs[] = { 0, (unsigned)-1, 0x80000000u, 100000, 0x7fffffffu };

	for (int i = 0; i < n; i++) {
		Op op{};
		unsigned k = r.below(100);

		op.null_at = -1;
		if (i == 0 && r.pct(95))
			k = 0;
		if (k < 8) {
			op.kind = kOpSetup;
			op.slot = i == 0 ? 0 : (int)r.below(2);
			op.setup_nr = r.pct(85) ? r.pick(nrs) : r.pick(bad_nrs);
			op.ptr = pick_ptr(r, 85);
			if (op.ptr == kPtrMisaligned)
				op.ptr = kPtrGood;
			if (r.pct(5))
				op.ptr = kPtrMisaligned; // stands for: *ctxp != 0
		} else if (k < 50) {
			op.kind = kOpSubmit;
			op.ctx = pick_ctx(r);
			op.nr = 1 + r.below(4);
			if (r.pct(8)) {
				static const long bad[] = { 0, -1, LONG_MIN, 1L << 40, 32 };
				op.nr = r.pick(bad);
			}
			op.ptr = pick_ptr(r, 92);
			if (op.ptr == kPtrMisaligned)
				op.ptr = kPtrGood;
			int ncb = op.nr > 0 && op.nr <= 4 ? (int)op.nr : 4;
			bool pipe_poll = false, pipe_rw = false;
			int first_slot = (int)r.below(kSlots);
			for (int j = 0; j < ncb; j++) {
				// distinct slots: each entry its own iocb
				IocbSpec s = gen_iocb(r, (first_slot + j) % kSlots);

				// A poll and a read of the same pipe or eventfd in
				// one batch complete in an order that only
				// timing decides: keep them in separate batches.
				bool pollish = s.opcode == IOCB_CMD_POLL;
				bool rw = (s.fd == kFdPipeR || s.fd == kFdEventfd) &&
					  s.opcode != IOCB_CMD_POLL;
				if ((pollish && pipe_rw) || (rw && pipe_poll))
					s.fd = kFdFile;
				pipe_poll |= pollish;
				pipe_rw |= rw;
				op.cbs.push_back(s);
			}
			// ukern sends O_DIRECT on a host file to an io_uring,
			// where it completes after io_submit() returns, as on a
			// block device; the host's tmpfs completes it inside
			// io_submit(). A later read or write of the same file in
			// the batch would see the file before or after it by
			// chance (its size, for a write beyond the end): such a
			// direct request goes through the buffered descriptor.
			for (size_t j = 0; j < op.cbs.size(); j++) {
				if (op.cbs[j].fd != kFdDirect || !reads_or_writes(op.cbs[j]))
					continue;
				for (size_t l = j + 1; l < op.cbs.size(); l++)
					if (on_test_file(op.cbs[l]) && reads_or_writes(op.cbs[l]))
						op.cbs[j].fd = kFdFile;
			}
			if (r.pct(6)) {
				op.null_at = (int)r.below(ncb);
				static const Ptr e[] = { kPtrNull, kPtrKernel, kPtrUnmapped,
							 kPtrMisaligned };
				op.entry = r.pick(e);
			}
		} else if (k < 75) {
			op.kind = r.pct(70) ? kOpGetevents : kOpPgetevents;
			op.ctx = pick_ctx(r);
			static const long nrs2[] = { 1, 2, 4, 8, 64 };
			op.nr = r.pick(nrs2);
			op.min_nr = r.below(3);
			if (r.pct(10)) {
				static const long bad[] = { -1, LONG_MIN, 0 };
				op.nr = r.pick(bad);
			}
			if (r.pct(8)) {
				static const long bad[] = { -1, 65, LONG_MIN, 9 };
				op.min_nr = r.pick(bad);
			}
			op.ptr = pick_ptr(r, 90);
			op.ts = r.pct(70) ? kTsZero : (Timeout)r.below(kNrTs);
			op.sig = r.pct(60) ? kSigNull : (Sig)r.below(kNrSigs);
		} else if (k < 83) {
			op.kind = kOpCancel;
			op.ctx = pick_ctx(r);
			op.slot = (int)r.below(kSlots);
			op.ptr = pick_ptr(r, 85);
			op.iocb = pick_ptr(r, 90);
			op.key1 = r.pct(5);
		} else if (k < 88) {
			op.kind = kOpDestroy;
			op.ctx = pick_ctx(r);
		} else if (k < 94) {
			op.kind = kOpPipeWrite;
			op.bytes = 1 + r.below(64);
		} else if (k < 97) {
			op.kind = kOpEfdWrite;
		} else {
			op.kind = kOpPipeDrain;
		}
		seq.push_back(op);
	}
	return seq;
}

// ---------------------------------------------------------------------
// The objects a run works on, made afresh for each run.

std::string dir_path;
bool have_odirect;

struct Env {
	int fd[kNrFds];
	int eventfd2; // the resfd of requests that complete in a worker
	std::string file;

	void open_all(int run)
	{
		file = dir_path + "/f" + std::to_string(run);
		int f = open(file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		std::string content(kFileSize, 0);
		int p[2];

		for (size_t i = 0; i < kFileSize; i++)
			content[i] = (char)('a' + i % 26);
		if (f < 0 || write(f, content.data(), kFileSize) != (ssize_t)kFileSize) {
			perror("ukern-diffcheck: the test file");
			exit(2);
		}
		fd[kFdFile] = f;
		fd[kFdFileRo] = open(file.c_str(), O_RDONLY | O_CLOEXEC);
		fd[kFdFileWo] = open(file.c_str(), O_WRONLY | O_CLOEXEC);
		fd[kFdDirect] =
			open(file.c_str(), O_RDWR | O_CLOEXEC | (have_odirect ? O_DIRECT : 0));
		if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0) {
			perror("pipe2");
			exit(2);
		}
		fd[kFdPipeR] = p[0];
		fd[kFdPipeW] = p[1];
		if (write(p[1], content.data(), 100) != 100)
			exit(2);
		fd[kFdEventfd] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		eventfd2 = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (eventfd2 < 0) {
			perror("ukern-diffcheck: eventfd");
			exit(2);
		}
		fd[kFdDevNull] = open("/dev/null", O_RDWR | O_CLOEXEC);
		fd[kFdDir] = open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		fd[kFdPath] = open(file.c_str(), O_PATH | O_CLOEXEC);
		fd[kFdClosed] = kClosedFd;
		fd[kFdBad] = kBadFd;
		fd[kFdNeg] = -1;
		for (int i = 0; i < kNrFds; i++)
			if (fd[i] == -1 && i != kFdNeg) {
				fprintf(stderr, "ukern-diffcheck: cannot open %s\n", fd_name[i]);
				exit(2);
			}
	}
	void close_all()
	{
		for (int i = 0; i < kFdClosed; i++)
			close(fd[i]);
		close(eventfd2);
		unlink(file.c_str());
	}
};

// ---------------------------------------------------------------------
// A watchdog for a call that may sleep without end: a timer signal to this
// thread alone, whose handler does nothing, so that the call returns -EINTR
// on both sides.

timer_t watchdog;

void on_watchdog(int) {}

void watchdog_init()
{
	struct sigaction sa = {};
	struct sigevent sev = {};

	sa.sa_handler = on_watchdog; // no SA_RESTART
	sigaction(SIGALRM, &sa, nullptr);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGALRM;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &watchdog) < 0) {
		perror("timer_create");
		exit(2);
	}
}

void watchdog_arm(bool on)
{
	struct itimerspec it = {};

	if (on)
		it.it_value.tv_nsec = kWatchdogNs;
	timer_settime(watchdog, 0, &it, nullptr);
}

// ---------------------------------------------------------------------
// Running a sequence on one backend.

struct aio_ring_hdr {
	unsigned id, nr, head, tail, magic, compat_features, incompat_features, header_length;
};

std::string err_str(long r)
{
	if (r >= 0)
		return std::to_string(r);
	const char *n = strerrorname_np((int)-r);
	return n ? std::string("-") + n : std::to_string(r);
}

std::string hex(uint64_t v)
{
	char b[32];

	snprintf(b, sizeof(b), "%#" PRIx64, v);
	return b;
}

void *ptr_of(Ptr p, void *good)
{
	switch (p) {
	case kPtrGood:
		return good;
	case kPtrNull:
		return nullptr;
	case kPtrKernel:
		return (void *)kKernelAddr;
	case kPtrUnmapped:
		return page(kPgNone);
	case kPtrRo:
		return page(kPgRo);
	case kPtrMisaligned:
		return (char *)good + 1;
	default:
		return good;
	}
}

struct PendingPoll {
	int slot;
	Fd fd;
	unsigned events;
};

struct CtxModel {
	aio_context_t ctx = 0;
	bool live = false;
	long expect = 0; // requests that complete (or have completed)
	long reaped = 0;
	long recorded = 0; // completions recorded, counted from the first
	std::vector<PendingPoll> polls;
};

struct Result {
	std::vector<std::string> lines;
	std::multiset<std::string> events;	  // obj, data, res, res2
	std::map<std::string, std::string> names; // event -> the request it names
	bool settle_timeout = false;
};

class Runner
{
      public:
	Runner(Backend &b, int run) : b_(b)
	{
		mem_reset();
		env_.open_all(run);
	}
	~Runner()
	{
		env_.close_all();
	}

	Result run(const std::vector<Op> &seq)
	{
		for (size_t i = 0; i < seq.size(); i++)
			step(seq[i], (int)i);
		finish();
		return std::move(res_);
	}

      private:
	Backend &b_;
	Env env_;
	Result res_;
	std::vector<CtxModel> ctxs_;
	int slot_ctx_[2] = { -1, -1 };
	aio_context_t stale_ = ~0UL;
	// What each request was submitted as, by its slot and aio_data, for
	// naming its event: a slot may be filled again before its event is read.
	std::map<std::pair<int, uint64_t>, std::string> submitted_;

	void log(int i, const std::string &what, long r)
	{
		res_.lines.push_back(std::to_string(i) + " " + what + " = " + err_str(r));
	}

	CtxModel *model_of(aio_context_t ctx)
	{
		for (auto &m : ctxs_)
			if (m.live && m.ctx == ctx)
				return &m;
		return nullptr;
	}

	aio_context_t ctx_value(Ctx c)
	{
		switch (c) {
		case kCtxSlot0:
		case kCtxSlot1: {
			int k = slot_ctx_[c == kCtxSlot1];
			if (k < 0)
				return 0;
			// A destroyed context whose address a later ring took:
			// as kCtxStale.
			if (!ctxs_[k].live && model_of(ctxs_[k].ctx))
				return ~0UL;
			return ctxs_[k].ctx;
		}
		case kCtxBogus:
			return ~0UL;
		case kCtxZero:
			return 0;
		case kCtxKernel:
			return kKernelAddr;
		case kCtxNotRing:
			return (aio_context_t)page(kPgData);
		case kCtxStale:
			// A destroyed context's address that a later io_setup()
			// has not taken again (the two kernels place rings
			// differently).
			return model_of(stale_) ? ~0UL : stale_;
		default:
			return ~0UL;
		}
	}

	static long ring_avail(aio_context_t ctx)
	{
		auto *r = (aio_ring_hdr *)ctx;
		unsigned head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		unsigned tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

		if (r->nr == 0)
			return 0;
		return tail >= head ? tail - head : r->nr - head + tail;
	}

	bool fd_ready(Fd f, unsigned events)
	{
		struct pollfd p = { env_.fd[f], (short)(events | POLLERR | POLLHUP), 0 };

		return poll(&p, 1, 0) == 1 && (p.revents & p.events);
	}

	// Waits (bounded) until every request that must have completed by
	// now shows in the ring, so that what an io_getevents() finds does
	// not depend on timing.
	void settle(CtxModel *m)
	{
		if (!m || !m->live)
			return;
		struct timespec start, now;

		clock_gettime(CLOCK_MONOTONIC, &start);
		for (;;) {
			for (size_t i = 0; i < m->polls.size();) {
				if (fd_ready(m->polls[i].fd, m->polls[i].events)) {
					m->expect++;
					m->polls.erase(m->polls.begin() + i);
				} else {
					i++;
				}
			}
			if (ring_avail(m->ctx) >= m->expect - m->reaped)
				return;
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - start.tv_sec >= 3) {
				res_.settle_timeout = true;
				return;
			}
			struct timespec d = { 0, 50000 };
			nanosleep(&d, nullptr);
		}
	}

	void settle_all()
	{
		for (auto &m : ctxs_)
			settle(&m);
	}

	void record_event(const struct io_event &e)
	{
		std::string obj = hex(e.obj), what;

		for (int k = 0; k < kSlots; k++)
			if (e.obj == (uint64_t)(uintptr_t)slot(k)) {
				auto it = submitted_.find({ k, e.data });

				obj = "cb" + std::to_string(k);
				if (it != submitted_.end())
					what = " " + it->second;
			}
		std::string key = obj + " data=" + hex(e.data) + " res=" + err_str(e.res) +
				  " res2=" + std::to_string(e.res2);
		res_.events.insert(key);
		res_.names[key] = obj + what + key.substr(obj.size());
	}

	// Records every completion the ring holds that is not recorded yet.
	// A call that reaps fewer events than the ring holds takes the oldest,
	// and which ones those are depends on the order in which the requests
	// completed (an fsync's worker against an inline read), so the events
	// are recorded from the ring before each call that reads it: what is
	// compared is the set of completions, not the part of it that one call
	// happens to return.
	void peek_ring(CtxModel *m)
	{
		if (!m || !m->live)
			return;
		auto *r = (aio_ring_hdr *)m->ctx;
		const auto *ring = (const struct io_event *)(r + 1);
		unsigned head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		long avail = ring_avail(m->ctx);

		if (r->nr == 0)
			return;
		for (long k = std::max(m->recorded, m->reaped); k < m->reaped + avail; k++)
			record_event(ring[(head + (unsigned long)(k - m->reaped)) % r->nr]);
		m->recorded = std::max(m->recorded, m->reaped + avail);
	}

	// Counts n reaped events and records those that peek_ring() has not.
	void reaped(CtxModel *m, long n, const struct io_event *ev)
	{
		for (long i = 0; i < n; i++)
			if (m->reaped + i >= m->recorded && ev)
				record_event(ev[i]);
		m->reaped += n;
		m->recorded = std::max(m->recorded, m->reaped);
	}

	void fill_iocb(const IocbSpec &s)
	{
		struct iocb *cb = slot(s.slot);
		auto *iov = (struct iovec *)page(kPgIov);
		char *data = page(kPgData);

		memset(cb, 0, sizeof(*cb));
		cb->aio_data = s.data;
		cb->aio_key = s.key;
		cb->aio_rw_flags = s.rw_flags;
		cb->aio_lio_opcode = s.opcode;
		cb->aio_fildes = (uint32_t)env_.fd[s.fd];
		cb->aio_reserved2 = s.reserved2;
		cb->aio_flags = s.flags;
		cb->aio_resfd = (uint32_t)(s.resfd2 ? env_.eventfd2 : env_.fd[s.resfd]);
		cb->aio_offset = s.offset;
		if (s.opcode == IOCB_CMD_POLL) {
			cb->aio_buf = s.reqprio == -1 ? 0x10001 : (uint16_t)s.reqprio;
			cb->aio_nbytes = s.nbytes;
			return;
		}
		cb->aio_reqprio = s.reqprio;
		// Each slot has its own 2 KiB of the data pages (4 KiB-aligned
		// for the even slots), so that requests in flight together do
		// not share a buffer.
		void *good = data + (s.slot % 8) * 2048;
		if (s.opcode == IOCB_CMD_PREADV || s.opcode == IOCB_CMD_PWRITEV) {
			struct iovec *v = iov + (s.slot % 2) * 4;

			if (s.niov > 4)
				v = iov; // the long vectors use every iovec
			for (int k = 0; k < s.niov; k++) {
				v[k].iov_base = (char *)good + (k % 4) * 256;
				v[k].iov_len = s.niov > 4 ? 1 : 256;
			}
			if (s.bad_iov && s.niov > 0)
				v[s.niov - 1].iov_base = (void *)kKernelAddr;
			cb->aio_buf = (uint64_t)(uintptr_t)ptr_of(s.buf, v);
			cb->aio_nbytes = (uint64_t)s.niov;
			if (s.nbytes >= (1ULL << 40))
				cb->aio_nbytes = s.nbytes;
			return;
		}
		cb->aio_buf = (uint64_t)(uintptr_t)ptr_of(s.buf, good);
		cb->aio_nbytes = s.nbytes;
#ifdef UKERN_SANITIZER
		// The sanitizers' pread/pwrite interceptors check the whole
		// range before the call: keep it inside this memory (a
		// length with the sign bit still reaches the kernel's check).
		char *end = page(kPgNone) + kPage, *b = (char *)(uintptr_t)cb->aio_buf;
		if (b >= mem && b < end && (int64_t)s.nbytes >= 0 && s.nbytes > (uint64_t)(end - b))
			cb->aio_nbytes = (uint64_t)(end - b);
#endif
	}

	static std::string describe(const IocbSpec &s)
	{
		static const char *const names[] = { "PREAD", "PWRITE", "FSYNC",  "FDSYNC", "op4",
						     "POLL",  "NOOP",	"PREADV", "PWRITEV" };
		std::string d = s.opcode < 9 ? names[s.opcode] : "op" + std::to_string(s.opcode);

		d += " " + std::string(fd_name[s.fd]);
		if (s.opcode == IOCB_CMD_POLL) {
			d += " ev=" +
			     (s.reqprio == -1 ? std::string("0x10001") : hex((uint16_t)s.reqprio));
			if (s.nbytes || s.offset || s.rw_flags)
				d += " +nbytes/off/rwf";
		} else if (s.opcode == IOCB_CMD_PREADV || s.opcode == IOCB_CMD_PWRITEV) {
			d += " iov=" + std::to_string(s.niov) + (s.bad_iov ? "(bad)" : "") +
			     " arr=" + ptr_name[s.buf] + " off=" + std::to_string(s.offset);
			if (s.nbytes >= (1ULL << 40))
				d += " nr=" + hex(s.nbytes);
		} else {
			d += " buf=" + std::string(ptr_name[s.buf]) + " n=" + hex(s.nbytes) +
			     " off=" + std::to_string(s.offset);
		}
		if (s.rw_flags)
			d += " rwf=" + hex((uint32_t)s.rw_flags);
		if (s.reserved2)
			d += " reserved2";
		if (s.key)
			d += " key=" + std::to_string(s.key);
		if (s.flags & 1)
			d += " resfd=" + std::string(s.resfd2 ? "eventfd2" : fd_name[s.resfd]);
		if (s.flags & 2)
			d += " ioprio=" + hex((uint16_t)s.reqprio);
		if (s.flags & ~3u)
			d += " flags=" + hex(s.flags);
		return d;
	}

	void step(const Op &op, int i)
	{
		Scratch *sc = scratch();

		switch (op.kind) {
		case kOpSetup: {
			aio_context_t *ctxp = (aio_context_t *)ptr_of(op.ptr, &sc->ctxv);
			sc->ctxv = 0;
			if (op.ptr == kPtrMisaligned) {
				sc->ctx_nonzero = 12345;
				ctxp = &sc->ctx_nonzero;
			}
			long r = b_.setup(op.setup_nr, ctxp);
			log(i,
			    "io_setup slot" + std::to_string(op.slot) +
				    " nr=" + std::to_string(op.setup_nr) + " ctxp=" +
				    (op.ptr == kPtrMisaligned ? "nonzero" : ptr_name[op.ptr]),
			    r);
			if (r == 0 && op.ptr == kPtrGood) {
				CtxModel m;
				m.ctx = sc->ctxv;
				m.live = true;
				ctxs_.push_back(m);
				slot_ctx_[op.slot] = (int)ctxs_.size() - 1;
			}
			break;
		}
		case kOpSubmit: {
			aio_context_t ctx = ctx_value(op.ctx);
			CtxModel *m = model_of(ctx);
			std::string d = "io_submit " + std::string(ctx_name[op.ctx]) +
					" nr=" + std::to_string(op.nr) +
					" arr=" + ptr_name[op.ptr] + " [";

			for (size_t k = 0; k < op.cbs.size(); k++) {
				fill_iocb(op.cbs[k]);
				sc->ptrs[k] = slot(op.cbs[k].slot);
				d += (k ? " | cb" : "cb") + std::to_string(op.cbs[k].slot) + " " +
				     describe(op.cbs[k]);
				if ((int)k == op.null_at) {
					sc->ptrs[k] = (struct iocb *)ptr_of(op.entry, sc->ptrs[k]);
					d += std::string(" <- ") + ptr_name[op.entry];
				}
			}
			d += "]";
			// Entries past the batch: the unmapped page, so that a
			// huge nr ends in -EFAULT rather than in stale memory.
			for (size_t k = op.cbs.size(); k < 32; k++)
				sc->ptrs[k] = (struct iocb *)page(kPgNone);
			long r = b_.submit(ctx, op.nr, (struct iocb **)ptr_of(op.ptr, sc->ptrs));
			log(i, d, r);
			for (long k = 0; m && k < r && k < (long)op.cbs.size(); k++) {
				const IocbSpec &s = op.cbs[k];

				submitted_[{ s.slot, s.data }] = describe(s);
				if (s.opcode == IOCB_CMD_POLL)
					m->polls.push_back(
						{ s.slot, s.fd,
						  (unsigned)(uint16_t)slot(s.slot)->aio_buf });
				else
					m->expect++;
			}
			settle(m);
			break;
		}
		case kOpGetevents:
		case kOpPgetevents: {
			aio_context_t ctx = ctx_value(op.ctx);
			CtxModel *m = model_of(ctx);
			struct timespec *ts = &sc->ts;

			settle(m);
			peek_ring(m);
			switch (op.ts) {
			case kTsZero:
				sc->ts = { 0, 0 };
				break;
			case kTs1ms:
				sc->ts = { 0, 1000000 };
				break;
			case kTsNull:
				ts = nullptr;
				break;
			case kTsKernel:
				ts = (struct timespec *)kKernelAddr;
				break;
			case kTsUnmapped:
				ts = (struct timespec *)page(kPgNone);
				break;
			case kTsBigNsec:
				sc->ts = { 0, 1000000005 };
				break;
			case kTsNegNsec:
				sc->ts = { 0, -1 };
				break;
			case kTsNegSec:
				sc->ts = { -1, 0 };
				break;
			default:
				break;
			}
			struct io_event *ev = (struct io_event *)ptr_of(op.ptr, sc->ev);
			if (op.ptr == kPtrMisaligned)
				ev = (struct io_event *)((char *)sc->ev + 4);
			std::string d =
				(op.kind == kOpGetevents ? "io_getevents " : "io_pgetevents ") +
				std::string(ctx_name[op.ctx]) +
				" min=" + std::to_string(op.min_nr) +
				" nr=" + std::to_string(op.nr) + " ev=" + ptr_name[op.ptr] +
				" ts=" + ts_name[op.ts];
			long nr = op.nr > 64 ? 64 : op.nr;
			bool may_sleep = op.ts != kTsZero;
			long r;

			watchdog_arm(may_sleep);
			if (op.kind == kOpGetevents) {
				r = b_.getevents(ctx, op.min_nr, nr, ev, ts);
			} else {
				const struct __aio_sigset *sig = &sc->sig;

				sigemptyset(&sc->mask);
				sc->sig.sigmask = &sc->mask;
				sc->sig.sigsetsize = 8;
				switch (op.sig) {
				case kSigNull:
					sig = nullptr;
					break;
				case kSigMaskNull:
					sc->sig.sigmask = nullptr;
					break;
				case kSigSize7:
					sc->sig.sigsetsize = 7;
					break;
				case kSigKernel:
					sig = (const struct __aio_sigset *)kKernelAddr;
					break;
				case kSigMaskKernel:
					sc->sig.sigmask = (const sigset_t *)kKernelAddr;
					break;
				default:
					break;
				}
				d += std::string(" sig=") + sig_name[op.sig];
				r = b_.pgetevents(ctx, op.min_nr, nr, ev, ts, sig);
			}
			watchdog_arm(false);
			log(i, d, r);
			if (r > 0 && m) {
				if (ev != sc->ev)
					res_.events.insert("(" + std::to_string(r) +
							   " events to a misaligned array)");
				reaped(m, r, ev == sc->ev ? sc->ev : nullptr);
			}
			break;
		}
		case kOpCancel: {
			aio_context_t ctx = ctx_value(op.ctx);
			CtxModel *m = model_of(ctx);
			struct iocb *cb = slot(op.slot);

			settle(m);
			if (op.key1)
				cb->aio_key = 1;
			struct iocb *p = (struct iocb *)ptr_of(op.iocb, cb);
			long r = b_.cancel(ctx, p, (struct io_event *)ptr_of(op.ptr, sc->ev));
			if (op.key1)
				cb->aio_key = 0;
			log(i,
			    "io_cancel " + std::string(ctx_name[op.ctx]) + " cb" +
				    std::to_string(op.slot) + " iocb=" + ptr_name[op.iocb] +
				    " result=" + ptr_name[op.ptr] + (op.key1 ? " key=1" : ""),
			    r);
			if (r == -EINPROGRESS && m) {
				for (size_t k = 0; k < m->polls.size(); k++)
					if (m->polls[k].slot == op.slot &&
					    (void *)p == (void *)cb) {
						m->polls.erase(m->polls.begin() + k);
						m->expect++;
						break;
					}
				settle(m);
			}
			break;
		}
		case kOpDestroy: {
			aio_context_t ctx = ctx_value(op.ctx);
			CtxModel *m = model_of(ctx);

			settle(m);
			log(i, "io_destroy " + std::string(ctx_name[op.ctx]), b_.destroy(ctx));
			if (m) {
				m->live = false;
				stale_ = m->ctx;
			}
			break;
		}
		case kOpPipeWrite: {
			long r = write(env_.fd[kFdPipeW], page(kPgData), op.bytes);

			log(i, "write pipe_w " + std::to_string(op.bytes), sys_ret(r));
			settle_all();
			break;
		}
		case kOpEfdWrite: {
			uint64_t one = 1;

			log(i, "write eventfd 1", sys_ret(write(env_.fd[kFdEventfd], &one, 8)));
			settle_all();
			break;
		}
		case kOpPipeDrain: {
			char buf[4096];
			long total = 0, r;

			while ((r = read(env_.fd[kFdPipeR], buf, sizeof(buf))) > 0)
				total += r;
			log(i, "drain pipe_r", total);
			break;
		}
		}
	}

	// Reaps what every live context holds, then destroys every context.
	void finish()
	{
		Scratch *sc = scratch();

		for (auto &m : ctxs_) {
			if (!m.live)
				continue;
			settle(&m);
			struct timespec zero = { 0, 0 };
			long r;

			while ((r = b_.getevents(m.ctx, 0, 64, sc->ev, &zero)) > 0)
				reaped(&m, r, sc->ev);
			res_.lines.push_back("end reaped " + std::to_string(m.reaped) + " of " +
					     std::to_string(m.expect) + ", polls pending " +
					     std::to_string(m.polls.size()));
			b_.destroy(m.ctx);
			m.live = false;
		}
	}
};

// ---------------------------------------------------------------------
// Known differences: the host runs a newer kernel than ukern's 6.12 base.
// Each entry matches the first line that differs: the operation (a regex
// on the line without its result), the host's result and ukern's.

struct Known {
	const char *what;
	const char *host;
	const char *ukern;
	const char *reason;
};

const Known known[] = {
	// Linux after 6.12.
	{ "rwf=0x100", ".", ".",
	  "kernel version: RWF_NOSIGNAL (0x100) is an RWF flag after 6.12; 6.12, and ukern, "
	  "reject it with -EOPNOTSUPP" },
	{ "rwf=0x80", ".", ".",
	  "kernel version: RWF_DONTCACHE (0x80, 6.14) is answered per file by the host; 6.12, "
	  "and ukern, reject it with -EOPNOTSUPP" },
	// ukern serves every host descriptor with one file_operations.
	{ "(PWRITEV?|FD?SYNC) eventfd", "^(-EINVAL|[0-9]+)$", ".",
	  "ukern: an eventfd is served as any host file: io_submit() accepts writes and "
	  "fsyncs, where the kernel's eventfd has no ->write_iter and no ->fsync (-EINVAL)" },
	{ "^event cb[0-9] PREADV? eventfd", "res=-EINVAL", "res=",
	  "ukern: an eventfd read of under 8 bytes completes with 0, the kernel's with -EINVAL" },
	{ "(PREADV?|PWRITEV?) (file|file_ro|file_wo|direct) [^|]*rwf=0x[0-9a-f]*[89a-f]( |]|$)",
	  "^(-EOPNOTSUPP|[0-9]+)$", ".",
	  "ukern: every host descriptor has FMODE_NOWAIT; the host kernel refuses RWF_NOWAIT "
	  "with -EOPNOTSUPP on its tmpfs files" },
	{ "(PREADV?|PWRITEV?) dir ", "^(-EINVAL|[0-9]+)$", ".",
	  "ukern: a directory's missing ->read_iter shows only when it is read, after the "
	  "buffer checks: -EFAULT (or success for an empty vector) before -EINVAL" },
	{ nullptr, nullptr, nullptr, nullptr },
};

// POSIX extended regular expressions (std::regex trips g++ 12's
// -Wmaybe-uninitialized under the sanitizers).
bool matches(const char *pattern, const std::string &s)
{
	regex_t re;
	bool hit;

	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))
		return false;
	hit = regexec(&re, s.c_str(), 0, nullptr, 0) == 0;
	regfree(&re);
	return hit;
}

const Known *explain(const std::string &what, const std::string &host, const std::string &ukern)
{
	for (const Known &k : known) {
		if (!k.what)
			break;
		if (matches(k.what, what) && matches(k.host, host) && matches(k.ukern, ukern))
			return &k;
	}
	return nullptr;
}

void split(const std::string &line, std::string *what, std::string *result)
{
	size_t p = line.rfind(" = ");

	*what = p == std::string::npos ? line : line.substr(0, p);
	*result = p == std::string::npos ? "" : line.substr(p + 3);
}

enum Verdict { kSame, kKnown, kDiffer };

struct Comparison {
	Verdict v = kSame;
	std::string detail;
	const Known *why = nullptr;
};

Comparison compare(const Result &h, const Result &u)
{
	Comparison c;
	size_t n = std::max(h.lines.size(), u.lines.size());

	for (size_t i = 0; i < n; i++) {
		std::string hl = i < h.lines.size() ? h.lines[i] : "(none)";
		std::string ul = i < u.lines.size() ? u.lines[i] : "(none)";
		std::string hw, hr, uw, ur;

		if (hl == ul)
			continue;
		split(hl, &hw, &hr);
		split(ul, &uw, &ur);
		c.detail = "  " + hw + "\n    host:  " + hr + "\n    ukern: " + ur;
		c.why = hw == uw ? explain(hw, hr, ur) : nullptr;
		c.v = c.why ? kKnown : kDiffer;
		return c;
	}
	if (h.events != u.events) {
		std::multiset<std::string> only_h, only_u;

		std::set_difference(h.events.begin(), h.events.end(), u.events.begin(),
				    u.events.end(), std::inserter(only_h, only_h.begin()));
		std::set_difference(u.events.begin(), u.events.end(), h.events.begin(),
				    h.events.end(), std::inserter(only_u, only_u.begin()));
		c.detail = "  completions differ";
		c.v = kDiffer;
		const Known *why = nullptr;
		bool all_known = only_h.size() == only_u.size();
		auto named = [](const Result &r, const std::multiset<std::string> &m) {
			std::multiset<std::string> out;
			for (auto &e : m) {
				auto it = r.names.find(e);
				out.insert(it == r.names.end() ? e : it->second);
			}
			return out;
		};
		only_h = named(h, only_h);
		only_u = named(u, only_u);
		auto hi = only_h.begin();
		auto ui = only_u.begin();
		for (; all_known && hi != only_h.end(); ++hi, ++ui) {
			size_t ph = hi->find(" res="), pu = ui->find(" res=");
			std::string wh = hi->substr(0, ph), wu = ui->substr(0, pu);

			why = wh == wu ? explain("event " + wh, hi->substr(ph + 1),
						 ui->substr(pu + 1))
				       : nullptr;
			all_known = why != nullptr;
		}
		for (auto &e : only_h)
			c.detail += "\n    host only:  " + e;
		for (auto &e : only_u)
			c.detail += "\n    ukern only: " + e;
		if (all_known && why) {
			c.v = kKnown;
			c.why = why;
		}
	}
	return c;
}

void print_transcript(const char *who, const Result &r)
{
	printf("  --- %s\n", who);
	for (auto &l : r.lines)
		printf("    %s\n", l.c_str());
	for (auto &e : r.events)
		printf("    event %s\n", r.names.count(e) ? r.names.at(e).c_str() : e.c_str());
}

bool odirect_works()
{
	std::string f = dir_path + "/odirect";
	int fd = open(f.c_str(), O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
	bool ok = false;

	if (fd >= 0) {
		ok = pwrite(fd, page(kPgData), kPage, 0) == (ssize_t)kPage;
		close(fd);
	}
	unlink(f.c_str());
	return ok;
}

uint64_t seq_seed(uint64_t seed, long i)
{
	Rng r{ seed * 0x100000001b3ULL + (uint64_t)i };

	r.next();
	return r.next();
}

int usage()
{
	fprintf(stderr, "usage: ukern-diffcheck [--seed S] [--sequences N] [--first I] [--ops M] "
			"[--verbose]\n");
	return 2;
}

} // namespace

int main(int argc, char **argv)
{
	uint64_t seed = 1;
	long nseq = 1000, first = 0;
	int max_ops = 16;
	bool verbose = false;

	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		auto val = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
		const char *v;

		if (a == "--verbose" || a == "-v") {
			verbose = true;
		} else if (a == "--seed" && (v = val())) {
			seed = strtoull(v, nullptr, 0);
		} else if (a == "--sequences" && (v = val())) {
			nseq = strtol(v, nullptr, 0);
		} else if (a == "--first" && (v = val())) {
			first = strtol(v, nullptr, 0);
		} else if (a == "--ops" && (v = val())) {
			max_ops = (int)strtol(v, nullptr, 0);
			if (max_ops < 2)
				max_ops = 2;
		} else {
			return usage();
		}
	}
	if (!host_has_aio()) {
		printf("ukern-diffcheck: the host kernel has no AIO (io_setup fails): nothing to "
		       "compare\n");
		return 77;
	}
	if (nr_cpu_ids != (unsigned)sysconf(_SC_NPROCESSORS_CONF)) {
		fprintf(stderr,
			"ukern-diffcheck: nr_cpu_ids %u differs from the host's %ld CPUs: ring "
			"sizes would differ (drop nr_cpus= from UKERN_CMDLINE)\n",
			nr_cpu_ids, sysconf(_SC_NPROCESSORS_CONF));
		return 2;
	}
	// One CPU: the per-CPU request slots of both kernels then fill and
	// refill the same way.
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);

	// The files: in tmpfs where there is one (O_DIRECT since Linux 6.6,
	// and an fsync that does not wait for a disk), else in $TMPDIR.
	const char *tmp = getenv("TMPDIR");
	const char *dirs[] = { getenv("UKERN_DIFFCHECK_DIR"), "/dev/shm",
			       tmp && *tmp ? tmp : "/var/tmp", "/tmp" };
	char tmpl[4096];

	mem_init();
	mem_reset();
	watchdog_init();
	for (const char *d : dirs) {
		if (!d || !*d)
			continue;
		snprintf(tmpl, sizeof(tmpl), "%s/ukern-diffcheck.XXXXXX", d);
		if (!mkdtemp(tmpl))
			continue;
		dir_path = tmpl;
		have_odirect = odirect_works();
		if (have_odirect)
			break;
		rmdir(tmpl);
	}
	if (!have_odirect) {
		snprintf(tmpl, sizeof(tmpl), "/tmp/ukern-diffcheck.XXXXXX");
		if (!mkdtemp(tmpl)) {
			perror("mkdtemp");
			return 2;
		}
		dir_path = tmpl;
	}
	printf("ukern-diffcheck: seed %" PRIu64 ", sequences %ld-%ld, host kernel against ukern, "
	       "files in %s (O_DIRECT %s)\n",
	       seed, first, first + nseq - 1, dir_path.c_str(),
	       have_odirect ? "yes" : "no: the direct descriptor is buffered");
	fflush(stdout);

	long compared = 0, differ = 0, nknown = 0, timeouts = 0;
	std::map<const Known *, long> by_reason;
	HostBackend host;
	UkernBackend ukern;

	long unstable = 0;
	for (long i = first; i < first + nseq; i++) {
		std::vector<Op> seq = generate(seq_seed(seed, i), max_ops);
		Result h, u;
		int tries = 0;
again:
		h = Result();
		u = Result();
		{
			Runner r(host, 0);
			h = r.run(seq);
		}
		{
			Runner r(ukern, 1);
			u = r.run(seq);
		}
		// A cancelled poll is freed by the poller thread after
		// io_destroy() returns: wait for it, bounded.
		for (int k = 0; k < 2000; k++) {
			uk::aio::quiesce();
			if (uk::aio::nr_live_reqs() == 0 && uk::aio::nr_live_ctx() == 0)
				break;
			struct timespec d = { 0, 500000 };
			nanosleep(&d, nullptr);
		}
		if (uk::aio::nr_live_reqs() != 0 || uk::aio::nr_live_ctx() != 0)
			u.lines.push_back("ukern leaks: " + std::to_string(uk::aio::nr_live_ctx()) +
					  " contexts, " + std::to_string(uk::aio::nr_live_reqs()) +
					  " requests");
		if (h.settle_timeout || u.settle_timeout)
			timeouts++;
		Comparison c = compare(h, u);
		// A difference that a second run of the same sequence does not
		// show came from timing (a completion later than the bounded
		// wait before a ring read): reported, not counted.
		if (c.v == kDiffer && tries < 2) {
			tries++;
			goto again;
		}
		if (c.v != kDiffer && tries > 0) {
			unstable++;
			printf("unstable: sequence %ld differed once, not on run %d (--first %ld "
			       "--sequences 1)\n",
			       i, tries + 1, i);
		}
		compared++;
		if (c.v == kKnown) {
			nknown++;
			by_reason[c.why]++;
		}
		if (c.v == kDiffer) {
			differ++;
			printf("DIFFERENCE: sequence %ld (tools/ukern diffcheck --seed %" PRIu64
			       " --first %ld --sequences 1 --verbose)\n%s\n",
			       i, seed, i, c.detail.c_str());
		}
		if ((c.v == kDiffer && verbose) || (verbose && nseq == 1)) {
			print_transcript("host", h);
			print_transcript("ukern", u);
		}
		fflush(stdout);
	}
	rmdir(dir_path.c_str());
	for (auto &[k, n] : by_reason)
		printf("known: %ld x %s: %s\n", n, k->what, k->reason);
	if (unstable)
		printf("note: %ld sequences differed once and not when run again\n", unstable);
	if (timeouts)
		printf("note: %ld sequences waited 3 s for a completion that did not come\n",
		       timeouts);
	printf("sequences: %ld compared, %ld differences, %ld known\n", compared, differ, nknown);
	return differ ? 1 : 0;
}
