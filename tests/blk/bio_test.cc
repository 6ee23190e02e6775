// SPDX-License-Identifier: GPL-2.0-only
// block/bio.c's clones, splits and trims, copies between bios, bio_kmalloc()
// and bio_await_chain(): bios over plain memory, no device needed.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include <uk/linux/bio.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/slab.h>

#include "testmain.h"

namespace {

alignas(4096) char src_buf[4 * 4096];
alignas(4096) char dst_buf[4 * 4096];

// @bio (with room for 4 vecs) over the first @pages pages of @buf.
void FillPages(struct bio *bio, char *buf, int pages) {
  for (int i = 0; i < pages; i++)
    __bio_add_page(bio, virt_to_page(buf + i * 4096), 4096, 0);
}

TEST(BioCloneTest, ACloneSharesTheVecsAndTheRange) {
  struct bio_set bs = {};
  ASSERT_EQ(bioset_init(&bs, 2, 0, BIOSET_NEED_BVECS), 0);
  struct bio_vec vecs[4];
  struct bio src;
  bio_init(&src, nullptr, vecs, 4, REQ_OP_WRITE);
  FillPages(&src, src_buf, 4);
  src.bi_iter.bi_sector = 100;
  src.bi_ioprio = 3;
  bio_set_flag(&src, BIO_REMAPPED);

  struct bio *clone = bio_alloc_clone(nullptr, &src, GFP_KERNEL, &bs);
  ASSERT_NE(clone, nullptr);
  EXPECT_EQ(clone->bi_io_vec, src.bi_io_vec);
  EXPECT_EQ(clone->bi_iter.bi_sector, 100u);
  EXPECT_EQ(clone->bi_iter.bi_size, 4u * 4096);
  EXPECT_EQ(clone->bi_opf, (blk_opf_t)REQ_OP_WRITE);
  EXPECT_EQ(clone->bi_ioprio, 3);
  EXPECT_TRUE(bio_flagged(clone, BIO_CLONED));
  // No device: the remapped state is not carried over.
  EXPECT_FALSE(bio_flagged(clone, BIO_REMAPPED));
  bio_put(clone);

  struct bio on_stack;
  ASSERT_EQ(bio_init_clone(nullptr, &on_stack, &src, GFP_KERNEL), 0);
  EXPECT_EQ(on_stack.bi_io_vec, src.bi_io_vec);
  EXPECT_EQ(on_stack.bi_max_vecs, 0);
  EXPECT_EQ(on_stack.bi_iter.bi_size, 4u * 4096);
  EXPECT_EQ(on_stack.bi_pool, nullptr);
  bio_uninit(&on_stack);
  bio_uninit(&src);
  bioset_exit(&bs);
}

TEST(BioCloneTest, SplitTakesTheFrontAndAdvancesTheRest) {
  struct bio_set bs = {};
  ASSERT_EQ(bioset_init(&bs, 2, 0, BIOSET_NEED_BVECS), 0);
  struct bio_vec vecs[4];
  struct bio bio;
  bio_init(&bio, nullptr, vecs, 4, REQ_OP_READ);
  FillPages(&bio, src_buf, 4);
  bio.bi_iter.bi_sector = 64;
  bio_set_flag(&bio, BIO_TRACE_COMPLETION);

  // 12 sectors: the first page and half of the second.
  struct bio *front = bio_split(&bio, 12, GFP_KERNEL, &bs);
  ASSERT_NE(front, nullptr);
  EXPECT_EQ(front->bi_iter.bi_sector, 64u);
  EXPECT_EQ(front->bi_iter.bi_size, 12u * 512);
  EXPECT_TRUE(bio_flagged(front, BIO_TRACE_COMPLETION));
  EXPECT_EQ(bio.bi_iter.bi_sector, 76u);
  EXPECT_EQ(bio.bi_iter.bi_size, 4u * 4096 - 12 * 512);
  EXPECT_EQ(bio.bi_iter.bi_idx, 1u);
  EXPECT_EQ(bio.bi_iter.bi_bvec_done, 2048u);
  // The rest starts in the middle of the second page.
  struct bio_vec bv = bio_iter_iovec(&bio, bio.bi_iter);
  EXPECT_EQ(bvec_virt(&bv), src_buf + 4096 + 2048);
  bio_put(front);

  // Trim the rest to 4 sectors, 2 sectors in.
  bio_trim(&bio, 2, 4);
  EXPECT_EQ(bio.bi_iter.bi_sector, 78u);
  EXPECT_EQ(bio.bi_iter.bi_size, 4u * 512);
  // A range past the end is refused with a warning.
  uk::testing::AllowWarnings();
  bio_trim(&bio, 2, 4);
  EXPECT_EQ(bio.bi_iter.bi_size, 4u * 512);
  EXPECT_EQ(bio.bi_iter.bi_sector, 78u);
  bio_trim(&bio, 2, 2);
  EXPECT_EQ(bio.bi_iter.bi_sector, 80u);
  EXPECT_EQ(bio.bi_iter.bi_size, 2u * 512);
  // Advancing over everything leaves an empty bio where it was.
  bio_advance(&bio, 1024);
  EXPECT_EQ(bio.bi_iter.bi_size, 0u);
  bio_uninit(&bio);
  bioset_exit(&bs);
}

TEST(BioCopyTest, CopiesAsFarAsBothReach) {
  for (int i = 0; i < 4 * 4096; i++) src_buf[i] = (char)(i * 7 + 1);
  memset(dst_buf, 0, sizeof(dst_buf));
  struct bio_vec svecs[4], dvecs[4];
  struct bio src, dst;
  bio_init(&src, nullptr, svecs, 4, REQ_OP_READ);
  bio_init(&dst, nullptr, dvecs, 4, REQ_OP_WRITE);
  // The source: 3 pages from 512 bytes in; the destination: 2 pages, so
  // that the segments of the two never line up.
  __bio_add_page(&src, virt_to_page(src_buf), 4096 - 512, 512);
  __bio_add_page(&src, virt_to_page(src_buf + 4096), 4096, 0);
  __bio_add_page(&src, virt_to_page(src_buf + 8192), 4096, 0);
  FillPages(&dst, dst_buf, 2);

  bio_copy_data(&dst, &src);
  EXPECT_EQ(memcmp(dst_buf, src_buf + 512, 8192), 0);
  EXPECT_EQ(dst_buf[8192], 0);
  // The bios' own iterators did not move.
  EXPECT_EQ(src.bi_iter.bi_size, 3u * 4096 - 512);
  EXPECT_EQ(dst.bi_iter.bi_size, 2u * 4096);
  bio_uninit(&src);
  bio_uninit(&dst);
}

TEST(BioKmallocTest, InlineVecsUpToTheLimit) {
  long before = uk::kmalloc_nr_allocated();
  struct bio *bio = bio_kmalloc(8, GFP_KERNEL);
  ASSERT_NE(bio, nullptr);
  bio_init(bio, nullptr, bio->bi_inline_vecs, 8, REQ_OP_READ);
  for (int i = 0; i < 8; i++)
    __bio_add_page(bio, virt_to_page(src_buf), 512, 512 * i);
  EXPECT_EQ(bio->bi_iter.bi_size, 8u * 512);
  bio_uninit(bio);
  kfree(bio);
  EXPECT_EQ(bio_kmalloc(BIO_MAX_INLINE_VECS + 1, GFP_KERNEL), nullptr);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), before);
}

TEST(BioChainTest, AwaitChainWaitsForEveryChild) {
  struct gendisk disk = {};
  struct block_device bdev = {};
  bdev.bd_disk = &disk;
  struct bio *parent = bio_alloc(&bdev, 0, REQ_OP_WRITE, GFP_KERNEL);
  ASSERT_NE(parent, nullptr);
  struct bio *child[2];
  for (auto &c : child) {
    c = bio_alloc(&bdev, 0, REQ_OP_WRITE, GFP_KERNEL);
    ASSERT_NE(c, nullptr);
    bio_chain(c, parent);
  }
  std::atomic<bool> returned{false};
  std::thread waiter([&] {
    bio_await_chain(parent);
    returned = true;
  });
  // The parent's own end does not release the waiter while children run.
  for (int i = 0; i < 2; i++) {
    EXPECT_FALSE(returned.load());
    child[i]->bi_status = i ? BLK_STS_IOERR : BLK_STS_OK;
    bio_endio(child[i]);
  }
  ASSERT_TRUE(uk::testing::WaitFor([&] { return returned.load(); }));
  waiter.join();
}

}  // namespace
