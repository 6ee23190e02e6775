// SPDX-License-Identifier: GPL-2.0-only
// ukern-soak: a bounded mixed AIO load with its invariants checked as it
// runs. Worker threads (sized by core count) each own a few contexts, share
// two more that all of them submit to and reap from, and submit reads and
// writes to configfs null_blk devices (irqmode 0, 1 and 2 with random
// completion_nsec, timeout and requeue injection, bad blocks), reads and
// writes to the null file, and IOCB_CMD_POLL on a host pipe; they reap with
// and without timeouts (io_getevents, io_pgetevents), cancel polls, wake
// them, destroy contexts with requests in flight and "exit" (destroy all
// their contexts). Every few seconds the whole process exits (exit_aio()
// with requests in flight, uk::aio::reset_mm_for_test()), the devices are
// dropped, the leak counters compared with the start, and new devices made
// with new random parameters. failslab fails a low rate of slab allocations
// throughout. Run by `tools/ukern soak`; exits 1 on any violation
// (docs/testing.md).
//
//   ukern-soak (--minutes N | --seconds S) [--seed S] [--threads T]
//              [--failslab INTERVAL,PERCENT] [--epoch SECONDS]
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/blk-mq.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/err.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/percpu.h>
#include <uk/linux/printk.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/sbitmap.h>
#include <uk/linux/slab.h>
#include <uk/linux/workqueue.h>

#include "../../blk/blk-mq.h"
#include "../common/ukern-counts.h"

namespace
{

using Clock = std::chrono::steady_clock;

constexpr int kMaxCtx = 4;	   /* contexts per worker */
constexpr int kMaxBatch = 8;	   /* iocbs per io_submit */
constexpr int kMaxPolls = 8;	   /* polls pending per worker */
constexpr int kDevSectors = 32768; /* 16 MiB devices */
constexpr int kNrDevs = 3;
constexpr int kNrShared = 2; /* contexts every worker submits to and reaps */

enum Kind { kBlk, kNullFile, kPoll };

/* One submitted iocb, by its aio_data tag. */
struct Entry {
	uint64_t obj;
	int slot; /* the worker's context slot; kMaxCtx + i: shared context i */
	Kind kind;
	long nbytes;
	void *buf;
	struct iocb *cb; /* the user iocb: io_cancel reads its key */
};

struct Ctx {
	unsigned long id = 0;
	long inflight = 0;
};

struct Dev {
	std::string name;
	struct nullb_device *dev = nullptr;
	int fd = -1;
	int irqmode = 0;
	unsigned long completion_nsec = 0;
	bool badblocks = false;
	bool memory_backed = false;
};

/* ---- shared state ---- */

struct Stats {
	std::atomic<long> submitted{ 0 }, completed{ 0 }, lost{ 0 }, doubled{ 0 };
	std::atomic<long> discarded_destroy{ 0 }, discarded_exit{ 0 };
	std::atomic<long> bad_result{ 0 }, bad_reqs_available{ 0 };
	std::atomic<long> submit_calls{ 0 }, submit_partial{ 0 }, submit_err{ 0 };
	std::atomic<long> reap_calls{ 0 }, reap_timeouts{ 0 };
	std::atomic<long> cancel_inprogress{ 0 }, cancel_einval{ 0 }, cancel_other{ 0 };
	std::atomic<long> setups{ 0 }, setup_err{ 0 }, destroys{ 0 }, task_exits{ 0 };
	std::atomic<long> idle_checks{ 0 }, res_ok{ 0 }, res_eio{ 0 }, res_etimedout{ 0 };
	std::atomic<long> res_nomem{ 0 }, res_poll{ 0 };
	std::atomic<long> exits{ 0 }, leaked{ 0 }, tags_busy{ 0 }, warns{ 0 };
};

Stats st;
std::mutex violations_mu;
std::vector<std::string> violations;
std::atomic<long> nr_violations{ 0 };

void violation(const std::string &s)
{
	nr_violations++;
	std::lock_guard<std::mutex> g(violations_mu);
	if (violations.size() < 20) {
		violations.push_back(s);
		fprintf(stderr, "ukern-soak: VIOLATION: %s\n", s.c_str());
	}
}

std::vector<Dev> devs; /* changed only while every worker is parked */
int null_fd = -1;      /* the null file */
unsigned fail_interval = 200, fail_percent = 10;

/*
 * The shared contexts: made by the main thread while the workers are parked,
 * gone at each process exit. Their iocbs are in one table, entered before
 * io_submit() (another worker may reap the event before it returns).
 */
unsigned long shared_ctx[kNrShared];
std::atomic<long> shared_inflight[kNrShared];
std::mutex shared_mu;
std::unordered_map<uint64_t, Entry> shared_table;

void free_entry(Entry &e)
{
	free(e.buf);
	e.buf = nullptr;
	delete e.cb;
	e.cb = nullptr;
}

/* A finding for an event whose result is not one allowed for its iocb. */
void check_result(const Entry &e, const struct io_event &ev)
{
	long res = (long)ev.res;

	if (e.kind == kPoll) {
		st.res_poll++;
		if (res < 0 || (res & ~(long)(POLLIN | POLLRDNORM)))
			violation("a poll event with res " + std::to_string(res));
	} else if (res == e.nbytes) {
		st.res_ok++;
	} else if (e.kind == kBlk && res == -EIO) {
		st.res_eio++;
	} else if (e.kind == kBlk && res == -ETIMEDOUT) {
		st.res_etimedout++;
	} else if (e.kind == kBlk && (res == -ENOMEM || res == -ENOSPC)) {
		st.res_nomem++;
	} else {
		st.bad_result++;
		violation("an event with res " + std::to_string(res) + " for " +
			  std::to_string(e.nbytes) + " bytes");
	}
}

void doubled(const struct io_event &ev)
{
	st.doubled++;
	violation("an event for tag " + std::to_string(ev.data) +
		  ", not in flight (completed twice or never submitted)");
}

/* An event reaped from shared context @i. */
void account_shared(int i, const struct io_event &ev)
{
	Entry e;
	{
		std::lock_guard<std::mutex> g(shared_mu);
		auto it = shared_table.find(ev.data);

		if (it == shared_table.end())
			return doubled(ev);
		e = it->second;
		shared_table.erase(it);
	}
	if (e.slot != kMaxCtx + i || ev.obj != e.obj)
		violation("an event in the wrong shared context or with the wrong obj");
	check_result(e, ev);
	st.completed++;
	shared_inflight[i]--;
	free_entry(e);
}

/* Reaps shared context @i until nothing is in flight there, for @ms at most. */
void drain_shared(int i, long ms)
{
	auto deadline = Clock::now() + std::chrono::milliseconds(ms);

	while (shared_inflight[i] > 0 && Clock::now() < deadline) {
		struct io_event ev[64];
		struct timespec ts = { 0, 50000000 };
		long r = ukern_io_getevents(shared_ctx[i], 1, 64, ev, &ts);

		if (r < 0) {
			violation("io_getevents on a shared context returned " + std::to_string(r));
			return;
		}
		for (long k = 0; k < r; k++)
			account_shared(i, ev[k]);
	}
}

/* reqs_available is back at its maximum on idle context @id. */
void check_idle_ctx(unsigned long id)
{
	uk::aio::CtxInfo info;

	if (uk::aio::ctx_info(id, &info) != 0) {
		violation("ctx_info of a live context failed");
		return;
	}
	st.idle_checks++;
	unsigned avail =
		info.reqs_available_global + info.reqs_available_percpu + info.completed_events;
	if (avail != info.nr_events - 1) {
		st.bad_reqs_available++;
		violation("an idle context has " + std::to_string(avail) +
			  " requests available, not " + std::to_string(info.nr_events - 1));
	}
}

/* The shared contexts' iocbs still in flight go, as discarded by the exit. */
void discard_shared()
{
	std::lock_guard<std::mutex> g(shared_mu);

	for (auto &[t, e] : shared_table) {
		(void)t;
		free_entry(e);
		st.discarded_exit++;
	}
	shared_table.clear();
	for (int i = 0; i < kNrShared; i++) {
		shared_ctx[i] = 0;
		shared_inflight[i] = 0;
	}
}

void make_shared()
{
	for (int i = 0; i < kNrShared; i++) {
		long r = ukern_io_setup(256, &shared_ctx[i]);

		if (r) {
			shared_ctx[i] = 0;
			violation("io_setup of a shared context returned " + std::to_string(r));
		}
	}
}

/* Park/exit handshake between the workers and the main thread. */
std::mutex park_mu;
std::condition_variable park_cv;
std::atomic<bool> park_req{ false }, stop_req{ false };
int parked = 0;
unsigned long epoch = 0;

void failslab_on(bool on)
{
	failslab.verbose = 0;
	if (on && fail_percent) {
		std::string s = std::to_string(fail_interval) + "," + std::to_string(fail_percent) +
				",0,-1";
		setup_fault_attr(&failslab, s.c_str());
	} else {
		setup_fault_attr(&failslab, "1,0,0,0");
	}
}

/* ---- leak counters (tools/common/ukern-counts.h) ---- */

using toolcounts::Counts;
using toolcounts::counts;

/* What @b holds beyond @a: a description, and the number of objects. */
std::string diff(const Counts &a, const Counts &b, long *objects)
{
	std::string s;

	*objects = 0;
	for (auto &[name, live] : b.caches) {
		auto it = a.caches.find(name);
		long d = live - (it == a.caches.end() ? 0 : it->second);

		if (d) {
			s += " " + name + " " + std::to_string(d);
			*objects += d > 0 ? d : 0;
		}
	}
	if (a.slab != b.slab && s.empty()) {
		s += " slab objects " + std::to_string(b.slab - a.slab);
		*objects += b.slab > a.slab ? b.slab - a.slab : 0;
	}
	if (a.pcpu != b.pcpu) {
		s += " percpu bytes " + std::to_string((long)(b.pcpu - a.pcpu));
		*objects += b.pcpu > a.pcpu ? 1 : 0;
	}
	if (b.live_ctx) {
		s += " contexts " + std::to_string(b.live_ctx);
		*objects += b.live_ctx;
	}
	if (b.live_reqs) {
		s += " requests " + std::to_string(b.live_reqs);
		*objects += b.live_reqs;
	}
	return s;
}

/* ---- devices ---- */

bool store(struct nullb_device *d, const char *attr, const std::string &val)
{
	ssize_t r = nullb_attr_store(d, attr, val.c_str());

	if (r < 0) {
		violation(std::string("null_blk attribute ") + attr + "=" + val + ": " +
			  std::to_string(r));
		return false;
	}
	return true;
}

bool make_dev(Dev &d, int idx, std::mt19937_64 &rng)
{
	d.name = "soak" + std::to_string(idx);
	d.irqmode = idx % 3;
	d.completion_nsec = d.irqmode == 2 ? rng() % 2000000 : 0;
	d.badblocks = rng() % 2;
	d.memory_backed = rng() % 2;
	d.dev = nullb_group_make(d.name.c_str());
	if (IS_ERR_OR_NULL(d.dev)) {
		d.dev = nullptr;
		violation("nullb_group_make " + d.name + " failed");
		return false;
	}
	bool ok = store(d.dev, "irqmode", std::to_string(d.irqmode)) &&
		  store(d.dev, "completion_nsec", std::to_string(d.completion_nsec)) &&
		  store(d.dev, "size", std::to_string(kDevSectors / 2048)) &&
		  store(d.dev, "blocksize", rng() % 2 ? "512" : "4096") &&
		  store(d.dev, "memory_backed", d.memory_backed ? "1" : "0") &&
		  store(d.dev, "submit_queues", std::to_string(1 + rng() % nr_cpu_ids)) &&
		  store(d.dev, "hw_queue_depth", std::to_string(16 + rng() % 64));
	/* Timeouts (completed by the 5 s timeout handler) and requeues, rare. */
	ok = ok && store(d.dev, "timeout_inject/interval", "10000") &&
	     store(d.dev, "timeout_inject/probability", std::to_string(rng() % 2 * 20)) &&
	     store(d.dev, "timeout_inject/times", "-1") &&
	     store(d.dev, "requeue_inject/interval", "50") &&
	     store(d.dev, "requeue_inject/probability", std::to_string(rng() % 2 * 50)) &&
	     store(d.dev, "requeue_inject/times", "-1");
	if (ok && d.badblocks)
		ok = store(d.dev, "badblocks", "+8192-10239");
	ok = ok && store(d.dev, "power", "1");
	if (ok) {
		d.fd = uk::aio_open_blkdev(d.name.c_str(), O_RDWR | O_DIRECT);
		if (d.fd < 0) {
			violation("aio_open_blkdev " + d.name + ": " + std::to_string(d.fd));
			ok = false;
		}
	}
	return ok;
}

void drop_dev(Dev &d)
{
	if (d.fd >= 0)
		uk::aio_close_blkdev(d.fd);
	d.fd = -1;
	if (d.dev)
		nullb_group_drop(d.dev);
	d.dev = nullptr;
	if (kblockd_workqueue)
		flush_workqueue(kblockd_workqueue);
}

/* Every tag of every device's hardware queues is free (queue frozen). */
long busy_tags()
{
	long busy = 0;

	for (Dev &d : devs) {
		struct nullb *nb = d.dev ? null_lookup_dev(d.name.c_str()) : nullptr;

		if (!nb || !nb->q || !nb->tag_set)
			continue;
		blk_mq_freeze_queue(nb->q);
		for (unsigned i = 0; i < nb->tag_set->nr_hw_queues; i++) {
			struct blk_mq_tags *tags = nb->tag_set->tags[i];

			if (!tags)
				continue;
			busy += sbitmap_weight(&tags->bitmap_tags.sb);
			busy += sbitmap_weight(&tags->breserved_tags.sb);
		}
		blk_mq_unfreeze_queue(nb->q);
	}
	return busy;
}

/* ---- workers ---- */

struct Worker {
	int idx;
	std::mt19937_64 rng;
	Ctx ctx[kMaxCtx];
	std::unordered_map<uint64_t, Entry> inflight;
	uint64_t next_seq = 1;
	int pipefd[2] = { -1, -1 };
	int polls = 0;
	bool pipe_full = false;
	unsigned long seen_epoch = 0;

	uint64_t tag(uint64_t seq) const
	{
		return ((uint64_t)idx << 48) | seq;
	}

	unsigned long rnd(unsigned long n)
	{
		return rng() % n;
	}

	void forget(Entry &e)
	{
		free_entry(e);
		if (e.kind == kPoll)
			polls--;
	}

	/* Every entry of slot @s (all slots: -1) goes, as discarded. */
	void discard(int s, std::atomic<long> &counter)
	{
		for (auto it = inflight.begin(); it != inflight.end();) {
			if (s < 0 || it->second.slot == s) {
				forget(it->second);
				counter++;
				it = inflight.erase(it);
			} else {
				++it;
			}
		}
		for (int i = 0; i < kMaxCtx; i++)
			if (s < 0 || i == s)
				ctx[i] = Ctx{};
	}

	int pick_ctx(bool need_inflight)
	{
		int c[kMaxCtx], n = 0;

		for (int i = 0; i < kMaxCtx; i++)
			if (ctx[i].id && (!need_inflight || ctx[i].inflight))
				c[n++] = i;
		return n ? c[rnd(n)] : -1;
	}

	void setup()
	{
		static const unsigned sizes[] = { 1, 2, 8, 32, 128, 512 };

		for (int i = 0; i < kMaxCtx; i++) {
			if (ctx[i].id)
				continue;
			unsigned long id = 0;
			long r = ukern_io_setup(sizes[rnd(6)], &id);

			st.setups++;
			if (r == 0) {
				ctx[i].id = id;
			} else if (r == -ENOMEM || r == -EAGAIN) {
				st.setup_err++;
			} else {
				violation("io_setup returned " + std::to_string(r));
			}
			return;
		}
	}

	bool fill(struct iocb *cb, int s, Entry *e)
	{
		unsigned k = rnd(10);

		memset(cb, 0, sizeof(*cb));
		e->slot = s;
		e->buf = nullptr;
		if (k < 2 && s < kMaxCtx && polls < kMaxPolls) {
			e->kind = kPoll;
			e->nbytes = 0;
			cb->aio_lio_opcode = IOCB_CMD_POLL;
			cb->aio_fildes = (uint32_t)pipefd[0];
			cb->aio_buf = POLLIN;
			return true;
		}
		long bs = 4096 * (1 + rnd(4));

		e->buf = aligned_alloc(4096, bs);
		memset(e->buf, 0x5a, bs);
		e->nbytes = bs;
		cb->aio_lio_opcode = rnd(2) ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
		cb->aio_buf = (uint64_t)(uintptr_t)e->buf;
		cb->aio_nbytes = bs;
		if (k < 4) {
			e->kind = kNullFile;
			cb->aio_fildes = (uint32_t)null_fd;
			cb->aio_offset = 4096 * rnd(1024);
		} else {
			const Dev &d = devs[rnd(devs.size())];

			e->kind = kBlk;
			cb->aio_fildes = (uint32_t)d.fd;
			cb->aio_offset = 4096 * rnd(kDevSectors / 8 - 4);
		}
		return true;
	}

	void submit()
	{
		int s = pick_ctx(false);
		struct iocb *ptrs[kMaxBatch];
		Entry ents[kMaxBatch];
		uint64_t tags[kMaxBatch];
		int n = 1 + rnd(kMaxBatch);

		if (rnd(10) < 3)
			return submit_shared((int)rnd(kNrShared));
		if (s < 0)
			return setup();
		for (int i = 0; i < n; i++) {
			ents[i].cb = new struct iocb;
			fill(ents[i].cb, s, &ents[i]);
			if (ents[i].kind == kPoll)
				polls++;
			tags[i] = tag(next_seq++);
			ents[i].cb->aio_data = tags[i];
			ents[i].obj = (uint64_t)(uintptr_t)ents[i].cb;
			ptrs[i] = ents[i].cb;
		}
		long r = ukern_io_submit(ctx[s].id, n, ptrs);

		st.submit_calls++;
		if (r < 0) {
			if (r != -EAGAIN && r != -ENOMEM)
				violation("io_submit returned " + std::to_string(r));
			st.submit_err++;
			r = 0;
		} else if (r < n) {
			st.submit_partial++;
		}
		for (int i = 0; i < n; i++) {
			if (i < r) {
				inflight.emplace(tags[i], ents[i]);
				ctx[s].inflight++;
				st.submitted++;
			} else {
				forget(ents[i]);
			}
		}
	}

	/* A batch to shared context @i: in the table before io_submit(). */
	void submit_shared(int i)
	{
		struct iocb *ptrs[kMaxBatch];
		uint64_t tags[kMaxBatch];
		int n = 1 + rnd(kMaxBatch);

		if (!shared_ctx[i])
			return;
		{
			std::lock_guard<std::mutex> g(shared_mu);

			for (int k = 0; k < n; k++) {
				Entry e;

				e.cb = new struct iocb;
				fill(e.cb, kMaxCtx + i, &e);
				tags[k] = tag(next_seq++);
				e.cb->aio_data = tags[k];
				e.obj = (uint64_t)(uintptr_t)e.cb;
				ptrs[k] = e.cb;
				shared_table.emplace(tags[k], e);
			}
		}
		shared_inflight[i] += n;
		long r = ukern_io_submit(shared_ctx[i], n, ptrs);

		st.submit_calls++;
		if (r < 0) {
			if (r != -EAGAIN && r != -ENOMEM)
				violation("io_submit returned " + std::to_string(r));
			st.submit_err++;
			r = 0;
		} else if (r < n) {
			st.submit_partial++;
		}
		st.submitted += r;
		/* The iocbs io_submit() did not take: theirs is the only reference. */
		std::lock_guard<std::mutex> g(shared_mu);
		for (int k = (int)r; k < n; k++) {
			auto it = shared_table.find(tags[k]);

			free_entry(it->second);
			shared_table.erase(it);
			shared_inflight[i]--;
		}
	}

	void reap_shared(int i)
	{
		struct io_event ev[16];
		struct timespec ts = { 0, (long)rnd(2000000) };
		long nr = 1 + rnd(16), r;

		if (!shared_ctx[i])
			return;
		if (rnd(2))
			r = ukern_io_getevents(shared_ctx[i], rnd(2), nr, ev, &ts);
		else
			r = ukern_io_pgetevents(shared_ctx[i], rnd(2), nr, ev, &ts, nullptr);
		st.reap_calls++;
		if (r < 0) {
			violation("io_getevents on a shared context returned " + std::to_string(r));
			return;
		}
		for (long k = 0; k < r; k++)
			account_shared(i, ev[k]);
	}

	/* One event: the iocb it names was in flight here, once. */
	void account(int s, const struct io_event &ev)
	{
		auto it = inflight.find(ev.data);

		if (it == inflight.end())
			return doubled(ev);
		Entry &e = it->second;

		if (e.slot != s || ev.obj != e.obj)
			violation("an event in the wrong context or with the wrong obj");
		check_result(e, ev);
		st.completed++;
		forget(e);
		ctx[s].inflight--;
		inflight.erase(it);
	}

	/* reqs_available is back at its maximum on an idle context. */
	void check_idle(int s)
	{
		if (ctx[s].id && !ctx[s].inflight)
			check_idle_ctx(ctx[s].id);
	}

	void reap()
	{
		int s = pick_ctx(true);
		struct io_event ev[16];

		if (rnd(10) < 3)
			return reap_shared((int)rnd(kNrShared));
		if (s < 0)
			return;
		long nr = 1 + rnd(16), min_nr = 0, r;
		long nonpoll = 0;
		unsigned how = rnd(4);
		struct timespec ts = { 0, 0 };

		for (auto &[t, e] : inflight)
			nonpoll += e.slot == s && e.kind != kPoll;
		if (how == 0 && nonpoll) {
			/* No timeout: an I/O request completes within the 5 s timeout. */
			min_nr = 1;
			r = ukern_io_getevents(ctx[s].id, min_nr, nr, ev, nullptr);
		} else if (how == 1) {
			r = ukern_io_getevents(ctx[s].id, 0, nr, ev, &ts);
		} else {
			ts.tv_nsec = (long)rnd(2000000);
			min_nr = 1 + rnd(nr);
			if (how == 2)
				r = ukern_io_getevents(ctx[s].id, min_nr, nr, ev, &ts);
			else
				r = ukern_io_pgetevents(ctx[s].id, min_nr, nr, ev, &ts, nullptr);
		}
		st.reap_calls++;
		if (r < 0) {
			violation("io_getevents returned " + std::to_string(r));
			return;
		}
		if (r < min_nr)
			st.reap_timeouts++;
		for (long i = 0; i < r; i++)
			account(s, ev[i]);
		check_idle(s);
	}

	void cancel()
	{
		std::vector<uint64_t> c;

		for (auto &[t, e] : inflight)
			if (e.kind == kPoll || rnd(8) == 0)
				c.push_back(t);
		if (c.empty())
			return;
		uint64_t t = c[rnd(c.size())];
		Entry &e = inflight.at(t);
		struct io_event res;
		/* io_cancel finds the request by its user address (the iocb's). */
		long r = ukern_io_cancel(ctx[e.slot].id, (struct iocb *)(uintptr_t)e.obj, &res);

		if (r == -EINPROGRESS)
			st.cancel_inprogress++;
		else if (r == -EINVAL)
			st.cancel_einval++;
		else {
			st.cancel_other++;
			violation("io_cancel returned " + std::to_string(r));
		}
	}

	void wake_polls()
	{
		char c = 1;

		if (pipe_full) {
			if (read(pipefd[0], &c, 1) == 1)
				pipe_full = false;
		} else if (write(pipefd[1], &c, 1) == 1) {
			pipe_full = true;
		}
	}

	void destroy(int s)
	{
		long r = ukern_io_destroy(ctx[s].id);

		st.destroys++;
		if (r != 0)
			violation("io_destroy of a live context returned " + std::to_string(r));
		discard(s, st.discarded_destroy);
	}

	void step()
	{
		unsigned r = rnd(100);
		int s;

		if (r < 40) {
			submit();
		} else if (r < 72) {
			reap();
		} else if (r < 78) {
			cancel();
		} else if (r < 82) {
			wake_polls();
		} else if (r < 87) {
			setup();
		} else if (r < 90) {
			if (rnd(4) == 0 && (s = pick_ctx(false)) >= 0)
				destroy(s);
		} else if (r < 91) {
			if (rnd(4))
				return;
			st.task_exits++;
			for (s = 0; s < kMaxCtx; s++)
				if (ctx[s].id)
					destroy(s);
		} else if ((s = pick_ctx(false)) >= 0) {
			check_idle(s);
		}
	}

	/* The end: cancel the polls, reap everything (bounded), destroy. */
	void drain()
	{
		auto deadline = Clock::now() + std::chrono::seconds(30);

		for (auto &[t, e] : inflight) {
			struct io_event res;

			if (e.kind == kPoll)
				(void)ukern_io_cancel(ctx[e.slot].id,
						      (struct iocb *)(uintptr_t)e.obj, &res);
		}
		while (!inflight.empty() && Clock::now() < deadline) {
			for (int s = 0; s < kMaxCtx; s++) {
				struct io_event ev[16];
				struct timespec ts = { 0, 100000000 };

				if (!ctx[s].id || !ctx[s].inflight)
					continue;
				long r = ukern_io_getevents(ctx[s].id, 1, 16, ev, &ts);

				if (r < 0) {
					violation("io_getevents returned " + std::to_string(r));
					break;
				}
				for (long i = 0; i < r; i++)
					account(s, ev[i]);
			}
		}
		for (auto &[t, e] : inflight) {
			(void)t;
			(void)e;
			st.lost++;
		}
		if (!inflight.empty())
			violation(std::to_string(inflight.size()) +
				  " iocbs without an event 30 s after the load stopped");
		for (int s = 0; s < kMaxCtx; s++) {
			if (!ctx[s].id)
				continue;
			check_idle(s);
			long r = ukern_io_destroy(ctx[s].id);

			if (r != 0)
				violation("io_destroy returned " + std::to_string(r));
		}
		for (auto &[t, e] : inflight)
			forget(e);
		inflight.clear();
		for (int s = 0; s < kMaxCtx; s++)
			ctx[s] = Ctx{};
	}

	void park()
	{
		std::unique_lock<std::mutex> g(park_mu);

		parked++;
		park_cv.notify_all();
		park_cv.wait(g, [&] { return epoch != seen_epoch || stop_req.load(); });
		parked--;
		if (epoch != seen_epoch) {
			/* The process exited under us: every context is gone. */
			seen_epoch = epoch;
			g.unlock();
			discard(-1, st.discarded_exit);
		}
	}

	void run()
	{
		if (pipe(pipefd) != 0) {
			violation("pipe() failed");
			return;
		}
		while (!stop_req.load(std::memory_order_relaxed)) {
			if (park_req.load(std::memory_order_acquire)) {
				park();
				continue;
			}
			step();
		}
		drain();
		close(pipefd[0]);
		close(pipefd[1]);
	}
};

/* ---- the main thread ---- */

void wait_parked(int n)
{
	std::unique_lock<std::mutex> g(park_mu);
	park_cv.wait(g, [&] { return parked == n; });
}

/*
 * Every worker parked: the process exits with requests in flight, then the
 * checks of a quiesced system, then new devices.
 */
void process_exit(std::mt19937_64 &rng, const Counts &base, bool remake)
{
	long objects;

	failslab_on(false);
	/* Every other exit finds the shared contexts idle: reaped, then checked. */
	for (int i = 0; i < kNrShared && st.exits % 2; i++) {
		if (!shared_ctx[i])
			continue;
		drain_shared(i, 10000);
		if (shared_inflight[i] == 0)
			check_idle_ctx(shared_ctx[i]);
	}
	uk::aio::reset_mm_for_test();
	discard_shared();
	st.exits++;
	if (uk::aio::nr_live_ctx() || uk::aio::nr_live_reqs())
		violation("after exit_aio: " + std::to_string(uk::aio::nr_live_ctx()) +
			  " contexts, " + std::to_string(uk::aio::nr_live_reqs()) + " requests");
	if (aio_nr)
		violation("after exit_aio: aio-nr " + std::to_string(aio_nr));
	long busy = busy_tags();
	if (busy) {
		st.tags_busy += busy;
		violation(std::to_string(busy) + " blk-mq tags busy at quiesce");
	}
	for (Dev &d : devs)
		drop_dev(d);
	Counts now = counts();
	std::string d = diff(base, now, &objects);
	if (!d.empty()) {
		st.leaked += objects;
		violation("left behind at quiesce:" + d);
	}
	if (uk::warn_count != st.warns) {
		violation(std::to_string(uk::warn_count - st.warns) + " WARNs");
		st.warns = uk::warn_count;
	}
	if (remake) {
		for (int i = 0; i < kNrDevs; i++)
			if (!make_dev(devs[i], i, rng))
				break;
		make_shared();
		failslab_on(true);
	}
}

void usage()
{
	fprintf(stderr, "usage: ukern-soak (--minutes N | --seconds S) [--seed S] [--threads T]\n"
			"                  [--failslab INTERVAL,PERCENT] [--epoch SECONDS]\n");
	exit(2);
}

void on_alarm(int)
{
	fprintf(stderr, "ukern-soak: did not finish in time (hung?)\n");
	_exit(1);
}

} // namespace

int main(int argc, char **argv)
{
	long seconds = 0, epoch_s = 0;
	unsigned long seed = 1;
	unsigned threads = 0;
	bool per_second = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--minutes") && i + 1 < argc) {
			seconds = 60 * strtol(argv[++i], nullptr, 0);
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = strtol(argv[++i], nullptr, 0);
			per_second = true;
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoul(argv[++i], nullptr, 0);
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			threads = (unsigned)strtoul(argv[++i], nullptr, 0);
		} else if (!strcmp(argv[i], "--epoch") && i + 1 < argc) {
			epoch_s = strtol(argv[++i], nullptr, 0);
		} else if (!strcmp(argv[i], "--failslab") && i + 1 < argc) {
			if (sscanf(argv[++i], "%u,%u", &fail_interval, &fail_percent) != 2 ||
			    !fail_interval || fail_percent > 100)
				usage();
		} else {
			usage();
		}
	}
	if (seconds <= 0)
		usage();
	if (!threads)
		threads = std::max(4u, std::min(16u, 2 * std::thread::hardware_concurrency()));
	if (!epoch_s)
		epoch_s = per_second ? 5 : 10;
	signal(SIGALRM, on_alarm);
	alarm((unsigned)seconds + 300);
	signal(SIGPIPE, SIG_IGN);

	printf("ukern-soak: %ld s, seed %lu, %u threads, %u CPUs, failslab %u%% of every %u, "
	       "process exit every %ld s\n",
	       seconds, seed, threads, nr_cpu_ids, fail_percent, fail_interval, epoch_s);
	fflush(stdout);

	null_blk_reset_module_params();
	std::mt19937_64 rng(seed);
	null_fd = open("/dev/null", O_RDWR);
	if (null_fd < 0 || aio_register_file(null_fd, &aio_null_file_operations,
					     FMODE_READ | FMODE_WRITE, nullptr)) {
		fprintf(stderr, "ukern-soak: cannot set up the null file\n");
		return 1;
	}

	/* A first cycle makes what stays for the process (caches, queues). */
	devs.resize(kNrDevs);
	for (int i = 0; i < kNrDevs; i++)
		make_dev(devs[i], i, rng);
	make_shared();
	{
		Worker w;

		w.idx = 0;
		w.rng.seed(seed);
		if (pipe(w.pipefd) == 0) {
			for (int i = 0; i < 200; i++)
				w.step();
			w.drain();
			close(w.pipefd[0]);
			close(w.pipefd[1]);
		}
	}
	uk::aio::reset_mm_for_test();
	discard_shared();
	for (Dev &d : devs)
		drop_dev(d);
	Counts base = counts();
	st.warns = uk::warn_count;
	st.submitted = st.completed = st.lost = st.doubled = 0;
	st.discarded_destroy = st.discarded_exit = 0;
	for (int i = 0; i < kNrDevs; i++)
		make_dev(devs[i], i, rng);
	make_shared();

	std::vector<Worker> workers(threads);
	std::vector<std::thread> th;
	for (unsigned i = 0; i < threads; i++) {
		workers[i].idx = (int)i + 1;
		workers[i].rng.seed(seed * 7919 + i + 1);
	}
	failslab_on(true);
	for (unsigned i = 0; i < threads; i++)
		th.emplace_back([&workers, i] { workers[i].run(); });

	auto start = Clock::now();
	auto end = start + std::chrono::seconds(seconds);
	auto next_exit = start + std::chrono::seconds(epoch_s);
	long interval = per_second ? 1 : 10;
	auto next_line = start + std::chrono::seconds(interval);

	while (Clock::now() < end) {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		auto now = Clock::now();

		if (now >= next_exit && now + std::chrono::seconds(2) < end) {
			park_req.store(true, std::memory_order_release);
			wait_parked((int)threads);
			process_exit(rng, base, true);
			{
				std::lock_guard<std::mutex> g(park_mu);
				park_req.store(false, std::memory_order_release);
				epoch++;
			}
			park_cv.notify_all();
			next_exit = Clock::now() + std::chrono::seconds(epoch_s);
		}
		if (now >= next_line) {
			long el = std::chrono::duration_cast<std::chrono::seconds>(now - start)
					  .count();
			long sub = st.submitted, done = st.completed;
			long gone = st.discarded_destroy + st.discarded_exit;

			printf("[%5lds] submitted %ld, completed %ld, discarded %ld, in flight "
			       "%ld, "
			       "contexts %ld, exits %ld, -ENOMEM/-EAGAIN %ld, violations %ld\n",
			       el, sub, done, gone, sub - done - gone, uk::aio::nr_live_ctx(),
			       st.exits.load(), st.submit_err + st.setup_err + st.res_nomem,
			       nr_violations.load());
			fflush(stdout);
			next_line += std::chrono::seconds(interval);
		}
	}
	stop_req.store(true);
	park_cv.notify_all();
	for (auto &t : th)
		t.join();
	failslab_on(false);
	/* The shared contexts: everything reaped within 30 s, or lost. */
	for (int i = 0; i < kNrShared; i++)
		if (shared_ctx[i])
			drain_shared(i, 30000);
	if (!shared_table.empty()) {
		st.lost += (long)shared_table.size();
		st.discarded_exit -= (long)shared_table.size();
		violation(std::to_string(shared_table.size()) +
			  " iocbs of the shared contexts without an event 30 s after the load "
			  "stopped");
	}
	for (int i = 0; i < kNrShared; i++) {
		if (shared_ctx[i] && shared_inflight[i] == 0)
			check_idle_ctx(shared_ctx[i]);
		if (shared_ctx[i] && ukern_io_destroy(shared_ctx[i]) != 0)
			violation("io_destroy of a shared context failed");
		shared_ctx[i] = 0;
	}
	process_exit(rng, base, false);
	aio_unregister_file(null_fd);
	close(null_fd);

	long sub = st.submitted, done = st.completed, lost = st.lost, dbl = st.doubled;
	long gone_d = st.discarded_destroy, gone_e = st.discarded_exit;
	if (sub != done + gone_d + gone_e + lost)
		violation("submitted " + std::to_string(sub) + " != completed + discarded + lost");

	printf("\n%-40s %12s\n", "", "count");
	auto row = [](const char *name, long v) { printf("%-40s %12ld\n", name, v); };
	row("iocbs submitted", sub);
	row("io_submit calls", st.submit_calls);
	row("  partial batches", st.submit_partial);
	row("  -EAGAIN/-ENOMEM", st.submit_err);
	row("io_setup calls", st.setups);
	row("  -EAGAIN/-ENOMEM", st.setup_err);
	row("io_getevents/io_pgetevents calls", st.reap_calls);
	row("  ended by the timeout", st.reap_timeouts);
	row("io_cancel -EINPROGRESS", st.cancel_inprogress);
	row("io_cancel -EINVAL (not cancellable)", st.cancel_einval);
	row("io_destroy with the context live", st.destroys);
	row("task exits (all of a task's contexts)", st.task_exits);
	row("process exits (exit_aio)", st.exits);
	row("events: full length", st.res_ok);
	row("events: -EIO (bad blocks)", st.res_eio);
	row("events: -ETIMEDOUT (timeout injection)", st.res_etimedout);
	row("events: -ENOMEM/-ENOSPC", st.res_nomem);
	row("events: poll", st.res_poll);
	row("events with a bad result", st.bad_result);
	row("discarded by io_destroy", gone_d);
	row("discarded by exit_aio", gone_e);
	row("idle reqs_available checks", st.idle_checks);
	row("  not at the maximum", st.bad_reqs_available);
	row("blk-mq tags busy at quiesce", st.tags_busy);
	row("violations", nr_violations);
	printf("iocbs: %ld submitted, %ld completed once, %ld lost, %ld doubled, %ld leaked\n",
	       sub - gone_d - gone_e, done, lost, dbl, st.leaked.load());
	return nr_violations ? 1 : 0;
}
