// SPDX-License-Identifier: GPL-2.0-only
// A bio_set's mempools: bio_alloc_bioset() with a mask that may sleep gets
// a bio even when the slab refuses (the fail-nth sweep's finding: an aio
// write to a block device completed with -ENOMEM), and an atomic one may
// get NULL only when the reserve is empty too. The biovec slabs by size
// class and their reserve, the bio slabs shared between bio_sets of one
// size, and the per-CPU caches of REQ_ALLOC_CACHE bios.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include <uk/linux/bio.h>
#include <uk/linux/cpu.h>
#include <uk/linux/fault-inject.h>
#include <uk/linux/preempt.h>
#include <uk/linux/slab.h>
#include <uk/linux/smp.h>
#include <uk/shim/cpu.h>

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

// bvec_alloc() rounds a count up to its biovec slab's size; the largest
// tables come from the bio_set's reserve when the slab refuses a caller
// that may sleep, and never from it for one that may not.
TEST(BioPoolTest, VecTablesBySizeClass) {
  struct bio_set bs = {};
  ASSERT_EQ(bioset_init(&bs, 2, 0, BIOSET_NEED_BVECS), 0);
  const struct {
    unsigned short nr, rounded;
  } cases[] = {{5, 16},   {16, 16},   {17, 64},   {64, 64},
               {65, 128}, {128, 128}, {129, 256}, {BIO_MAX_VECS, 256}};
  for (const auto &c : cases) {
    unsigned short nr = c.nr;
    struct bio_vec *bv = bvec_alloc(&bs.bvec_pool, &nr, GFP_KERNEL);
    ASSERT_NE(bv, nullptr) << c.nr;
    EXPECT_EQ(nr, c.rounded) << c.nr;
    bv[nr - 1].bv_len = 1;  // the whole table is ours
    bvec_free(&bs.bvec_pool, bv, nr);
  }

  // The biovec-16 slab refuses: a sleeping caller gets a BIO_MAX_VECS
  // table from the vec mempool (here its slab serves), an atomic one NULL.
  unsigned short nr = 10;
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  struct bio_vec *bv = bvec_alloc(&bs.bvec_pool, &nr, GFP_KERNEL);
  uk::fail_nth_write(0);
  ASSERT_NE(bv, nullptr);
  EXPECT_EQ(nr, BIO_MAX_VECS);
  bv[nr - 1].bv_len = 1;
  bvec_free(&bs.bvec_pool, bv, nr);
  EXPECT_EQ(bs.bvec_pool.curr_nr, 2);
  nr = 10;
  ASSERT_EQ(uk::fail_nth_write(1), 0);
  EXPECT_EQ(bvec_alloc(&bs.bvec_pool, &nr, GFP_NOWAIT), nullptr);
  uk::fail_nth_write(0);

  // A bio with more vecs than fit inline gets a table and gives it back.
  struct bio *bio =
      bio_alloc_bioset(nullptr, 100, REQ_OP_READ, GFP_KERNEL, &bs);
  ASSERT_NE(bio, nullptr);
  EXPECT_EQ(bio->bi_max_vecs, 128);
  EXPECT_NE(bio->bi_io_vec, bio->bi_inline_vecs);
  bio_put(bio);
  bioset_exit(&bs);
}

// bio_sets whose bios have one size share a bio slab, which goes when the
// last of them exits; bio_alloc() takes from fs_bio_set.
TEST(BioPoolTest, BioSlabsAreSharedBySize) {
  struct bio_set a = {}, b = {}, c = {};
  ASSERT_EQ(bioset_init(&a, 1, 40, 0), 0);
  ASSERT_EQ(bioset_init(&b, 1, 40, 0), 0);
  ASSERT_EQ(bioset_init(&c, 1, 48, 0), 0);
  EXPECT_EQ(a.bio_slab, b.bio_slab);
  EXPECT_NE(a.bio_slab, c.bio_slab);
  EXPECT_EQ(uk::slab_nr_allocated(a.bio_slab), 2);  // both reserves
  bioset_exit(&a);
  EXPECT_EQ(a.bio_slab, nullptr);
  struct bio *bio = bio_alloc_bioset(nullptr, 0, REQ_OP_READ, GFP_KERNEL, &b);
  ASSERT_NE(bio, nullptr);
  EXPECT_EQ(bio->bi_pool, &b);
  bio_put(bio);
  bioset_exit(&b);
  bioset_exit(&c);

  bio = bio_alloc(nullptr, 1, REQ_OP_WRITE, GFP_KERNEL);
  ASSERT_NE(bio, nullptr);
  EXPECT_EQ(bio->bi_pool, &fs_bio_set);
  EXPECT_EQ(bio->bi_max_vecs, BIO_INLINE_VECS);
  bio_put(bio);
}

// With BIOSET_PERCPU_CACHE, a REQ_ALLOC_CACHE bio put in task context
// goes to the CPU's cache and the next one allocated there is the same bio;
// one put in hardirq context waits on the irq list until
// ALLOC_CACHE_THRESHOLD (16) of them are there; one put in softirq context
// is freed. The CPU's dead callback and bioset_exit() free what is cached.
TEST(BioPoolTest, PerCpuCache) {
  // A second CPU, so that this one can go down at the end.
  if (nr_cpu_ids < 2) uk::set_nr_cpu_ids(2);
  struct bio_set bs = {};
  const blk_opf_t opf = REQ_OP_READ | REQ_ALLOC_CACHE;
  ASSERT_EQ(bioset_init(&bs, 2, 56, BIOSET_NEED_BVECS | BIOSET_PERCPU_CACHE),
            0);
  struct kmem_cache *slab = bs.bio_slab;
  EXPECT_EQ(uk::slab_nr_allocated(slab), 2);

  preempt_disable();  // stay on this CPU
  int cpu = smp_processor_id();
  struct bio *a = bio_alloc_bioset(nullptr, 1, opf, GFP_ATOMIC, &bs);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->bi_opf & REQ_ALLOC_CACHE);  // the reserve is full
  bio_put(a);
  EXPECT_EQ(uk::slab_nr_allocated(slab), 3);  // cached, not freed
  struct bio *b = bio_alloc_bioset(nullptr, 1, opf, GFP_ATOMIC, &bs);
  EXPECT_EQ(b, a);
  EXPECT_EQ(b->bi_io_vec, b->bi_inline_vecs);
  EXPECT_EQ(b->bi_pool, &bs);

  // Without REQ_ALLOC_CACHE the bio is freed, cache or not.
  struct bio *plain =
      bio_alloc_bioset(nullptr, 0, REQ_OP_READ, GFP_ATOMIC, &bs);
  ASSERT_NE(plain, nullptr);
  bio_put(plain);
  EXPECT_EQ(uk::slab_nr_allocated(slab), 3);

  // Put in hardirq context: kept on the irq list, spliced at 16.
  std::vector<struct bio *> bios{b};
  for (int i = 0; i < 15; i++) {
    bios.push_back(bio_alloc_bioset(nullptr, 1, opf, GFP_ATOMIC, &bs));
    ASSERT_NE(bios.back(), nullptr);
  }
  EXPECT_EQ(uk::slab_nr_allocated(slab), 18);
  uk::run_in_hardirq(cpu, [&] {
    for (int i = 0; i < 15; i++) bio_put(bios[i]);
  });
  EXPECT_EQ(uk::slab_nr_allocated(slab), 18);
  // 15 on the irq list: not enough to splice, a new bio comes.
  struct bio *c = bio_alloc_bioset(nullptr, 1, opf, GFP_ATOMIC, &bs);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(std::count(bios.begin(), bios.end(), c), 0);
  EXPECT_EQ(uk::slab_nr_allocated(slab), 19);
  uk::run_in_hardirq(cpu, [&] { bio_put(bios[15]); });
  struct bio *d = bio_alloc_bioset(nullptr, 1, opf, GFP_ATOMIC, &bs);
  EXPECT_EQ(std::count(bios.begin(), bios.end(), d), 1);
  EXPECT_EQ(uk::slab_nr_allocated(slab), 19);

  // Put in softirq context: freed.
  uk::run_in_softirq(cpu, [&] { bio_put(d); });
  EXPECT_EQ(uk::slab_nr_allocated(slab), 18);
  bio_put(c);
  preempt_enable();

  // The CPU going down frees its cache: c and the 15 left.
  EXPECT_EQ(uk::slab_nr_allocated(slab), 18);
  ASSERT_EQ(remove_cpu(cpu), 0);
  EXPECT_EQ(uk::slab_nr_allocated(slab), 2);
  ASSERT_EQ(add_cpu(cpu), 0);

  // bioset_exit() frees what is cached too.
  preempt_disable();
  a = bio_alloc_bioset(nullptr, 1, opf, GFP_ATOMIC, &bs);
  ASSERT_NE(a, nullptr);
  bio_put(a);
  preempt_enable();
  EXPECT_EQ(uk::slab_nr_allocated(slab), 3);
  bioset_exit(&bs);
}

}  // namespace
