// SPDX-License-Identifier: GPL-2.0-only
// block/blk-core.c's request-queue lifetime: the last blk_put_queue() frees
// the queue after an RCU grace period (blk_free_queue_rcu()), so that an
// RCU callback still at work on the queue's usage counter (the confirmation
// of its switch to atomic mode, whose put may be the last one and wake
// mq_freeze_wq) ends before the queue goes. Also blk_get_queue(), the queue
// flags and blk_op_str(). Entering a queue that admits only PM requests,
// the checks submit_bio_noacct() makes (fail_make_request, read-only and
// end-of-device checks, partition remapping, REQ_NOWAIT), blk_lld_busy()
// and blk_io_schedule().
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <uk/linux/blk-mq.h>
#include <uk/linux/err.h>
#include <uk/linux/part_stat.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/slab.h>
#include <uk/linux/workqueue.h>
#include <uk/shim/cmdline.h>

#include "../../blk/blk-mq.h"
#include "testmain.h"

namespace {

blk_status_t CompleteAtOnce(struct blk_mq_hw_ctx *,
                            const struct blk_mq_queue_data *bd) {
  blk_mq_start_request(bd->rq);
  blk_mq_end_request(bd->rq, BLK_STS_OK);
  return BLK_STS_OK;
}

const struct blk_mq_ops kOps = {
    .queue_rq = CompleteAtOnce,
};

// A tag set of one hardware queue and a queue on it.
void OneQueue(struct blk_mq_tag_set *set, struct request_queue **q) {
  set->ops = &kOps;
  set->nr_hw_queues = 1;
  set->queue_depth = 4;
  set->numa_node = -1;
  ASSERT_EQ(blk_mq_alloc_tag_set(set), 0);
  *q = blk_mq_init_queue(set);
  ASSERT_FALSE(IS_ERR(*q));
}

TEST(QueueTest, LastPutFreesTheQueueAfterAGracePeriod) {
  struct blk_mq_tag_set set = {};
  struct request_queue *q = nullptr;
  ASSERT_NO_FATAL_FAILURE(OneQueue(&set, &q));
  // A second holder of the struct, as a gendisk is: the teardown drops
  // the driver's reference and the queue stays.
  ASSERT_TRUE(blk_get_queue(q));
  blk_mq_destroy_queue(q);
  flush_workqueue(kblockd_workqueue);
  rcu_barrier();
  long before = uk::slab_total_allocated();

  rcu_read_lock();
  blk_put_queue(q);
  // The contexts go at once (blk_mq_release()); inside a read-side section
  // no grace period ends, so the queue itself is there.
  EXPECT_EQ(refcount_read(&q->refs), 0u);
  EXPECT_EQ(q->queue_hw_ctx, nullptr);
  EXPECT_EQ(q->queue_ctx, nullptr);
  long released = uk::slab_total_allocated();
  EXPECT_LT(released, before);
  rcu_read_unlock();

  rcu_barrier();
  // The queue and its usage counter's data.
  EXPECT_EQ(uk::slab_total_allocated(), released - 2);
  blk_mq_free_tag_set(&set);
}

TEST(QueueTest, GetQueueRefusesADyingQueue) {
  struct blk_mq_tag_set set = {};
  struct request_queue *q = nullptr;
  ASSERT_NO_FATAL_FAILURE(OneQueue(&set, &q));

  ASSERT_TRUE(blk_get_queue(q));
  EXPECT_EQ(refcount_read(&q->refs), 2u);
  blk_put_queue(q);

  blk_queue_flag_set(QUEUE_FLAG_DYING, q);
  EXPECT_TRUE(blk_queue_dying(q));
  EXPECT_FALSE(blk_get_queue(q));
  EXPECT_EQ(refcount_read(&q->refs), 1u);
  blk_queue_flag_clear(QUEUE_FLAG_DYING, q);
  EXPECT_FALSE(blk_queue_dying(q));

  blk_mq_destroy_queue(q);  // drops the driver's reference
  rcu_barrier();
  blk_mq_free_tag_set(&set);
}

TEST(QueueTest, OpStrNamesEachOp) {
  EXPECT_STREQ(blk_op_str(REQ_OP_READ), "READ");
  EXPECT_STREQ(blk_op_str(REQ_OP_WRITE), "WRITE");
  EXPECT_STREQ(blk_op_str(REQ_OP_ZONE_RESET_ALL), "ZONE_RESET_ALL");
  EXPECT_STREQ(blk_op_str(REQ_OP_DRV_OUT), "DRV_OUT");
  // A hole in the numbering and a value past the last op.
  EXPECT_STREQ(blk_op_str((enum req_op)4), "UNKNOWN");
  EXPECT_STREQ(blk_op_str(REQ_OP_LAST), "UNKNOWN");
  EXPECT_STREQ(blk_op_str((enum req_op)1000), "UNKNOWN");
}

TEST(QueueTest, PmOnlyAdmitsOnlyPmRequests) {
  struct blk_mq_tag_set set = {};
  struct request_queue *q = nullptr;
  ASSERT_NO_FATAL_FAILURE(OneQueue(&set, &q));

  blk_set_pm_only(q);
  blk_set_pm_only(q);
  EXPECT_EQ(blk_queue_enter(q, BLK_MQ_REQ_NOWAIT), -EAGAIN);
  ASSERT_EQ(blk_queue_enter(q, BLK_MQ_REQ_NOWAIT | BLK_MQ_REQ_PM), 0);
  blk_queue_exit(q);
  // The counter nests: one clear leaves the queue PM-only.
  blk_clear_pm_only(q);
  EXPECT_EQ(blk_queue_enter(q, BLK_MQ_REQ_NOWAIT), -EAGAIN);
  blk_clear_pm_only(q);
  ASSERT_EQ(blk_queue_enter(q, BLK_MQ_REQ_NOWAIT), 0);
  blk_queue_exit(q);
  // A refused entrant gave its reference back: the queue freezes.
  blk_freeze_queue_start(q);
  EXPECT_GT(blk_mq_freeze_queue_wait_timeout(q, 10 * HZ), 0);
  blk_mq_unfreeze_queue(q);

  blk_mq_destroy_queue(q);
  rcu_barrier();
  blk_mq_free_tag_set(&set);
}

std::atomic<bool> device_busy;

bool ReportBusy(struct request_queue *q) { return device_busy.load(); }

TEST(QueueTest, LldBusyAsksTheDriver) {
  struct blk_mq_tag_set set = {};
  struct request_queue *q = nullptr;
  ASSERT_NO_FATAL_FAILURE(OneQueue(&set, &q));
  // Without ->busy the device is never busy.
  EXPECT_EQ(blk_lld_busy(q), 0);

  struct blk_mq_ops ops = kOps;
  ops.busy = ReportBusy;
  q->mq_ops = &ops;
  device_busy = true;
  EXPECT_EQ(blk_lld_busy(q), 1);
  device_busy = false;
  EXPECT_EQ(blk_lld_busy(q), 0);
  q->mq_ops = &kOps;

  blk_mq_destroy_queue(q);
  rcu_barrier();
  blk_mq_free_tag_set(&set);
}

TEST(QueueTest, IoScheduleSleepsUntilWoken) {
  std::atomic<struct task_struct *> sleeper{nullptr};
  std::atomic<bool> woken{false}, back{false};
  std::thread t([&] {
    set_current_state(TASK_UNINTERRUPTIBLE);
    sleeper = current;
    blk_io_schedule();
    back = true;
    EXPECT_TRUE(woken.load());
    EXPECT_EQ(current->in_iowait, 0);
  });
  ASSERT_TRUE(uk::testing::WaitTaskBlocked(sleeper));
  EXPECT_FALSE(back.load());
  woken = true;
  wake_up_process(sleeper.load());
  ASSERT_TRUE(uk::testing::WaitFor([&] { return back.load(); }));
  t.join();
}

// The sectors the driver was handed, for the bio tests below.
std::atomic<long> last_sector{-1};
std::atomic<int> queued{0};
std::atomic<int> last_ioprio{-1};
// When set, the sectors handed to the driver, in order ("lower N").
std::vector<std::string> *lower_log;

blk_status_t RecordAndComplete(struct blk_mq_hw_ctx *,
                               const struct blk_mq_queue_data *bd) {
  last_sector = blk_rq_pos(bd->rq);
  last_ioprio = req_get_ioprio(bd->rq);
  if (lower_log)
    lower_log->push_back("lower " + std::to_string(blk_rq_pos(bd->rq)));
  queued++;
  blk_mq_start_request(bd->rq);
  blk_mq_end_request(bd->rq, BLK_STS_OK);
  return BLK_STS_OK;
}

const struct blk_mq_ops kRecordOps = {
    .queue_rq = RecordAndComplete,
};

// A disk of 64 sectors on one hardware queue, for submit_bio_noacct().
class SubmitBioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_.ops = &kRecordOps;
    set_.nr_hw_queues = 1;
    set_.queue_depth = 4;
    set_.numa_node = -1;
    ASSERT_EQ(blk_mq_alloc_tag_set(&set_), 0);
    struct queue_limits lim = {};
    disk_ = blk_mq_alloc_disk(&set_, &lim, nullptr);
    ASSERT_FALSE(IS_ERR(disk_));
    set_capacity(disk_, 64);
    // One whole page: a bvec names a page and an offset in it.
    buf_ = reinterpret_cast<char *>(get_zeroed_page(GFP_KERNEL));
    ASSERT_NE(buf_, nullptr);
    queued = 0;
    last_sector = -1;
  }
  void TearDown() override {
    free_page(reinterpret_cast<unsigned long>(buf_));
    put_disk(disk_);
    rcu_barrier();
    blk_mq_free_tag_set(&set_);
  }
  // One sector at `sector` of `bdev`, submitted and waited for: 0 or -errno.
  int Submit(struct block_device *bdev, blk_opf_t opf, sector_t sector) {
    struct bio_vec vec;
    struct bio bio;
    bio_init(&bio, bdev, &vec, 1, opf);
    __bio_add_page(&bio, virt_to_page(buf_), 512, 0);
    bio.bi_iter.bi_sector = sector;
    bio.bi_ioprio = prio_;
    int ret = submit_bio_wait(&bio);
    remapped_ = bio_flagged(&bio, BIO_REMAPPED);
    bio_uninit(&bio);
    return ret;
  }
  struct blk_mq_tag_set set_ = {};
  struct gendisk *disk_ = nullptr;
  char *buf_ = nullptr;
  bool remapped_ = false;
  unsigned short prio_ = 0;
};

TEST_F(SubmitBioTest, BeyondTheEndFailsWithEio) {
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 63), 0);
  EXPECT_EQ(last_sector.load(), 63);
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 64), -EIO);
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_WRITE, 1000), -EIO);
  EXPECT_EQ(queued.load(), 1);
}

TEST_F(SubmitBioTest, AWriteToAReadOnlyDiskWarnsOncePerDevice) {
  set_disk_ro(disk_, true);
  EXPECT_TRUE(bdev_read_only(disk_->part0));
  ::testing::internal::CaptureStderr();
  // Reads pass silently; writes pass too, the first with a warning.
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 0), 0);
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_WRITE, 1), 0);
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_WRITE, 2), 0);
  std::string out = ::testing::internal::GetCapturedStderr();
  size_t first = out.find("Trying to write to read-only block-device");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(out.find("Trying to write", first + 1), std::string::npos);
  EXPECT_TRUE(bdev_test_flag(disk_->part0, BD_RO_WARNED));
  EXPECT_EQ(queued.load(), 3);
  set_disk_ro(disk_, false);
  EXPECT_FALSE(bdev_read_only(disk_->part0));
}

TEST_F(SubmitBioTest, FailMakeRequestFailsOnlyMarkedDevices) {
  // "<interval>,<probability>,<space>,<times>": every bio, twice.
  ASSERT_EQ(uk::parse_cmdline("test", "fail_make_request=1,100,0,2"), 0);
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 0), 0);
  EXPECT_EQ(queued.load(), 1);

  bdev_set_flag(disk_->part0, BD_MAKE_IT_FAIL);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 0), -EIO);
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_WRITE, 0), -EIO);
  ::testing::internal::GetCapturedStderr();
  // The two failures are spent.
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 0), 0);
  EXPECT_EQ(queued.load(), 2);
  bdev_clear_flag(disk_->part0, BD_MAKE_IT_FAIL);

  // A malformed value is refused; a name no option or parameter has, too.
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(uk::parse_cmdline("test", "fail_make_request=lots"), -EINVAL);
  EXPECT_EQ(uk::parse_cmdline("test", "fail_make_requests=1,100,0,1"), -ENOENT);
  ::testing::internal::GetCapturedStderr();
}

TEST_F(SubmitBioTest, APartitionIsRemappedOnce) {
  struct block_device part = {};
  part.bd_start_sect = 16;
  part.bd_disk = disk_;
  part.bd_queue = disk_->queue;
  atomic_set(&part.__bd_flags, 1);  // partition 1
  part.bd_stats = alloc_percpu(struct disk_stats);
  ASSERT_NE(part.bd_stats, nullptr);
  ASSERT_TRUE(bdev_is_partition(&part));
  EXPECT_EQ(bdev_whole(&part), disk_->part0);

  EXPECT_EQ(Submit(&part, REQ_OP_READ, 3), 0);
  EXPECT_EQ(last_sector.load(), 19);
  EXPECT_TRUE(remapped_);
  // The whole disk is not remapped.
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 3), 0);
  EXPECT_EQ(last_sector.load(), 3);
  EXPECT_FALSE(remapped_);
  // The remapped bio still names the partition: its I/O counts there and
  // on the whole disk.
  EXPECT_EQ(part_stat_read(&part, ios[STAT_READ]), 1u);
  EXPECT_EQ(part_stat_read(disk_->part0, ios[STAT_READ]), 2u);
  EXPECT_EQ(part_in_flight(&part), 0u);
  EXPECT_EQ(part_in_flight(disk_->part0), 0u);
  // fail_make_request on the partition alone fails it at the remap.
  ASSERT_EQ(uk::parse_cmdline("test", "fail_make_request=1,100,0,1"), 0);
  bdev_set_flag(&part, BD_MAKE_IT_FAIL);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Submit(&part, REQ_OP_READ, 3), -EIO);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(queued.load(), 2);
  free_percpu(part.bd_stats);
}

// A stacking driver above the test disk: its ->submit_bio logs the bio,
// and for the bio at sector 0 submits one bio to itself and two to the disk
// below before it ends that bio. Those children wait on current->bio_list
// until it returns, and then go lowest level first, in submission order.
std::vector<std::string> *stack_log;
struct gendisk *stack_upper;
struct gendisk *stack_lower;
char *stack_buf;
struct bio stack_child[3];
struct bio_vec stack_vec[3];
std::atomic<int> stack_child_ends{0};

void StackChildEnd(struct bio *bio) { stack_child_ends++; }

void StackChild(int i, struct gendisk *disk, sector_t sector) {
  bio_init(&stack_child[i], disk->part0, &stack_vec[i], 1, REQ_OP_READ);
  __bio_add_page(&stack_child[i], virt_to_page(stack_buf), 512, 0);
  stack_child[i].bi_iter.bi_sector = sector;
  stack_child[i].bi_end_io = StackChildEnd;
  submit_bio_noacct(&stack_child[i]);
}

void StackSubmitBio(struct bio *bio) {
  stack_log->push_back("upper " + std::to_string(bio->bi_iter.bi_sector));
  EXPECT_NE(current->bio_list, nullptr);
  if (bio->bi_iter.bi_sector == 0) {
    StackChild(0, stack_upper, 1);
    StackChild(1, stack_lower, 5);
    StackChild(2, stack_lower, 6);
    // Queued on the task's list, not submitted: the lower driver saw none.
    EXPECT_EQ(queued.load(), 0);
    EXPECT_EQ(stack_log->size(), 1u);
  }
  bio_endio(bio);
}

const struct block_device_operations kStackFops = {
    .submit_bio = StackSubmitBio,
};

TEST_F(SubmitBioTest, BiosFromSubmitBioWaitAndGoLowerLevelFirst) {
  std::vector<std::string> log;
  stack_log = &log;
  lower_log = &log;
  stack_buf = buf_;
  stack_child_ends = 0;
  stack_lower = disk_;
  struct queue_limits lim = {};
  stack_upper = blk_mq_alloc_disk(&set_, &lim, nullptr);
  ASSERT_FALSE(IS_ERR(stack_upper));
  stack_upper->fops = &kStackFops;
  set_capacity(stack_upper, 64);
  strcpy(stack_upper->disk_name, "stack0");
  ASSERT_EQ(add_disk(stack_upper), 0);
  EXPECT_TRUE(bdev_test_flag(stack_upper->part0, BD_HAS_SUBMIT_BIO));
  EXPECT_FALSE(bdev_test_flag(disk_->part0, BD_HAS_SUBMIT_BIO));

  EXPECT_EQ(Submit(stack_upper->part0, REQ_OP_READ, 0), 0);
  EXPECT_EQ(current->bio_list, nullptr);
  EXPECT_EQ(stack_child_ends.load(), 3);
  EXPECT_EQ(queued.load(), 2);
  EXPECT_EQ(log, (std::vector<std::string>{"upper 0", "lower 5", "lower 6",
                                           "upper 1"}));
  for (auto &b : stack_child) bio_uninit(&b);

  stack_log = nullptr;
  lower_log = nullptr;
  del_gendisk(stack_upper);
  put_disk(stack_upper);
}

// submit_bio() gives a bio without a priority class the task's priority
// (the default here) and leaves one with a class alone.
TEST_F(SubmitBioTest, SubmitBioSetsTheIoPriority) {
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 0), 0);
  EXPECT_EQ(last_ioprio.load(), IOPRIO_DEFAULT);
  prio_ = IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 3);
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 0), 0);
  EXPECT_EQ(last_ioprio.load(), IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 3));
}

// No device here is zoned: a zone append is not supported.
TEST_F(SubmitBioTest, ZoneAppendIsNotSupported) {
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_ZONE_APPEND, 0), -EOPNOTSUPP);
  EXPECT_EQ(queued.load(), 0);
}

// An atomic write must fit the queue's atomic write units: none by default.
TEST_F(SubmitBioTest, AtomicWriteFollowsTheQueueUnits) {
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_WRITE | REQ_ATOMIC, 0), -EINVAL);
  disk_->queue->limits.atomic_write_unit_min = 512;
  disk_->queue->limits.atomic_write_unit_max = 4096;
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_WRITE | REQ_ATOMIC, 0), 0);
  // 512 bytes: not a multiple of the smallest unit.
  disk_->queue->limits.atomic_write_unit_min = 1024;
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_WRITE | REQ_ATOMIC, 0), -EINVAL);
  // Beyond the largest unit.
  disk_->queue->limits.atomic_write_unit_min = 256;
  disk_->queue->limits.atomic_write_unit_max = 256;
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_WRITE | REQ_ATOMIC, 0), -EINVAL);
  EXPECT_EQ(queued.load(), 1);
}

TEST_F(SubmitBioTest, NowaitNeedsADeviceThatSupportsIt) {
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ | REQ_NOWAIT, 0), 0);
  disk_->queue->limits.features &= ~BLK_FEAT_NOWAIT;
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ | REQ_NOWAIT, 0), -EOPNOTSUPP);
  EXPECT_EQ(Submit(disk_->part0, REQ_OP_READ, 0), 0);
  disk_->queue->limits.features |= BLK_FEAT_NOWAIT;
  EXPECT_EQ(queued.load(), 2);
}

TEST_F(SubmitBioTest, NextBioSubmitsThePreviousAsAChild) {
  struct bio *bio = nullptr;
  for (int i = 0; i < 3; i++) {
    bio = blk_next_bio(bio, disk_->part0, 1, REQ_OP_WRITE, GFP_KERNEL);
    ASSERT_NE(bio, nullptr);
    __bio_add_page(bio, virt_to_page(buf_), 512, 0);
    bio->bi_iter.bi_sector = i;
  }
  // The first two went to the driver when their successors were made.
  EXPECT_EQ(queued.load(), 2);
  EXPECT_EQ(last_sector.load(), 1);
  EXPECT_EQ(submit_bio_wait(bio), 0);
  EXPECT_EQ(queued.load(), 3);
  bio_put(bio);
}

TEST_F(SubmitBioTest, GuardEodCutsAReadAtTheEndAndZeroesTheRest) {
  memset(buf_, 0xff, PAGE_SIZE);
  struct bio_vec vec;
  struct bio bio;
  bio_init(&bio, disk_->part0, &vec, 1, REQ_OP_READ);
  __bio_add_page(&bio, virt_to_page(buf_), 2048, 0);
  bio.bi_iter.bi_sector = 62;
  guard_bio_eod(&bio);
  EXPECT_EQ(bio.bi_iter.bi_size, 1024u);
  EXPECT_EQ((unsigned char)buf_[1023], 0xff);
  EXPECT_EQ(buf_[1024], 0);
  EXPECT_EQ(buf_[2047], 0);
  EXPECT_EQ((unsigned char)buf_[2048], 0xff);
  EXPECT_EQ(submit_bio_wait(&bio), 0);
  EXPECT_EQ(last_sector.load(), 62);
  bio_uninit(&bio);

  // A bio that starts past the end is left to fail whole.
  bio_init(&bio, disk_->part0, &vec, 1, REQ_OP_WRITE);
  __bio_add_page(&bio, virt_to_page(buf_), 2048, 0);
  bio.bi_iter.bi_sector = 64;
  guard_bio_eod(&bio);
  EXPECT_EQ(bio.bi_iter.bi_size, 2048u);
  EXPECT_EQ(submit_bio_wait(&bio), -EIO);
  bio_uninit(&bio);
}

}  // namespace
