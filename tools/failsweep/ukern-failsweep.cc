// SPDX-License-Identifier: GPL-2.0-only
// ukern-failsweep: every allocation site of a scenario made to fail in
// turn, as /proc/self/fail-nth does it. For n = 1, 2, ... the scenario's
// operation runs with this task's n-th fault-injection call failing
// (uk::fail_nth_write()), until a run ends with no failure injected. After
// each run: the result is success or the kernel's error for that site, no
// slab object, percpu byte, context or request is left behind, no WARN
// fired, and the scenario runs again, uninjected, to success. Run by
// `tools/ukern failsweep`; exits 1 on any finding.
//
//   ukern-failsweep [--max-n N] [--scenario SUBSTRING] [-v]
//     --max-n N   stop each scenario after N injected runs (0: no bound)
//     -v          one line per run
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <uk/devices/null_blk.h>
#include <uk/linux/aio.h>
#include <uk/linux/aio_abi.h>
#include <uk/linux/aio_fs.h>
#include <uk/linux/blk-mq.h>
#include <uk/linux/err.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/percpu.h>
#include <uk/linux/printk.h>
#include <uk/linux/radix-tree.h>
#include <uk/linux/cpumask.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/workqueue.h>

#include "../../blk/blk-mq.h"
#include "../common/ukern-counts.h"

namespace
{

constexpr size_t kBs = 4096;
constexpr int kBatch = 8;

// What a scenario leaves between its steps.
struct State {
	unsigned long ctx = 0;
	int fd = -1;
	struct nullb_device *dev = nullptr;
	long submitted = 0;
	struct blk_mq_tag_set *set = nullptr;
	struct request_queue *q = nullptr;
	unsigned char *buf = nullptr;
	struct iocb cbs[kBatch];
	struct iocb *ptrs[kBatch];
};

// A scenario: prepare and finish run uninjected; op runs with fail-nth set
// and returns the syscall's result (>= 0, or -errno). finish returns a
// finding, or "" when all is well.
struct Scenario {
	std::string name;
	std::function<bool(State &)> prepare;
	std::function<long(State &)> op;
	std::vector<long> errors; // the kernel's errors for this operation
	std::function<std::string(State &, long)> finish;
	long full = -1; /* a result below it (and >= 0) is a partial batch */
};

using toolcounts::Counts;
using toolcounts::counts;

const char *scenario_now = "";
unsigned long n_now;

void on_alarm(int)
{
	fprintf(stderr, "ukern-failsweep: %s: the run with fail-nth %lu did not end in 60 s\n",
		scenario_now, n_now);
	_exit(1);
}

std::string diff(const Counts &a, const Counts &b)
{
	std::string s;
	for (auto &[name, live] : b.caches) {
		auto it = a.caches.find(name);
		long d = live - (it == a.caches.end() ? 0 : it->second);

		if (d)
			s += " " + name + " " + std::to_string(d);
	}
	if (a.slab != b.slab && s.empty())
		s += " slab objects " + std::to_string(b.slab - a.slab);
	if (a.pcpu != b.pcpu)
		s += " percpu bytes " + std::to_string((long)(b.pcpu - a.pcpu));
	if (a.live_ctx != b.live_ctx)
		s += " contexts " + std::to_string(b.live_ctx - a.live_ctx);
	if (a.live_reqs != b.live_reqs)
		s += " requests " + std::to_string(b.live_reqs - a.live_reqs);
	if (a.warns != b.warns)
		s += " WARNs " + std::to_string(b.warns - a.warns);
	return s;
}

std::string errname(long r)
{
	switch (r) {
	case -ENOMEM:
		return "-ENOMEM";
	case -EAGAIN:
		return "-EAGAIN";
	case -EINVAL:
		return "-EINVAL";
	case -EFAULT:
		return "-EFAULT";
	case -EIO:
		return "-EIO";
	case -EBUSY:
		return "-EBUSY";
	case -ENODEV:
		return "-ENODEV";
	default:
		return r < 0 ? std::to_string(r) : "ok";
	}
}

// Reaps @n events (each wait bounded); a finding for a lost event or an
// event whose result is neither @want nor an error in @errors.
std::string reap(unsigned long ctx, long n, long want, const std::vector<long> &errors)
{
	struct io_event ev[kBatch];
	long got = 0;

	while (got < n) {
		struct timespec ts = { 10, 0 };
		long r = ukern_io_getevents(ctx, 1, n - got, ev, &ts);

		if (r <= 0)
			return "io_getevents gave " + errname(r) + " with " +
			       std::to_string(n - got) + " events due";
		for (long i = 0; i < r; i++) {
			long res = (long)ev[i].res;
			bool ok = res == want;

			for (long e : errors)
				ok |= res == e;
			if (!ok)
				return "an event's res is " + errname(res);
		}
		got += r;
	}
	return "";
}

void prep_iocbs(State &s, int fd, uint16_t op, long long stride)
{
	for (int i = 0; i < kBatch; i++) {
		memset(&s.cbs[i], 0, sizeof(s.cbs[i]));
		s.cbs[i].aio_fildes = (uint32_t)fd;
		s.cbs[i].aio_lio_opcode = op;
		s.cbs[i].aio_buf = (uint64_t)(uintptr_t)(s.buf + i * kBs);
		s.cbs[i].aio_nbytes = kBs;
		s.cbs[i].aio_offset = i * stride;
		s.cbs[i].aio_data = (uint64_t)i;
		s.ptrs[i] = &s.cbs[i];
	}
}

// A configfs null_blk device "sweep": 16 MiB, memory backed, powered on.
long make_nullb(State &s, int irqmode, const char *completion_nsec)
{
	std::string irq = std::to_string(irqmode);
	ssize_t r;

	s.dev = nullb_group_make("sweep");
	if (IS_ERR(s.dev)) {
		long err = PTR_ERR(s.dev);

		s.dev = nullptr;
		return err;
	}
	if (!s.dev)
		return -ENOMEM;
	const char *attrs[][2] = { { "irqmode", irq.c_str() },
				   { "size", "16" },
				   { "blocksize", "4096" },
				   { "memory_backed", "1" },
				   { "completion_nsec", completion_nsec },
				   { "power", "1" } };
	for (auto &a : attrs) {
		r = nullb_attr_store(s.dev, a[0], a[1]);
		if (r < 0)
			return r;
	}
	return 0;
}

void drop_nullb(State &s)
{
	if (s.fd >= 0)
		uk::aio_close_blkdev(s.fd);
	s.fd = -1;
	if (s.dev)
		nullb_group_drop(s.dev);
	s.dev = nullptr;
	if (kblockd_workqueue)
		flush_workqueue(kblockd_workqueue);
}

bool open_nullb(State &s, int irqmode, const char *completion_nsec)
{
	if (make_nullb(s, irqmode, completion_nsec) != 0)
		return false;
	s.fd = uk::aio_open_blkdev("/dev/ukern/sweep", O_RDWR | O_DIRECT);
	return s.fd >= 0;
}

std::string destroy_ctx(State &s)
{
	std::string f;

	if (s.ctx && ukern_io_destroy(s.ctx) != 0)
		f = "io_destroy of a live context failed";
	s.ctx = 0;
	return f;
}

// io_submit's result: the iocbs taken, or an error when none was.
std::string finish_submit(State &s, long r, long want)
{
	std::string f;

	// A null_blk write whose backing page cannot be allocated: -ENOSPC,
	// as in the kernel (copy_to_nullb()).
	if (r > 0)
		f = reap(s.ctx, r, want, { -ENOSPC });
	std::string g = destroy_ctx(s);
	return f.empty() ? g : f;
}

// A descriptor served by aio_null_file_operations, its reads, a context.
bool open_null_file(State &s)
{
	s.fd = open("/dev/null", O_RDWR);
	if (s.fd < 0 ||
	    aio_register_file(s.fd, &aio_null_file_operations, FMODE_READ | FMODE_WRITE, nullptr))
		return false;
	prep_iocbs(s, s.fd, IOCB_CMD_PREAD, kBs);
	return ukern_io_setup(64, &s.ctx) == 0;
}

void close_null_file(State &s)
{
	aio_unregister_file(s.fd);
	close(s.fd);
	s.fd = -1;
}

blk_status_t sweep_queue_rq(struct blk_mq_hw_ctx *, const struct blk_mq_queue_data *bd)
{
	blk_mq_start_request(bd->rq);
	blk_mq_end_request(bd->rq, BLK_STS_OK);
	return BLK_STS_OK;
}

const struct blk_mq_ops sweep_mq_ops = {
	.queue_rq = sweep_queue_rq,
};

std::vector<Scenario> scenarios()
{
	std::vector<Scenario> v;

	v.push_back({ "io_setup",
		      [](State &) { return true; },
		      [](State &s) { return ukern_io_setup(128, &s.ctx); },
		      { -ENOMEM, -EAGAIN },
		      [](State &s, long r) -> std::string {
			      if (r < 0 && s.ctx != 0)
				      return "a failed io_setup wrote a context id";
			      return destroy_ctx(s);
		      } });

	v.push_back({ "io_submit null file",
		      [](State &s) { return open_null_file(s); },
		      [](State &s) { return ukern_io_submit(s.ctx, kBatch, s.ptrs); },
		      { -ENOMEM, -EAGAIN },
		      [](State &s, long r) {
			      std::string f = finish_submit(s, r, (long)kBs);
			      close_null_file(s);
			      return f;
		      } });
	v.back().full = kBatch;

	for (int irqmode = 0; irqmode <= 2; irqmode++) {
		v.push_back({ "io_submit null_blk irqmode=" + std::to_string(irqmode),
			      [irqmode](State &s) {
				      if (!open_nullb(s, irqmode, "20000"))
					      return false;
				      prep_iocbs(s, s.fd, IOCB_CMD_PWRITE, 3 * kBs);
				      return ukern_io_setup(64, &s.ctx) == 0;
			      },
			      [](State &s) { return ukern_io_submit(s.ctx, kBatch, s.ptrs); },
			      { -ENOMEM, -EAGAIN },
			      [](State &s, long r) {
				      std::string f = finish_submit(s, r, (long)kBs);
				      drop_nullb(s);
				      return f;
			      } });
		v.back().full = kBatch;
	}

	v.push_back({ "io_getevents timeout",
		      [](State &s) {
			      if (!open_null_file(s))
				      return false;
			      s.submitted = ukern_io_submit(s.ctx, kBatch / 2, s.ptrs);
			      return s.submitted == kBatch / 2;
		      },
		      [](State &s) {
			      // More than were submitted, so that the timeout ends the wait.
			      struct io_event ev[kBatch];
			      struct timespec ts = { 0, 1000000 };
			      long r = ukern_io_getevents(s.ctx, kBatch, kBatch, ev, &ts);

			      if (r > 0)
				      s.submitted -= r;
			      return r;
		      },
		      { -ENOMEM, -EINTR },
		      [](State &s, long) {
			      std::string f = reap(s.ctx, s.submitted, (long)kBs, {});
			      std::string g = destroy_ctx(s);
			      close_null_file(s);
			      return f.empty() ? g : f;
		      } });

	v.push_back({ "io_destroy in flight",
		      [](State &s) {
			      // Timer completions 1 ms out: the batch is in flight.
			      if (!open_nullb(s, 2, "1000000"))
				      return false;
			      prep_iocbs(s, s.fd, IOCB_CMD_PWRITE, kBs);
			      if (ukern_io_setup(64, &s.ctx) != 0)
				      return false;
			      return ukern_io_submit(s.ctx, kBatch, s.ptrs) == kBatch;
		      },
		      [](State &s) {
			      long r = ukern_io_destroy(s.ctx);

			      if (r == 0)
				      s.ctx = 0;
			      return r;
		      },
		      {},
		      [](State &s, long) {
			      std::string f = destroy_ctx(s);
			      drop_nullb(s);
			      return f;
		      } });

	for (int irqmode = 0; irqmode <= 2; irqmode++) {
		v.push_back({ "null_blk create irqmode=" + std::to_string(irqmode),
			      [](State &) { return true; },
			      [irqmode](State &s) { return make_nullb(s, irqmode, "20000"); },
			      { -ENOMEM },
			      [](State &s, long r) -> std::string {
				      if (r == 0 && null_lookup_dev("sweep") == nullptr)
					      return "a powered device is not registered";
				      drop_nullb(s);
				      return "";
			      } });
	}

	v.push_back({ "blk-mq tag set and queue",
		      [](State &) { return true; },
		      [](State &s) -> long {
			      s.set = new blk_mq_tag_set();
			      s.set->ops = &sweep_mq_ops;
			      s.set->nr_hw_queues = 2;
			      s.set->queue_depth = 64;
			      s.set->numa_node = -1;
			      int r = blk_mq_alloc_tag_set(s.set);
			      if (r)
				      return r;
			      s.q = blk_mq_init_queue(s.set);
			      if (IS_ERR(s.q)) {
				      long err = PTR_ERR(s.q);

				      s.q = nullptr;
				      blk_mq_free_tag_set(s.set);
				      return err;
			      }
			      return 0;
		      },
		      { -ENOMEM },
		      [](State &s, long r) -> std::string {
			      if (r == 0) {
				      blk_mq_destroy_queue(s.q);
				      blk_mq_free_tag_set(s.set);
			      }
			      delete s.set;
			      s.set = nullptr;
			      s.q = nullptr;
			      return "";
		      } });
	return v;
}

struct Result {
	unsigned long sites = 0;
	std::map<std::string, unsigned long> outcomes;
	std::vector<std::string> findings;
};

// One run: prepare, op under fail-nth @n (0: none), finish, then the counts.
// Sets *injected when the n-th call came.
std::string run_once(const Scenario &sc, unsigned long n, bool *injected, long *ret)
{
	State s;
	Counts before = counts();
	std::string f;

	s.buf = static_cast<unsigned char *>(aligned_alloc(kBs, kBatch * kBs));
	memset(s.buf, 0x5a, kBatch * kBs);
	if (!sc.prepare(s)) {
		f = "the uninjected setup failed";
	} else {
		uk::fail_nth_write(n);
		*ret = sc.op(s);
		*injected = n != 0 && uk::fail_nth_read() == 0;
		uk::fail_nth_write(0);
		bool allowed = *ret >= 0;
		for (long e : sc.errors)
			allowed |= *injected && *ret == e;
		if (!allowed)
			f = "returned " + errname(*ret);
	}
	std::string g = sc.finish(s, *ret);
	if (f.empty())
		f = g;
	free(s.buf);
	std::string d = diff(before, counts());
	if (f.empty() && !d.empty())
		f = "left behind:" + d;
	return f;
}

} // namespace

int main(int argc, char **argv)
{
	unsigned long max_n = 0;
	const char *only = nullptr;
	bool verbose = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max-n") && i + 1 < argc) {
			max_n = strtoul(argv[++i], nullptr, 0);
		} else if (!strcmp(argv[i], "--scenario") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "-v")) {
			verbose = true;
		} else {
			fprintf(stderr,
				"usage: ukern-failsweep [--max-n N] [--scenario SUBSTRING] [-v]\n");
			return 2;
		}
	}
	signal(SIGALRM, on_alarm);
	null_blk_reset_module_params();

	std::vector<Scenario> all = scenarios();
	std::vector<Result> results(all.size());
	bool bad = false;

	for (size_t i = 0; i < all.size(); i++) {
		const Scenario &sc = all[i];
		Result &res = results[i];
		bool injected = false;
		long ret = 0;

		if (only && !strstr(sc.name.c_str(), only))
			continue;
		scenario_now = sc.name.c_str();
		// A first run sets up what stays for the process (caches, queues).
		alarm(60);
		(void)run_once(sc, 0, &injected, &ret);
		std::string f = run_once(sc, 0, &injected, &ret);
		if (!f.empty())
			res.findings.push_back("uninjected: " + f);
		for (unsigned long n = 1; res.findings.size() < 5 && (max_n == 0 || n <= max_n);
		     n++) {
			n_now = n;
			alarm(60);
			f = run_once(sc, n, &injected, &ret);
			if (!injected && f.empty())
				break;
			res.sites++;
			res.outcomes[ret >= 0 && ret < sc.full ? "partial" : errname(ret)]++;
			if (f.empty()) {
				// The next operations still work.
				bool again = false;
				long r2 = 0;

				f = run_once(sc, 0, &again, &r2);
				if (!f.empty())
					f = "the uninjected run after it: " + f;
			}
			if (verbose)
				printf("%-28s n=%-4lu %-8s %s\n", sc.name.c_str(), n,
				       errname(ret).c_str(), f.c_str());
			if (!f.empty())
				res.findings.push_back("fail-nth " + std::to_string(n) + ": " + f);
		}
		alarm(0);
		bad |= !res.findings.empty();
	}

	printf("%-28s %6s  %-32s %s\n", "scenario", "sites", "results under injection", "findings");
	for (size_t i = 0; i < all.size(); i++) {
		std::string outs;

		if (only && !strstr(all[i].name.c_str(), only))
			continue;
		for (auto &o : results[i].outcomes)
			outs += (outs.empty() ? "" : ", ") + o.first + " " +
				std::to_string(o.second);
		printf("%-28s %6lu  %-32s %zu\n", all[i].name.c_str(), results[i].sites,
		       outs.empty() ? "-" : outs.c_str(), results[i].findings.size());
	}
	for (size_t i = 0; i < all.size(); i++)
		for (auto &f : results[i].findings)
			printf("FINDING: %s: %s\n", all[i].name.c_str(), f.c_str());
	return bad ? 1 : 0;
}
