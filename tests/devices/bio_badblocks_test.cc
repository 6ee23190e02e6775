// SPDX-License-Identifier: GPL-2.0-only
// blk_types/bio/bvec helpers and the badblocks table.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <vector>

#include <uk/linux/badblocks.h>
#include <uk/linux/bio.h>
#include <uk/linux/errno.h>
#include <uk/linux/slab.h>
#include <uk/shim/printk.h>

#include "testmain.h"

namespace {

TEST(BlkStatusTest, AValuePastTheTableWarns) {
  uk::testing::AllowWarnings();
  long warns = uk::warn_count;
  EXPECT_EQ(blk_status_to_errno((blk_status_t)200), -EIO);
  EXPECT_STREQ(blk_status_to_str((blk_status_t)200), "<null>");
  EXPECT_EQ(uk::warn_count, warns + 2);
}

TEST(BlkStatusTest, ErrnoMapping) {
  EXPECT_EQ(blk_status_to_errno(BLK_STS_OK), 0);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_NOTSUPP), -EOPNOTSUPP);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_TIMEOUT), -ETIMEDOUT);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_NOSPC), -ENOSPC);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_RESOURCE), -ENOMEM);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_DEV_RESOURCE), -EBUSY);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_AGAIN), -EAGAIN);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_IOERR), -EIO);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_OFFLINE), -ENODEV);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_DURATION_LIMIT), -ETIME);
  EXPECT_EQ(blk_status_to_errno(BLK_STS_INVAL), -EINVAL);
  // Round trip for every defined status.
  for (blk_status_t s : std::initializer_list<blk_status_t>{
           BLK_STS_OK, BLK_STS_NOTSUPP, BLK_STS_TIMEOUT, BLK_STS_NOSPC,
           BLK_STS_TRANSPORT, BLK_STS_TARGET, BLK_STS_RESV_CONFLICT,
           BLK_STS_MEDIUM, BLK_STS_PROTECTION, BLK_STS_RESOURCE, BLK_STS_IOERR,
           BLK_STS_DM_REQUEUE, BLK_STS_AGAIN, BLK_STS_DEV_RESOURCE,
           BLK_STS_ZONE_OPEN_RESOURCE, BLK_STS_ZONE_ACTIVE_RESOURCE,
           BLK_STS_OFFLINE, BLK_STS_DURATION_LIMIT, BLK_STS_INVAL}) {
    EXPECT_EQ(errno_to_blk_status(blk_status_to_errno(s)), s) << int(s);
  }
  EXPECT_EQ(errno_to_blk_status(-E2BIG), BLK_STS_IOERR);  // unknown errno
  EXPECT_STREQ(blk_status_to_str(BLK_STS_TIMEOUT), "timeout");
  // 18 is no status: its entry is zero, as in the kernel's table.
  EXPECT_EQ(blk_status_to_errno((blk_status_t)18), 0);
  EXPECT_EQ(blk_status_to_str((blk_status_t)18), nullptr);
  EXPECT_EQ(errno_to_blk_status(0), BLK_STS_OK);
  EXPECT_TRUE(op_is_write(REQ_OP_WRITE));
  EXPECT_FALSE(op_is_write(REQ_OP_READ));
  EXPECT_TRUE(op_is_write(REQ_OP_DISCARD));
  EXPECT_TRUE(op_is_sync(REQ_OP_WRITE | REQ_FUA));
  for (enum req_op op :
       {REQ_OP_ZONE_RESET, REQ_OP_ZONE_RESET_ALL, REQ_OP_ZONE_OPEN,
        REQ_OP_ZONE_CLOSE, REQ_OP_ZONE_FINISH})
    EXPECT_TRUE(op_is_zone_mgmt(op)) << int(op);
  EXPECT_FALSE(op_is_zone_mgmt(REQ_OP_ZONE_APPEND));
  EXPECT_FALSE(op_is_zone_mgmt(REQ_OP_WRITE));
  struct bio bio = {};
  bio.bi_opf = REQ_OP_ZONE_RESET_ALL | REQ_SYNC;
  EXPECT_EQ(bio_op(&bio), REQ_OP_ZONE_RESET_ALL);
  EXPECT_FALSE(blk_path_error(BLK_STS_MEDIUM));
  EXPECT_TRUE(blk_path_error(BLK_STS_TRANSPORT));
}

// block/fops.c's layout: the caller's struct in front of each bio, inline
// vecs up to BIO_INLINE_VECS, a separate table beyond; bio_put frees both.
TEST(BioTest, BiosetFrontPadAndVecs) {
  struct dio_like {
    long cookie;
    struct bio bio;  // last: the inline vecs follow
  };
  struct bio_set bs = {};
  ASSERT_EQ(
      bioset_init(&bs, 4, offsetof(struct dio_like, bio), BIOSET_NEED_BVECS),
      0);
  long kmalloc_before = uk::kmalloc_nr_allocated();
  alignas(4096) static char buf[16 * 4096];

  for (unsigned short nr : {0, 1, BIO_INLINE_VECS, BIO_INLINE_VECS + 1, 16}) {
    struct bio *bio =
        bio_alloc_bioset(nullptr, nr, REQ_OP_WRITE, GFP_KERNEL, &bs);
    ASSERT_NE(bio, nullptr) << nr;
    struct dio_like *d = container_of(bio, struct dio_like, bio);
    d->cookie = 42;  // the front pad is ours to write
    EXPECT_EQ(bio->bi_pool, &bs);
    // Rounded up: to the inline vecs, else to the biovec-16 table.
    unsigned short max = nr == 0                 ? 0
                         : nr <= BIO_INLINE_VECS ? BIO_INLINE_VECS
                                                 : 16;
    EXPECT_EQ(bio->bi_max_vecs, max) << nr;
    EXPECT_EQ(bio->bi_vcnt, 0);
    EXPECT_EQ(bio->bi_iter.bi_size, 0u);
    EXPECT_EQ(bio->bi_end_io, nullptr);
    EXPECT_EQ(atomic_read(&bio->__bi_remaining), 1);
    if (nr == 0)
      EXPECT_EQ(bio->bi_io_vec, nullptr);
    else if (nr <= BIO_INLINE_VECS)
      EXPECT_EQ(bio->bi_io_vec, bio->bi_inline_vecs);
    else
      EXPECT_NE(bio->bi_io_vec, bio->bi_inline_vecs);
    // Fill every vec with a separate (non-mergeable) page piece.
    for (unsigned i = 0; i < max; i++)
      EXPECT_EQ(bio_add_page(bio, virt_to_page(buf + i * 4096), 512, 512), 512);
    EXPECT_EQ(bio->bi_vcnt, max);
    EXPECT_EQ(bio->bi_iter.bi_size, 512u * max);
    EXPECT_EQ(bio_add_page(bio, virt_to_page(buf + 15 * 4096), 512, 2048),
              0);  // full
    EXPECT_EQ(d->cookie, 42);
    bio_put(bio);
  }
  EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_before);
  bioset_exit(&bs);
}

TEST(BioTest, SegmentsSplitAtPageBoundaries) {
  long before = uk::kmalloc_nr_allocated();
  // Two page-aligned pages + an unaligned tail buffer.
  alignas(4096) static char buf[3 * 4096];
  struct bio *bio = bio_alloc(nullptr, 4, REQ_OP_WRITE, GFP_KERNEL);
  ASSERT_NE(bio, nullptr);

  bio->bi_iter.bi_sector = 8;
  // 6000 bytes starting 1000 bytes into page 0: one multi-page bvec.
  bio_add_virt_nofail(bio, buf + 1000, 6000);
  // Contiguous continuation merges into the same bvec.
  EXPECT_EQ(bio_add_page(bio, virt_to_page(buf + 7000), 100,
                         offset_in_page(buf + 7000)),
            100);
  EXPECT_EQ(bio->bi_vcnt, 1);
  // Non-contiguous: new bvec.
  EXPECT_EQ(bio_add_page(bio, virt_to_page(buf + 9000), 200,
                         offset_in_page(buf + 9000)),
            200);
  EXPECT_EQ(bio->bi_vcnt, 2);
  EXPECT_EQ(bio->bi_iter.bi_size, 6300u);

  std::vector<std::pair<char *, unsigned>> segs;
  struct bio_vec bv;
  struct bvec_iter iter;
  bio_for_each_segment(bv, bio, iter)
      segs.push_back({(char *)bvec_virt(&bv), bv.bv_len});
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].first, buf + 1000);
  EXPECT_EQ(segs[0].second, 4096u - 1000);
  EXPECT_EQ(segs[1].first, buf + 4096);
  EXPECT_EQ(segs[1].second, 7100u - 4096);
  EXPECT_EQ(segs[2].first, buf + 9000);
  EXPECT_EQ(segs[2].second, 200u);

  unsigned n = 0;
  bio_for_each_bvec(bv, bio, iter) n++;
  EXPECT_EQ(n, 2u);

  memset(buf, 0x5a, sizeof(buf));
  zero_fill_bio(bio);
  EXPECT_EQ(buf[999], 0x5a);
  EXPECT_EQ(buf[1000], 0);
  EXPECT_EQ(buf[7099], 0);
  EXPECT_EQ(buf[7100], 0x5a);
  EXPECT_EQ(buf[9199], 0);

  bio_advance(bio, 512);
  EXPECT_EQ(bio->bi_iter.bi_sector, 9u);
  EXPECT_EQ(bio->bi_iter.bi_size, 6300u - 512);
  EXPECT_EQ(bio_data(bio), buf + 1512);
  bio_put(bio);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), before);
}

int g_endio_calls;
blk_status_t g_endio_status;
void TestEndIo(struct bio *bio) {
  g_endio_calls++;
  g_endio_status = bio->bi_status;
}

TEST(BioTest, ChainCompletesParentLast) {
  long before = uk::kmalloc_nr_allocated();
  g_endio_calls = 0;
  struct bio *parent = bio_alloc(nullptr, 0, REQ_OP_READ, GFP_KERNEL);
  parent->bi_end_io = TestEndIo;
  struct bio *a = bio_alloc(nullptr, 0, REQ_OP_READ, GFP_KERNEL);
  struct bio *b = bio_alloc(nullptr, 0, REQ_OP_READ, GFP_KERNEL);
  bio_chain(a, parent);
  bio_chain(b, parent);
  bio_endio(parent);  // the parent's own part
  EXPECT_EQ(g_endio_calls, 0);
  b->bi_status = BLK_STS_MEDIUM;
  bio_endio(b);
  EXPECT_EQ(g_endio_calls, 0);
  bio_endio(a);
  EXPECT_EQ(g_endio_calls, 1);
  EXPECT_EQ(g_endio_status, BLK_STS_MEDIUM);  // child error propagated
  bio_put(parent);
  EXPECT_EQ(uk::kmalloc_nr_allocated(), before);
}

class BadblocksTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(badblocks_init(&bb_, 1), 0); }
  void TearDown() override { badblocks_exit(&bb_); }
  int Check(sector_t s, int n) {
    return badblocks_check(&bb_, s, n, &first_, &len_);
  }
  std::string Show() {
    std::string page(PAGE_SIZE, '\0');
    ssize_t n = badblocks_show(&bb_, page.data(), 0);
    return page.substr(0, n);
  }
  struct badblocks bb_ {};
  sector_t first_ = 0;
  int len_ = 0;
};

TEST_F(BadblocksTest, SetCheckClear) {
  EXPECT_EQ(Check(0, 1000), 0);
  EXPECT_EQ(0, badblocks_set(&bb_, 100, 10, 1));
  EXPECT_EQ(Check(0, 100), 0);
  EXPECT_EQ(Check(110, 5), 0);
  EXPECT_EQ(Check(105, 1), 1);
  EXPECT_EQ(Check(0, 101), 1);
  EXPECT_EQ(first_, 100u);
  EXPECT_EQ(len_, 10);
  EXPECT_EQ(0, badblocks_set(&bb_, 200, 5, 0));
  EXPECT_EQ(Check(0, 1000), -1);
  EXPECT_EQ(first_, 100u);
  EXPECT_EQ(bb_.unacked_exist, 1);
  EXPECT_EQ(Show(), "100 10\n200 5\n");
  // Adjacent, same ack: merged.
  EXPECT_EQ(0, badblocks_set(&bb_, 110, 5, 1));
  EXPECT_EQ(Show(), "100 15\n200 5\n");
  // Clear the middle: split.
  EXPECT_EQ(0, badblocks_clear(&bb_, 104, 2));
  EXPECT_EQ(Show(), "100 4\n106 9\n200 5\n");
  EXPECT_EQ(Check(104, 2), 0);
  EXPECT_EQ(0, badblocks_clear(&bb_, 0, 1000));
  EXPECT_EQ(Show(), "");
  EXPECT_EQ(bb_.count, 0);
  EXPECT_EQ(bb_.unacked_exist, 0);
}

TEST_F(BadblocksTest, LongRangesSplitAndOverlapAck) {
  EXPECT_EQ(0, badblocks_set(&bb_, 0, 1300, 1));
  EXPECT_EQ(bb_.count, 3);  // 512 + 512 + 276
  EXPECT_EQ(Show(), "0 512\n512 512\n1024 276\n");
  // An unacknowledged range skips the acknowledged part it overlaps.
  EXPECT_EQ(0, badblocks_set(&bb_, 1200, 200, 0));
  EXPECT_EQ(Show(), "0 512\n512 512\n1024 276\n1300 100\n");
  EXPECT_EQ(Check(0, 1200), 1);
  EXPECT_EQ(Check(1250, 10), 1);
  EXPECT_EQ(Check(1350, 10), -1);
  ack_all_badblocks(&bb_);  // changed: the kernel leaves it alone
  bb_.changed = 0;
  ack_all_badblocks(&bb_);
  EXPECT_EQ(Check(0, 2000), 1);
}

TEST_F(BadblocksTest, ShiftKeepsTheRangeAsGiven) {
  // v6.12 computes the block rounding and drops the result: the range goes in
  // as given, and show() scales offsets and lengths by the block size.
  bb_.shift = 3;
  EXPECT_EQ(0, badblocks_set(&bb_, 9, 1, 1));
  EXPECT_EQ(bb_.count, 1);
  EXPECT_EQ(BB_OFFSET(bb_.page[0]), 9u);
  EXPECT_EQ(BB_LEN(bb_.page[0]), 1u);
  EXPECT_EQ(Show(), "72 8\n");
  EXPECT_EQ(Check(8, 1), 0);
  EXPECT_EQ(Check(9, 1), 1);
  EXPECT_EQ(first_, 9u);
  EXPECT_EQ(len_, 1);
  EXPECT_EQ(0, badblocks_clear(&bb_, 9, 1));
  EXPECT_EQ(Check(0, 100), 0);
}

TEST_F(BadblocksTest, DisabledAndFull) {
  bb_.shift = -1;
  EXPECT_EQ(1, badblocks_set(&bb_, 1, 1, 1));
  EXPECT_EQ(1, badblocks_clear(&bb_, 1, 1));
  bb_.shift = 0;
  // Fill the table with isolated sectors.
  for (unsigned i = 0; i < MAX_BADBLOCKS; i++)
    ASSERT_EQ(0, badblocks_set(&bb_, i * 2, 1, 1));
  EXPECT_EQ(bb_.count, (int)MAX_BADBLOCKS);
  EXPECT_EQ(1, badblocks_set(&bb_, 100000, 1, 1));  // no room
  EXPECT_EQ(Check(100000, 1), 0);                   // unchanged
  EXPECT_EQ(0, badblocks_set(&bb_, 1, 1, 1));  // merges 0,1,2: fewer entries
  EXPECT_EQ(bb_.count, (int)MAX_BADBLOCKS - 1);
}

// With the table full, a range that starts before the first entry and
// reaches it is merged into that entry's front by behind_merge(). v6.12
// checks the entry's length after the merge has already added the merged
// sectors to it, and adds them once more in the check: the merge leaves a
// correct entry, but warns once length + merged reaches BB_MAX_LEN. Later
// kernels no longer have behind_merge().
TEST_F(BadblocksTest, FullTableMergeBehindWarnsAsV612Does) {
  uk::testing::AllowWarnings();
  ASSERT_EQ(0, badblocks_set(&bb_, 5, 500, 1));
  for (unsigned i = 1; i < MAX_BADBLOCKS; i++)
    ASSERT_EQ(0, badblocks_set(&bb_, 1024 * i, 1, 1));
  ASSERT_EQ(bb_.count, (int)MAX_BADBLOCKS);
  long warns = uk::warn_count;
  // 5 sectors merged into 5..504: 505 + 5 stays below BB_MAX_LEN.
  EXPECT_EQ(0, badblocks_set(&bb_, 0, 10, 1));
  EXPECT_EQ(uk::warn_count - warns, 0);
  EXPECT_EQ(Show().substr(0, 13), "0 505\n1024 1\n");
  EXPECT_EQ(0, badblocks_set(&bb_, 505, 5, 1));  // front merge: 0..509
  EXPECT_EQ(0, badblocks_clear(&bb_, 0, 4));     // 4..509
  EXPECT_EQ(Show().substr(0, 13), "4 506\n1024 1\n");
  // 4 sectors merged into 4..509: 510 + 4 passes it.
  EXPECT_EQ(0, badblocks_set(&bb_, 0, 10, 1));
  EXPECT_EQ(uk::warn_count - warns, 1);
  EXPECT_STREQ(uk::last_warn_condition(),
               "(BB_LEN(p[behind]) + merged) >= BB_MAX_LEN");
  EXPECT_EQ(Show().substr(0, 13), "0 510\n1024 1\n");
  EXPECT_EQ(bb_.count, (int)MAX_BADBLOCKS);
  EXPECT_EQ(Check(0, 510), 1);
  EXPECT_EQ(first_, 0u);
  EXPECT_EQ(len_, 510);
}

TEST_F(BadblocksTest, StoreParsesSectorAndLength) {
  EXPECT_EQ(badblocks_store(&bb_, "100 8\n", 6, 0), 6);
  EXPECT_EQ(badblocks_store(&bb_, "200 4", 5, 1), 5);
  EXPECT_EQ(Show(), "100 8\n200 4\n");
  EXPECT_EQ(Check(200, 1), -1);
  EXPECT_EQ(badblocks_store(&bb_, "300 0", 5, 0), -EINVAL);
  EXPECT_EQ(badblocks_store(&bb_, "300 4x", 6, 0), -EINVAL);
  EXPECT_EQ(badblocks_store(&bb_, "300", 3, 0), -EINVAL);
  bb_.shift = -1;
  EXPECT_EQ(badblocks_store(&bb_, "300 4", 5, 0), -ENOSPC);
}

TEST_F(BadblocksTest, RandomAgainstModel) {
  std::mt19937_64 rng(42);
  std::map<sector_t, int> model;  // sector -> 1 acked, 2 unacked
  for (int round = 0; round < 300; round++) {
    sector_t s = rng() % 3000, n = 1 + rng() % 700;
    int op = rng() % 3;
    if (op < 2) {
      // Nothing goes in (1) only when an unacknowledged range falls wholly
      // on acknowledged sectors.
      bool all_acked = true;
      for (sector_t x = s; x < s + n && all_acked; x++) {
        auto it = model.find(x);
        all_acked = it != model.end() && it->second == 1;
      }
      ASSERT_EQ(op == 1 && all_acked ? 1 : 0,
                badblocks_set(&bb_, s, n, op == 0))
          << round;
      for (sector_t x = s; x < s + n; x++) {
        // An acknowledged range overwrites an unacknowledged one; an
        // unacknowledged range leaves acknowledged sectors acknowledged.
        int v = op == 0 ? 1 : 2;
        auto it = model.find(x);
        if (it != model.end() && it->second == 1) v = 1;
        model[x] = v;
      }
    } else {
      ASSERT_EQ(0, badblocks_clear(&bb_, s, n));
      for (sector_t x = s; x < s + n; x++) model.erase(x);
    }
    for (int q = 0; q < 5; q++) {
      sector_t qs = rng() % 3800, qn = 1 + rng() % 64;
      int want = 0;
      sector_t want_first = 0;
      for (sector_t x = qs; x < qs + qn; x++) {
        auto it = model.find(x);
        if (it == model.end()) continue;
        if (want == 0) want_first = x;
        if (want != -1) want = it->second == 2 ? -1 : 1;
      }
      int got = Check(qs, qn);
      ASSERT_EQ(got, want) << round;
      if (got) {
        EXPECT_LE(first_, want_first);
        EXPECT_GT(first_ + len_, want_first);
      }
    }
  }
}

}  // namespace
