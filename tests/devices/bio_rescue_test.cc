// SPDX-License-Identifier: GPL-2.0-only
// A bio_set's rescuer (block/bio.c): a submitter below submit_bio_noacct()
// whose earlier bios wait on current->bio_list allocates first without
// reclaim; when that fails, its bios of this bio_set go to the rescuer
// workqueue, which submits them, and those of other bio_sets stay on the
// list.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include <uk/linux/bio.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>

#include "nullb_fixture.h"
#include "testmain.h"

namespace {

using uk::testing::WaitFor;

alignas(4096) char g_buf[4096];

struct Done {
  std::atomic<int> n{0};
  std::atomic<int> other_thread{0};
  std::thread::id submitter = std::this_thread::get_id();
};

void bio_done(struct bio *bio) {
  Done *d = static_cast<Done *>(bio->bi_private);
  if (std::this_thread::get_id() != d->submitter) d->other_thread++;
  d->n.fetch_add(1, std::memory_order_release);
  bio_put(bio);
}

class BioRescueTest : public uk::testing::NullbTest {};

TEST_F(BioRescueTest, WaitingBiosOfTheSetGoToTheRescuer) {
  struct block_device *b = Load("irqmode=0 submit_queues=1 gb=1");
  struct bio_set bs = {};
  ASSERT_EQ(bioset_init(&bs, 1, 64, BIOSET_NEED_BVECS | BIOSET_NEED_RESCUER),
            0);
  ASSERT_NE(bs.rescue_workqueue, nullptr);
  Done d;

  // The reserve's one bio, taken while the slab refuses.
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  struct bio *held = bio_alloc_bioset(b, 0, REQ_OP_READ, GFP_KERNEL, &bs);
  uk::fail_nth_write(0);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(bs.bio_pool.curr_nr, 0);

  // Two bios of @bs and one of fs_bio_set wait on current->bio_list.
  struct bio_list lists[2];
  bio_list_init(&lists[0]);
  bio_list_init(&lists[1]);
  struct bio *mine[2], *other;
  for (auto &bio : mine) {
    bio = bio_alloc_bioset(b, 1, REQ_OP_WRITE, GFP_KERNEL, &bs);
    ASSERT_NE(bio, nullptr);
    __bio_add_page(bio, virt_to_page(g_buf), 4096, 0);
    bio->bi_end_io = bio_done;
    bio->bi_private = &d;
  }
  other = bio_alloc(b, 0, REQ_OP_READ, GFP_KERNEL);
  ASSERT_NE(other, nullptr);
  bio_list_add(&lists[0], mine[0]);
  bio_list_add(&lists[0], other);
  bio_list_add(&lists[1], mine[1]);
  current->bio_list = lists;

  // Without reclaim the slab refuses twice (mempool_alloc() asks it again
  // before it gives up) and the reserve is empty: the bios of @bs are
  // punted, then the allocation is made with the caller's mask.
  char name[16];
  snprintf(name, sizeof(name), "bio-%u",
           64 + (unsigned)sizeof(struct bio) +
               BIO_INLINE_VECS * (unsigned)sizeof(struct bio_vec));
  failslab.verbose = 0;
  failslab.probability = 100;
  failslab.interval = 1;
  atomic_set(&failslab.space, 0);
  atomic_set(&failslab.times, 2);
  uk::failslab_set_cache_filter(name);
  struct bio *bio = bio_alloc_bioset(b, 0, REQ_OP_READ, GFP_KERNEL, &bs);
  EXPECT_EQ(atomic_read(&failslab.times), 0);
  failslab.probability = 0;
  uk::failslab_set_cache_filter(nullptr);
  current->bio_list = nullptr;
  ASSERT_NE(bio, nullptr);
  EXPECT_EQ(lists[0].head, other);
  EXPECT_EQ(lists[0].tail, other);
  EXPECT_TRUE(bio_list_empty(&lists[1]));
  flush_workqueue(bs.rescue_workqueue);
  EXPECT_EQ(d.n.load(std::memory_order_acquire), 2);
  EXPECT_EQ(d.other_thread.load(), 2);  // submitted by the rescuer

  bio_put(other);
  bio_put(bio);
  bio_put(held);
  bioset_exit(&bs);
  EXPECT_EQ(bs.rescue_workqueue, nullptr);
}

}  // namespace
