// SPDX-License-Identifier: GPL-2.0-only
//
// I/O accounting of the block layer on a null_blk disk: what the
// /sys/block/<dev>/stat line (part_stat_show()) shows after reads, writes,
// passthrough requests, polled batches and bio-based accounting, and the
// queue's iostats attribute turning it off and on. The virtual clock makes
// the times exact: a jiffy is 4 ms (HZ 250).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include <uk/devices/null_blk.h>
#include <uk/linux/bio.h>
#include <uk/linux/blk-mq.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/errno.h>
#include <uk/linux/part_stat.h>
#include <uk/shim/clock.h>
#include <uk/linux/err.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/sched.h>

#include "../../blk/blk-mq.h"
#include "nullb_fixture.h"
#include "testmain.h"

namespace {

// The 17 fields of /sys/block/<dev>/stat (Documentation/block/stat.rst).
struct Stat {
  unsigned long long f[17];
  unsigned long long read_ios() const { return f[0]; }
  unsigned long long read_merges() const { return f[1]; }
  unsigned long long read_sectors() const { return f[2]; }
  unsigned long long read_ms() const { return f[3]; }
  unsigned long long write_ios() const { return f[4]; }
  unsigned long long write_merges() const { return f[5]; }
  unsigned long long write_sectors() const { return f[6]; }
  unsigned long long write_ms() const { return f[7]; }
  unsigned long long in_flight() const { return f[8]; }
  unsigned long long io_ticks_ms() const { return f[9]; }
  unsigned long long queue_ms() const { return f[10]; }
};

Stat ReadStat(struct block_device *b) {
  char buf[4096];
  Stat s = {};
  ssize_t n = part_stat_show(b, buf);
  EXPECT_GT(n, 0);
  EXPECT_EQ(static_cast<size_t>(n), strlen(buf));
  EXPECT_EQ(buf[n - 1], '\n');
  int got = sscanf(buf,
                   "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
                   "%llu %llu %llu %llu %llu %llu",
                   &s.f[0], &s.f[1], &s.f[2], &s.f[3], &s.f[4], &s.f[5],
                   &s.f[6], &s.f[7], &s.f[8], &s.f[9], &s.f[10], &s.f[11],
                   &s.f[12], &s.f[13], &s.f[14], &s.f[15], &s.f[16]);
  EXPECT_EQ(got, 17) << buf;
  return s;
}

unsigned long long Nsecs(struct block_device *b, int group) {
  return part_stat_read(b, nsecs[group]);
}

struct Done {
  std::atomic<int> calls{0};
  long res = 0;
};

void IoDone(void *priv, long res) {
  Done *d = static_cast<Done *>(priv);
  d->res = res;
  d->calls.fetch_add(1, std::memory_order_release);
}

class BlkStatTest : public uk::testing::NullbIoTest<Done, IoDone> {
 protected:
  void SetUp() override { null_blk_reset_module_params(); }
};

// Each completed read or write counts once, with its sectors; nothing
// merges and nothing stays in flight.
TEST_F(BlkStatTest, CountsReadsAndWrites) {
  struct block_device *b = Load("irqmode=0 gb=1");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(blk_queue_io_stat(bdev_get_queue(b)));
  alignas(4096) static char buf[8192];

  Stat s0 = ReadStat(b);
  for (auto v : s0.f) EXPECT_EQ(v, 0u);

  EXPECT_EQ(Rw(b, false, 0, buf, 4096), 4096);
  EXPECT_EQ(Rw(b, true, 4096, buf, 1024), 1024);
  EXPECT_EQ(Rw(b, true, 8192, buf, 8192), 8192);

  Stat s = ReadStat(b);
  EXPECT_EQ(s.read_ios(), 1u);
  EXPECT_EQ(s.read_sectors(), 8u);
  EXPECT_EQ(s.write_ios(), 2u);
  EXPECT_EQ(s.write_sectors(), 2u + 16u);
  EXPECT_EQ(s.read_merges(), 0u);
  EXPECT_EQ(s.write_merges(), 0u);
  EXPECT_EQ(s.in_flight(), 0u);
  EXPECT_EQ(part_in_flight(b), 0u);
  // Discards and flushes: none.
  for (int i = 11; i < 17; i++) EXPECT_EQ(s.f[i], 0u) << i;
}

// On the virtual clock: an I/O is in flight from its submission to its
// completion, its time is exactly that span, and io_ticks counts the
// jiffies the disk was busy.
TEST_F(BlkStatTest, TimesInFlightAndIoTicks) {
  uk::clock_use_virtual();
  uk::softirq_set_threads(false);
  // Completion 8 ms (two jiffies) after submission, from an hrtimer.
  struct block_device *b = Load("irqmode=2 completion_nsec=8000000 gb=1");
  ASSERT_NE(b, nullptr);
  uk::pin_thread_to_cpu(0);
  alignas(4096) static char buf[4096];

  Done rd;
  ASSERT_EQ(Rw(b, false, 0, buf, 4096, 0, &rd), -EIOCBQUEUED);
  EXPECT_EQ(rd.calls.load(), 0);
  EXPECT_EQ(part_in_flight(b), 1u);
  Stat s = ReadStat(b);
  EXPECT_EQ(s.in_flight(), 1u);
  EXPECT_EQ(s.read_ios(), 0u);  // counted when it completes

  uk::virtual_clock_advance(8000000);
  ASSERT_EQ(rd.calls.load(), 1);
  EXPECT_EQ(rd.res, 4096);
  EXPECT_EQ(part_in_flight(b), 0u);
  EXPECT_EQ(Nsecs(b, STAT_READ), 8000000u);
  s = ReadStat(b);
  EXPECT_EQ(s.read_ios(), 1u);
  EXPECT_EQ(s.read_ms(), 8u);
  EXPECT_EQ(s.queue_ms(), 8u);
  EXPECT_EQ(s.io_ticks_ms(), 8u);

  // Idle for 40 ms: io_ticks does not move.
  uk::virtual_clock_advance(40000000);
  EXPECT_EQ(ReadStat(b).io_ticks_ms(), 8u);

  // A write in flight: reading the line brings io_ticks up to now.
  Done wr;
  ASSERT_EQ(Rw(b, true, 0, buf, 512, 0, &wr), -EIOCBQUEUED);
  uk::virtual_clock_advance(4000000);
  s = ReadStat(b);
  EXPECT_EQ(wr.calls.load(), 0);
  EXPECT_EQ(s.in_flight(), 1u);
  EXPECT_EQ(s.io_ticks_ms(), 12u);
  uk::virtual_clock_advance(4000000);
  ASSERT_EQ(wr.calls.load(), 1);
  s = ReadStat(b);
  EXPECT_EQ(s.write_ios(), 1u);
  EXPECT_EQ(s.write_sectors(), 1u);
  EXPECT_EQ(s.write_ms(), 8u);
  EXPECT_EQ(s.io_ticks_ms(), 16u);
  EXPECT_EQ(s.queue_ms(), 16u);
}

// iostats=0 stops the counting (the kernel's queue attribute); 1 resumes it.
TEST_F(BlkStatTest, IostatsOffStopsCounting) {
  struct block_device *b = Load("irqmode=0 gb=1");
  ASSERT_NE(b, nullptr);
  struct gendisk *disk = b->bd_disk;
  alignas(4096) static char buf[4096];
  char page[16];

  ASSERT_EQ(queue_iostats_show(disk, page), 2);
  EXPECT_STREQ(page, "1\n");
  EXPECT_EQ(Rw(b, false, 0, buf, 4096), 4096);

  EXPECT_EQ(queue_iostats_store(disk, "0\n", 2), 2);
  ASSERT_EQ(queue_iostats_show(disk, page), 2);
  EXPECT_STREQ(page, "0\n");
  EXPECT_FALSE(blk_queue_io_stat(bdev_get_queue(b)));
  EXPECT_EQ(Rw(b, false, 0, buf, 4096), 4096);
  EXPECT_EQ(Rw(b, true, 0, buf, 4096), 4096);
  Stat s = ReadStat(b);
  EXPECT_EQ(s.read_ios(), 1u);
  EXPECT_EQ(s.read_sectors(), 8u);
  EXPECT_EQ(s.write_ios(), 0u);

  // Bad input changes nothing.
  EXPECT_EQ(queue_iostats_store(disk, "yes", 3), -EINVAL);
  EXPECT_EQ(queue_iostats_store(disk, "-1", 2), -EINVAL);
  EXPECT_FALSE(blk_queue_io_stat(bdev_get_queue(b)));

  EXPECT_EQ(queue_iostats_store(disk, "1", 1), 1);
  EXPECT_EQ(Rw(b, true, 0, buf, 4096), 4096);
  s = ReadStat(b);
  EXPECT_EQ(s.read_ios(), 1u);
  EXPECT_EQ(s.write_ios(), 1u);
  EXPECT_EQ(s.write_sectors(), 8u);
}

// A passthrough request through blk_execute_rq() is not accounted, and gets
// no start time; a read request on the same queue gets one.
TEST_F(BlkStatTest, PassthroughIsNotCounted) {
  uk::clock_use_virtual();
  struct block_device *b = Load("irqmode=0 gb=1");
  ASSERT_NE(b, nullptr);
  struct request_queue *q = bdev_get_queue(b);

  struct request *rq = blk_mq_alloc_request(q, REQ_OP_DRV_IN, 0);
  ASSERT_FALSE(IS_ERR(rq));
  EXPECT_TRUE(rq->rq_flags & RQF_IO_STAT);   // the queue's flag...
  EXPECT_FALSE(blk_mq_need_time_stamp(rq));  // ...but no stamps
  EXPECT_EQ(rq->start_time_ns, 0u);
  EXPECT_EQ(blk_execute_rq(rq, false), BLK_STS_OK);
  EXPECT_EQ(rq->part, nullptr);
  blk_mq_free_request(rq);

  Stat s = ReadStat(b);
  for (auto v : s.f) EXPECT_EQ(v, 0u);

  rq = blk_mq_alloc_request(q, REQ_OP_READ, 0);
  ASSERT_FALSE(IS_ERR(rq));
  EXPECT_TRUE(blk_mq_need_time_stamp(rq));
  EXPECT_EQ(rq->start_time_ns, uk::kVirtualClockDefaultStart);
  blk_mq_free_request(rq);
}

// Polled requests end in a batch (blk_mq_end_request_batch()): the batch
// asks for a time stamp and every request of it is counted.
TEST_F(BlkStatTest, PolledBatchIsCounted) {
  uk::clock_use_virtual();
  struct block_device *b = Load("poll_queues=1 submit_queues=1 irqmode=1 gb=1");
  ASSERT_NE(b, nullptr);
  struct request_queue *q = bdev_get_queue(b);
  constexpr int n = 4;
  alignas(4096) static char buf[n][1024];
  Done d[n];
  for (int i = 0; i < n; i++)
    ASSERT_EQ(Rw(b, i & 1, i * 1024, buf[i], 1024, BLKDEV_RW_POLLED, &d[i]),
              -EIOCBQUEUED);
  EXPECT_EQ(part_in_flight(b), unsigned{n});
  uk::virtual_clock_advance(2000000);

  DEFINE_IO_COMP_BATCH(iob);
  EXPECT_EQ(blk_mq_poll(q, 1, &iob, 0), n);
  EXPECT_TRUE(iob.need_ts);
  iob.complete(&iob);
  for (auto &x : d) EXPECT_EQ(x.calls.load(), 1);

  Stat s = ReadStat(b);
  EXPECT_EQ(s.read_ios(), 2u);
  EXPECT_EQ(s.write_ios(), 2u);
  EXPECT_EQ(s.read_sectors(), 4u);
  EXPECT_EQ(s.write_sectors(), 4u);
  EXPECT_EQ(s.in_flight(), 0u);
  EXPECT_EQ(Nsecs(b, STAT_READ), 2u * 2000000u);
  EXPECT_EQ(Nsecs(b, STAT_WRITE), 2u * 2000000u);
}

// blk_mq_in_flight(): the started requests that are accounted, by
// direction; a passthrough request in flight does not count.
TEST_F(BlkStatTest, InFlightCountsAccountedRequestsByDirection) {
  uk::clock_use_virtual();
  uk::softirq_set_threads(false);
  struct block_device *b = Load("irqmode=2 completion_nsec=1000000 gb=1");
  ASSERT_NE(b, nullptr);
  struct request_queue *q = bdev_get_queue(b);
  uk::pin_thread_to_cpu(0);
  alignas(4096) static char buf[3][512];
  unsigned int rw[2] = {7, 7};

  EXPECT_EQ(blk_mq_in_flight(q, b), 0u);
  Done d[3];
  ASSERT_EQ(Rw(b, false, 0, buf[0], 512, 0, &d[0]), -EIOCBQUEUED);
  ASSERT_EQ(Rw(b, true, 0, buf[1], 512, 0, &d[1]), -EIOCBQUEUED);
  ASSERT_EQ(Rw(b, true, 512, buf[2], 512, 0, &d[2]), -EIOCBQUEUED);
  struct request *pt = blk_mq_alloc_request(q, REQ_OP_DRV_IN, 0);
  ASSERT_FALSE(IS_ERR(pt));
  blk_execute_rq_nowait(pt, false);

  EXPECT_EQ(blk_mq_in_flight(q, b), 3u);
  blk_mq_in_flight_rw(q, b, rw);
  EXPECT_EQ(rw[0], 1u);
  EXPECT_EQ(rw[1], 2u);
  EXPECT_EQ(part_in_flight(b), 3u);

  uk::virtual_clock_advance(1000000);
  for (auto &x : d) EXPECT_EQ(x.calls.load(), 1);
  EXPECT_EQ(blk_mq_in_flight(q, b), 0u);
  blk_mq_in_flight_rw(q, b, rw);
  EXPECT_EQ(rw[0], 0u);
  EXPECT_EQ(rw[1], 0u);
  EXPECT_EQ(part_in_flight(b), 0u);
}

// Requests a plug takes in a batch wait in its cache; each gets its start
// time when a bio takes it, the plug's time stamp. (Not a stale one of the
// request's earlier use.)
TEST_F(BlkStatTest, PlugCachedRequestsAreStamped) {
  uk::clock_use_virtual();
  uk::softirq_set_threads(false);
  struct block_device *b = Load("irqmode=2 completion_nsec=1000000 gb=1");
  ASSERT_NE(b, nullptr);
  uk::pin_thread_to_cpu(0);
  constexpr int n = 3;
  alignas(4096) static char buf[n][512];
  Done d[n];

  uk::virtual_clock_advance(5000000);
  struct blk_plug plug;
  blk_start_plug_nr_ios(&plug, 4);
  for (int i = 0; i < n; i++)
    ASSERT_EQ(Rw(b, false, i * 512, buf[i], 512, 0, &d[i]), -EIOCBQUEUED);
  EXPECT_EQ(rq_list_empty(&plug.cached_rqs), 0);  // one left over
  blk_finish_plug(&plug);
  EXPECT_EQ(part_in_flight(b), unsigned{n});

  uk::virtual_clock_advance(1000000);
  for (auto &x : d) EXPECT_EQ(x.calls.load(), 1);
  EXPECT_EQ(Nsecs(b, STAT_READ), n * 1000000u);
  EXPECT_EQ(ReadStat(b).read_ios(), unsigned{n});
}

// The accounting of bio-based drivers: start and end by hand, times in
// jiffies.
TEST_F(BlkStatTest, BioBasedAccounting) {
  uk::clock_use_virtual();
  struct block_device *b = Load("irqmode=0 gb=1");
  ASSERT_NE(b, nullptr);

  struct bio bio;
  bio_init(&bio, b, nullptr, 0, REQ_OP_WRITE);
  bio.bi_iter.bi_size = 16 * 512;
  unsigned long start = bio_start_io_acct(&bio);
  EXPECT_EQ(start, jiffies);
  EXPECT_EQ(part_in_flight(b), 1u);
  unsigned long t = bdev_start_io_acct(b, REQ_OP_READ, jiffies);
  EXPECT_EQ(t, start);
  EXPECT_EQ(part_in_flight(b), 2u);

  uk::virtual_clock_advance(4000000);  // one jiffy
  bio_end_io_acct(&bio, start);
  EXPECT_EQ(part_in_flight(b), 1u);
  uk::virtual_clock_advance(8000000);
  bdev_end_io_acct(b, REQ_OP_READ, 3, t);
  EXPECT_EQ(part_in_flight(b), 0u);

  Stat s = ReadStat(b);
  EXPECT_EQ(s.write_ios(), 1u);
  EXPECT_EQ(s.write_sectors(), 16u);
  EXPECT_EQ(s.write_ms(), 4u);
  EXPECT_EQ(s.read_ios(), 1u);
  EXPECT_EQ(s.read_sectors(), 3u);
  EXPECT_EQ(s.read_ms(), 12u);
  // Busy from the first start to the last end: three jiffies.
  EXPECT_EQ(s.io_ticks_ms(), 12u);

  // A remapped bio counts against the device it was first submitted to.
  bio.bi_iter.bi_size = 2 * 512;
  start = bio_start_io_acct(&bio);
  bio_end_io_acct_remapped(&bio, start, b);
  s = ReadStat(b);
  EXPECT_EQ(s.write_ios(), 2u);
  EXPECT_EQ(s.write_sectors(), 18u);
  bio_uninit(&bio);
}

}  // namespace
