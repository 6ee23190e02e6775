// SPDX-License-Identifier: GPL-2.0-only
// block/bio.c's clones, splits and trims, copies between bios, bio_kmalloc()
// and bio_await_chain(), adding pages and folios (merging, the hardware
// limits of passthrough, zone append refused), filling bios from kvec and
// bvec iterators, and bio_free_pages(): bios over plain memory, no device
// needed.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include <uk/linux/bio.h>
#include <uk/linux/blkdev.h>
#include <uk/linux/slab.h>
#include <uk/linux/uio.h>

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

// memcpy_from_bvec()/memcpy_to_bvec() move exactly the vec's bytes; no page
// is in high memory, so bvec_virt() never warns.
TEST(BioCopyTest, BvecCopiesMoveTheVecsBytes) {
  for (int i = 0; i < 4096; i++) src_buf[i] = (char)(i * 3 + 5);
  struct bio_vec bv;
  bvec_set_virt(&bv, src_buf + 100, 300);
  char out[302];
  memset(out, 0x5a, sizeof(out));
  long warns = uk::warn_count;
  memcpy_from_bvec(out + 1, &bv);
  EXPECT_EQ(memcmp(out + 1, src_buf + 100, 300), 0);
  EXPECT_EQ(out[0], 0x5a);
  EXPECT_EQ(out[301], 0x5a);

  memset(dst_buf, 0, 4096);
  bvec_set_virt(&bv, dst_buf + 4000, 96);
  memcpy_to_bvec(&bv, src_buf);
  EXPECT_EQ(memcmp(dst_buf + 4000, src_buf, 96), 0);
  EXPECT_EQ(dst_buf[3999], 0);
  EXPECT_EQ(bvec_virt(&bv), dst_buf + 4000);
  EXPECT_EQ(uk::warn_count, warns);
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

alignas(4096) char add_buf[8 * 4096];

struct page *Page(int n) {
  return virt_to_page(add_buf + n * 4096);
}

// bio_add_page() merges bytes that follow the last segment in memory, in
// its page or across into the next one; others take a new segment while
// there is one; the size never passes UINT_MAX.
TEST(BioAddTest, PagesMergeWhenTheyFollowInMemory) {
  struct bio *bio = bio_alloc(nullptr, 2, REQ_OP_WRITE, GFP_KERNEL);
  ASSERT_NE(bio, nullptr);
  ASSERT_EQ(bio->bi_max_vecs, BIO_INLINE_VECS);
  EXPECT_EQ(bio_add_page(bio, Page(0), 512, 0), 512);
  EXPECT_EQ(bio_add_page(bio, Page(0), 3584, 512), 3584);  // same page
  EXPECT_EQ(bio_add_page(bio, Page(1), 100, 0), 100);      // next page
  EXPECT_EQ(bio->bi_vcnt, 1);
  EXPECT_EQ(bio->bi_io_vec[0].bv_len, 4196u);
  for (int i = 0; i < BIO_INLINE_VECS - 1; i++)
    EXPECT_EQ(bio_add_page(bio, Page(2 + i), 8, 8), 8) << i;  // a gap each
  EXPECT_EQ(bio->bi_vcnt, BIO_INLINE_VECS);
  EXPECT_EQ(bio_add_page(bio, Page(6), 8, 8), 0);   // no segment left
  EXPECT_EQ(bio_add_page(bio, Page(4), 8, 16), 8);  // but a merge fits
  EXPECT_EQ(bio->bi_iter.bi_size, 4196u + 4 * 8);
  bio->bi_iter.bi_size = UINT_MAX - 4;
  EXPECT_EQ(bio_add_page(bio, Page(4), 8, 24), 0);
  bio_put(bio);

  // A folio's bytes go in by page: the offset picks the page.
  struct folio *folio = reinterpret_cast<struct folio *>(add_buf);
  bio = bio_alloc(nullptr, 2, REQ_OP_READ, GFP_KERNEL);
  ASSERT_NE(bio, nullptr);
  EXPECT_TRUE(bio_add_folio(bio, folio, 100, 4096 + 8));
  EXPECT_EQ(bio->bi_io_vec[0].bv_page, Page(1));
  EXPECT_EQ(bio->bi_io_vec[0].bv_offset, 8u);
  EXPECT_FALSE(bio_add_folio(bio, folio, (size_t)UINT_MAX + 1, 0));
  bio_add_folio_nofail(bio, folio, 512, 2 * 4096 + 512);
  EXPECT_EQ(bio->bi_vcnt, 2);
  EXPECT_EQ(bio->bi_io_vec[1].bv_page, Page(2));
  EXPECT_EQ(bio->bi_io_vec[1].bv_offset, 512u);
  EXPECT_EQ(bio->bi_iter.bi_size, 612u);
  bio_put(bio);
}

TEST(BioAddTest, ACloneTakesNoPage) {
  uk::testing::AllowWarnings();
  struct bio_vec vecs[1];
  struct bio bio;
  bio_init(&bio, nullptr, vecs, 1, REQ_OP_WRITE);
  bio_set_flag(&bio, BIO_CLONED);
  long warns = uk::warn_count;
  EXPECT_EQ(bio_add_page(&bio, Page(0), 512, 0), 0);
  EXPECT_EQ(warns + 1, uk::warn_count);
  bio_uninit(&bio);
}

// Passthrough segments: cut to the queue's segment size, merged only
// within it and the segment boundary, no more segments than the queue
// takes, no gap where the device has a virtual boundary, and the bio
// within max_hw_sectors.
TEST(BioAddTest, PassthroughKeepsTheQueueLimits) {
  struct request_queue q = {};
  q.limits.max_hw_sectors = 16;  // 8 KiB
  q.limits.max_segment_size = 4096;
  q.limits.max_segments = 2;
  q.limits.seg_boundary_mask = 0xffffffffUL;
  struct bio_vec vecs[4];
  struct bio bio;
  bio_init(&bio, nullptr, vecs, 4, REQ_OP_DRV_OUT);

  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(0), 6000, 0), 4096);
  // Follows in memory, but the merged segment would pass 4 KiB.
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(1), 1000, 0), 1000);
  EXPECT_EQ(bio.bi_vcnt, 2);
  bool same_page = false;
  EXPECT_EQ(bio_add_hw_page(&q, &bio, Page(1), 500, 1000, 16, &same_page), 500);
  EXPECT_TRUE(same_page);
  EXPECT_EQ(bio.bi_vcnt, 2);
  EXPECT_EQ(bio.bi_iter.bi_size, 5596u);
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(3), 100, 0), 0);      // 2 segments
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(1), 3000, 1500), 0);  // > 8 KiB
  bio_uninit(&bio);

  // Segments do not cross the boundary mask, however they follow.
  q.limits.seg_boundary_mask = 4095;
  bio_init(&bio, nullptr, vecs, 4, REQ_OP_DRV_OUT);
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(0), 2048, 2048), 2048);
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(1), 100, 0), 100);
  EXPECT_EQ(bio.bi_vcnt, 2);
  bio_uninit(&bio);

  // A virtual boundary: a segment may not end or start inside it.
  q.limits.virt_boundary_mask = 4095;
  bio_init(&bio, nullptr, vecs, 4, REQ_OP_DRV_OUT);
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(0), 512, 0), 512);
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(2), 512, 0), 0);
  bio_uninit(&bio);
  bio_init(&bio, nullptr, vecs, 4, REQ_OP_DRV_OUT);
  q.limits.max_segments = 4;
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(0), 4096, 0), 4096);
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(2), 512, 0), 512);
  EXPECT_EQ(bio_add_pc_page(&q, &bio, Page(4), 512, 8), 0);
  bio_uninit(&bio);

  // Folios: by their first page; sizes past UINT_MAX are refused.
  struct folio *folio = reinterpret_cast<struct folio *>(add_buf);
  bio_init(&bio, nullptr, vecs, 4, REQ_OP_DRV_OUT);
  EXPECT_EQ(bio_add_hw_folio(&q, &bio, folio, 512, 0, 16, &same_page), 512);
  EXPECT_EQ(bio_add_hw_folio(&q, &bio, folio, (size_t)UINT_MAX + 1, 0, 16,
                             &same_page),
            0);
  EXPECT_EQ(bio.bi_io_vec[0].bv_page, Page(0));
  bio_uninit(&bio);

  // bvec_try_merge_hw_page() alone: the boundary, then the segment size.
  struct bio_vec bv;
  bvec_set_page(&bv, Page(0), 4000, 0);
  EXPECT_FALSE(bvec_try_merge_hw_page(&q, &bv, Page(0), 200, 4000, &same_page));
  q.limits.seg_boundary_mask = 0xffffffffUL;
  EXPECT_FALSE(bvec_try_merge_hw_page(&q, &bv, Page(0), 200, 4000, &same_page));
  q.limits.max_segment_size = 8192;
  EXPECT_TRUE(bvec_try_merge_hw_page(&q, &bv, Page(0), 200, 4000, &same_page));
  EXPECT_EQ(bv.bv_len, 4200u);
  EXPECT_TRUE(same_page);  // the new bytes start in the vec's last page
}

// No device is zoned: zone append pages are refused, with a warning.
TEST(BioAddTest, ZoneAppendIsRefused) {
  uk::testing::AllowWarnings();
  struct request_queue q = {};
  struct block_device bdev = {};
  bdev.bd_queue = &q;
  struct bio_vec vecs[1];
  struct bio bio;
  long warns = uk::warn_count;
  bio_init(&bio, &bdev, vecs, 1, REQ_OP_WRITE);
  EXPECT_EQ(bio_add_zone_append_page(&bio, Page(0), 512, 0), 0);
  bio_uninit(&bio);
  bio_init(&bio, &bdev, vecs, 1, REQ_OP_ZONE_APPEND);
  EXPECT_EQ(bio_add_zone_append_page(&bio, Page(0), 512, 0), 0);
  bio_uninit(&bio);
  EXPECT_EQ(bio.bi_vcnt, 0);
  EXPECT_EQ(warns + 2, uk::warn_count);
}

// bio_for_each_segment_all() cuts every vec into its pages, from the
// vec's start whatever the bio's iterator says.
TEST(BioFreePagesTest, SegmentsAllAreSinglePages) {
  struct bio_vec vecs[2];
  struct bio bio;
  bio_init(&bio, nullptr, vecs, 2, REQ_OP_READ);
  __bio_add_page(&bio, Page(0), 2 * 4096, 512);  // pages 0..2
  __bio_add_page(&bio, Page(5), 100, 8);
  bio_advance(&bio, 4096);
  struct bio_vec *bv;
  struct bvec_iter_all iter_all;
  std::vector<struct bio_vec> seen;
  bio_for_each_segment_all(bv, &bio, iter_all) seen.push_back(*bv);
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].bv_page, Page(0));
  EXPECT_EQ(seen[0].bv_offset, 512u);
  EXPECT_EQ(seen[0].bv_len, 3584u);
  EXPECT_EQ(seen[1].bv_page, Page(1));
  EXPECT_EQ(seen[1].bv_offset, 0u);
  EXPECT_EQ(seen[1].bv_len, 4096u);
  EXPECT_EQ(seen[2].bv_page, Page(2));
  EXPECT_EQ(seen[2].bv_len, 512u);
  EXPECT_EQ(seen[3].bv_page, Page(5));
  EXPECT_EQ(seen[3].bv_offset, 8u);
  EXPECT_EQ(seen[3].bv_len, 100u);
  bio_uninit(&bio);
}

// Every page goes back to the page allocator, merged vecs page by page.
TEST(BioFreePagesTest, GivesEveryPageBack) {
  long before = uk::page_alloc_nr_allocated();
  struct bio *bio = bio_alloc(nullptr, 4, REQ_OP_READ, GFP_KERNEL);
  ASSERT_NE(bio, nullptr);
  for (int i = 0; i < 4; i++) {
    struct page *page = alloc_page(GFP_KERNEL);
    ASSERT_NE(page, nullptr);
    memset(page_address(page), i, PAGE_SIZE);
    EXPECT_EQ(bio_add_page(bio, page, PAGE_SIZE, 0), (int)PAGE_SIZE);
  }
  EXPECT_EQ(bio->bi_iter.bi_size, 4 * PAGE_SIZE);
  EXPECT_EQ(uk::page_alloc_nr_allocated(), before + 4);
  bio_free_pages(bio);
  EXPECT_EQ(uk::page_alloc_nr_allocated(), before);
  bio_put(bio);
}

alignas(4096) char iov_buf[8 * 4096];

struct page *IovPage(int n) {
  return virt_to_page(iov_buf + n * 4096);
}

// A kvec's bytes go in by page: pages that follow in memory share a vec,
// and the iterator is left where the bio stopped.
TEST(BioIovIterTest, KvecPagesAreAddedAndMerged) {
  struct kvec kv[2] = {{iov_buf + 512, 3 * 4096}, {iov_buf + 5 * 4096, 4096}};
  struct iov_iter iter;
  iov_iter_kvec(&iter, ITER_DEST, kv, 2, 4 * 4096);
  struct bio_vec vecs[8];
  struct bio bio;
  bio_init(&bio, nullptr, vecs, 8, REQ_OP_READ);
  EXPECT_EQ(bio_iov_iter_get_pages(&bio, &iter), 0);
  EXPECT_FALSE(bio_flagged(&bio, BIO_PAGE_PINNED));
  EXPECT_FALSE(bio_flagged(&bio, BIO_CLONED));
  ASSERT_EQ(bio.bi_vcnt, 2);
  EXPECT_EQ(bio.bi_io_vec[0].bv_page, IovPage(0));
  EXPECT_EQ(bio.bi_io_vec[0].bv_offset, 512u);
  EXPECT_EQ(bio.bi_io_vec[0].bv_len, 3u * 4096);
  EXPECT_EQ(bio.bi_io_vec[1].bv_page, IovPage(5));
  EXPECT_EQ(bio.bi_io_vec[1].bv_offset, 0u);
  EXPECT_EQ(bio.bi_io_vec[1].bv_len, 4096u);
  EXPECT_EQ(bio.bi_iter.bi_size, 4u * 4096);
  EXPECT_EQ(iov_iter_count(&iter), 0u);
  bio_uninit(&bio);

  // A bio that runs out of vecs stops; the rest stays in the iterator.
  struct kvec small[3] = {
      {iov_buf, 512}, {iov_buf + 2 * 4096, 512}, {iov_buf + 4 * 4096, 512}};
  iov_iter_kvec(&iter, ITER_SOURCE, small, 3, 3 * 512);
  bio_init(&bio, nullptr, vecs, 2, REQ_OP_WRITE);
  EXPECT_EQ(bio_iov_iter_get_pages(&bio, &iter), 0);
  ASSERT_EQ(bio.bi_vcnt, 2);
  EXPECT_EQ(bio.bi_io_vec[0].bv_page, IovPage(0));
  EXPECT_EQ(bio.bi_io_vec[1].bv_page, IovPage(2));
  EXPECT_EQ(bio.bi_iter.bi_size, 1024u);
  EXPECT_EQ(iov_iter_count(&iter), 512u);
  EXPECT_EQ(iter.kvec, &small[2]);
  bio_uninit(&bio);
}

// With a device the bio takes whole logical blocks only: the tail goes
// back to the iterator, and a tail alone is -EFAULT.
TEST(BioIovIterTest, KvecIsCutToLogicalBlocks) {
  struct request_queue q = {};
  q.limits.logical_block_size = 512;
  struct gendisk disk = {};
  disk.queue = &q;
  struct block_device bdev = {};
  bdev.bd_disk = &disk;
  bdev.bd_queue = &q;
  struct kvec kv = {iov_buf + 100, 1000};
  struct iov_iter iter;
  iov_iter_kvec(&iter, ITER_DEST, &kv, 1, 1000);
  struct bio_vec vecs[4];
  struct bio bio;
  bio_init(&bio, &bdev, vecs, 4, REQ_OP_READ);
  EXPECT_EQ(bio_iov_iter_get_pages(&bio, &iter), 0);
  ASSERT_EQ(bio.bi_vcnt, 1);
  EXPECT_EQ(bio.bi_io_vec[0].bv_offset, 100u);
  EXPECT_EQ(bio.bi_iter.bi_size, 512u);
  EXPECT_EQ(iov_iter_count(&iter), 488u);
  EXPECT_EQ(iter.iov_offset, 512u);
  EXPECT_EQ(iter.nr_segs, 1u);
  bio_uninit(&bio);

  bio_init(&bio, &bdev, vecs, 4, REQ_OP_READ);
  EXPECT_EQ(bio_iov_iter_get_pages(&bio, &iter), -EFAULT);
  EXPECT_EQ(bio.bi_vcnt, 0);
  EXPECT_EQ(iov_iter_count(&iter), 488u);
  bio_uninit(&bio);

  // Zone append: no device is zoned, so the limit is 0 sectors and the
  // folio goes in as an empty vec; the iterator gets all its bytes back.
  q.limits.max_segment_size = 65536;
  iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, 1000);
  bio_init(&bio, &bdev, vecs, 4, REQ_OP_ZONE_APPEND);
  EXPECT_EQ(bio_iov_iter_get_pages(&bio, &iter), 0);
  ASSERT_EQ(bio.bi_vcnt, 1);
  EXPECT_EQ(bio.bi_io_vec[0].bv_len, 0u);
  EXPECT_EQ(bio.bi_iter.bi_size, 0u);
  EXPECT_EQ(iov_iter_count(&iter), 1000u);
  EXPECT_EQ(iter.iov_offset, 0u);
  bio_uninit(&bio);
}

// A bvec iterator lends the bio its vecs from where it stands, and is
// moved past them; a bio that already shares vecs is refused.
TEST(BioIovIterTest, BvecVecsAreShared) {
  uk::testing::AllowWarnings();
  struct bio_vec bv[3];
  bvec_set_page(&bv[0], IovPage(0), 4096, 0);
  bvec_set_page(&bv[1], IovPage(3), 1024, 512);
  bvec_set_page(&bv[2], IovPage(6), 2048, 0);
  struct iov_iter iter;
  iov_iter_bvec(&iter, ITER_SOURCE, bv, 3, 4096 + 1024 + 2048);
  iov_iter_advance(&iter, 100);
  EXPECT_EQ(iter.iov_offset, 100u);
  struct bio bio;
  bio_init(&bio, nullptr, nullptr, 0, REQ_OP_WRITE);
  EXPECT_EQ(bio_iov_iter_get_pages(&bio, &iter), 0);
  EXPECT_TRUE(bio_flagged(&bio, BIO_CLONED));
  EXPECT_EQ(bio.bi_io_vec, bv);
  EXPECT_EQ(bio.bi_vcnt, 3);
  EXPECT_EQ(bio.bi_iter.bi_bvec_done, 100u);
  EXPECT_EQ(bio.bi_iter.bi_size, 4096u + 1024 + 2048 - 100);
  EXPECT_EQ(iov_iter_count(&iter), 0u);
  EXPECT_EQ(iter.nr_segs, 0u);
  struct bio_vec first = bio_iter_iovec(&bio, bio.bi_iter);
  EXPECT_EQ(first.bv_page, IovPage(0));
  EXPECT_EQ(first.bv_offset, 100u);

  long warns = uk::warn_count;
  EXPECT_EQ(bio_iov_iter_get_pages(&bio, &iter), -EIO);
  EXPECT_EQ(warns + 1, uk::warn_count);
  bio_uninit(&bio);

  // Zone append is cut to the queue's limit: none, on a device that is
  // not zoned.
  struct request_queue q = {};
  struct block_device bdev = {};
  bdev.bd_queue = &q;
  iov_iter_bvec(&iter, ITER_SOURCE, bv, 3, 4096);
  bio_init(&bio, &bdev, nullptr, 0, REQ_OP_ZONE_APPEND);
  EXPECT_EQ(bio_iov_iter_get_pages(&bio, &iter), 0);
  EXPECT_EQ(bio.bi_iter.bi_size, 0u);
  EXPECT_EQ(iov_iter_count(&iter), 4096u);
  bio_uninit(&bio);

  // A bio with vecs of its own is warned about, and takes the iterator's.
  struct bio_vec own[1];
  bio_init(&bio, nullptr, own, 1, REQ_OP_WRITE);
  warns = uk::warn_count;
  bio_iov_bvec_set(&bio, &iter);
  EXPECT_EQ(warns + 1, uk::warn_count);
  EXPECT_EQ(bio.bi_io_vec, bv);
  EXPECT_EQ(bio.bi_iter.bi_size, 4096u);
  bio_uninit(&bio);
}

// The bvec form of page extraction, and an iterator of a type the shim
// cannot list (user memory) failing with -EFAULT.
TEST(BioIovIterTest, ExtractPagesAndRevert) {
  struct bio_vec bv[2];
  bvec_set_page(&bv[0], IovPage(1), 4096 + 100, 200);
  bvec_set_page(&bv[1], IovPage(5), 300, 0);
  struct iov_iter iter;
  iov_iter_bvec(&iter, ITER_DEST, bv, 2, 4096 + 400);
  struct page *pages[4];
  struct page **p = pages;
  size_t offset = 0;
  EXPECT_EQ(iov_iter_extract_pages(&iter, &p, SIZE_MAX, 4, 0, &offset),
            4096 + 100);
  EXPECT_EQ(offset, 200u);
  EXPECT_EQ(pages[0], IovPage(1));
  EXPECT_EQ(pages[1], IovPage(2));
  EXPECT_EQ(iter.bvec, &bv[1]);
  EXPECT_EQ(iov_iter_extract_pages(&iter, &p, SIZE_MAX, 4, 0, &offset), 300);
  EXPECT_EQ(offset, 0u);
  EXPECT_EQ(pages[0], IovPage(5));
  EXPECT_EQ(iov_iter_extract_pages(&iter, &p, SIZE_MAX, 4, 0, &offset), 0);
  // Back across both vecs.
  iov_iter_revert(&iter, 400);
  EXPECT_EQ(iter.bvec, &bv[0]);
  EXPECT_EQ(iter.iov_offset, 4096u);
  EXPECT_EQ(iter.nr_segs, 2u);
  EXPECT_EQ(iov_iter_count(&iter), 400u);

  // The page list is allocated when the caller passes none.
  struct kvec kv = {iov_buf + 4000, 200};
  iov_iter_kvec(&iter, ITER_DEST, &kv, 1, 200);
  struct page **alloc = nullptr;
  EXPECT_EQ(iov_iter_extract_pages(&iter, &alloc, SIZE_MAX, 8, 0, &offset),
            200);
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(offset, 4000u);
  EXPECT_EQ(alloc[0], IovPage(0));
  EXPECT_EQ(alloc[1], IovPage(1));
  kvfree(alloc);

  // User memory is neither listed nor pinned here.
  iov_iter_ubuf(&iter, ITER_DEST, src_buf, 200);
  struct bio_vec vecs[2];
  struct bio bio;
  bio_init(&bio, nullptr, vecs, 2, REQ_OP_READ);
  EXPECT_EQ(bio_iov_iter_get_pages(&bio, &iter), -EFAULT);
  EXPECT_TRUE(bio_flagged(&bio, BIO_PAGE_PINNED));
  EXPECT_EQ(bio.bi_vcnt, 0);
  EXPECT_EQ(iov_iter_count(&iter), 200u);
  bio_uninit(&bio);
}

// A user buffer's iterator reads as a one-segment iovec array of its own,
// which a copy of the iterator carries along; an iovec iterator hands out
// the caller's array.
TEST(BioIovIterTest, UserIteratorsReadAsIovecs) {
  struct iov_iter a, b;
  iov_iter_ubuf(&a, ITER_SOURCE, src_buf + 8, 300);
  EXPECT_TRUE(iter_is_ubuf(&a));
  EXPECT_TRUE(user_backed_iter(&a));
  EXPECT_TRUE(a.data_source);
  EXPECT_EQ(a.nr_segs, 1u);
  EXPECT_EQ(iter_iov(&a)->iov_base, (void *)(src_buf + 8));
  EXPECT_EQ(iter_iov(&a)->iov_len, 300u);
  b = a;
  EXPECT_EQ(iter_iov(&b), &b.__ubuf_iovec);
  EXPECT_EQ(iter_iov(&b)->iov_len, 300u);

  struct iovec iov[2] = {{src_buf, 100}, {dst_buf, 50}};
  iov_iter_init(&a, ITER_DEST, iov, 2, 150);
  EXPECT_TRUE(iter_is_iovec(&a));
  EXPECT_FALSE(a.data_source);
  EXPECT_EQ(iter_iov(&a), iov);
  EXPECT_EQ(iov_iter_count(&a), 150u);
  EXPECT_EQ(a.iov_offset, 0u);
}

}  // namespace
