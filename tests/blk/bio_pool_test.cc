// SPDX-License-Identifier: GPL-2.0-only
// A bio_set's mempool: bio_alloc_bioset() with a mask that may sleep gets
// a bio even when the slab refuses (the fail-nth sweep's finding: an aio
// write to a block device completed with -ENOMEM), and an atomic one may
// get NULL only when the reserve is empty too.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include <uk/linux/bio.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/slab.h>

namespace {

struct DioLike {
  long cookie;
  struct bio bio;  // last: the inline vecs follow
};

TEST(BioPoolTest, SleepingAllocationsUseTheReserve) {
  struct bio_set bs = {};
  ASSERT_EQ(
      bioset_init(&bs, 2, offsetof(struct DioLike, bio), BIOSET_NEED_BVECS), 0);
  long reserve = uk::slab_nr_allocated(bs.bio_slab);
  EXPECT_EQ(reserve, 2);

  std::vector<struct bio *> bios;
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ(uk::fail_nth_write(1), 0);
    struct bio *bio =
        bio_alloc_bioset(nullptr, 1, REQ_OP_WRITE, GFP_KERNEL, &bs);
    EXPECT_EQ(uk::fail_nth_read(), 0U);  // the slab was asked and refused
    ASSERT_NE(bio, nullptr) << i;
    bios.push_back(bio);
  }
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  EXPECT_EQ(bio_alloc_bioset(nullptr, 1, REQ_OP_WRITE, GFP_NOWAIT, &bs),
            nullptr);
  uk::fail_nth_write(0);

  for (struct bio *bio : bios) bio_put(bio);
  EXPECT_EQ(uk::slab_nr_allocated(bs.bio_slab),
            reserve);  // back in the reserve
  bioset_exit(&bs);
}

TEST(BioPoolTest, InitFailureLeavesNothing) {
  long kmalloc_before = uk::kmalloc_nr_allocated();
  for (unsigned n = 1; n <= 3; n++) {
    struct bio_set bs = {};
    ASSERT_EQ(uk::fail_nth_write(n), 0);
    EXPECT_EQ(bioset_init(&bs, 2, 0, BIOSET_NEED_BVECS), -ENOMEM) << n;
    uk::fail_nth_write(0);
    EXPECT_EQ(bs.bio_slab, nullptr);
    EXPECT_EQ(uk::kmalloc_nr_allocated(), kmalloc_before) << n;
  }
}

}  // namespace
