// SPDX-License-Identifier: GPL-2.0-only
// lib/sbitmap.c: hints, geometry, deferred clearing, batches, wake batches,
// the v6.10 deferred-clear race, the v6.1 lost wake-up, and a stress run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <uk/linux/sbitmap.h>
#include <uk/linux/seq_file.h>
#include <uk/linux/smp.h>

#include "testmain.h"

namespace {

// The bits deferred in ->cleared: what lib/sbitmap.c's static
// sbitmap_cleared() counts.
unsigned int Cleared(const struct sbitmap *sb) {
  unsigned int n = 0;
  for (unsigned int i = 0; i < sb->map_nr; i++)
    n += __builtin_popcountl(READ_ONCE(sb->map[i].cleared));
  return n;
}

class SbitmapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_nr_cpu_ids_ = nr_cpu_ids;
    uk::pin_thread_to_cpu(0);
  }
  void TearDown() override {
    sbq_v61_wake_hook = nullptr;
    sbitmap_deferred_clear_hook = nullptr;
    sbitmap_deferred_clear_v610 = false;
    uk::sched_hook = nullptr;
    uk::pin_thread_to_cpu(-1);
    if (nr_cpu_ids != saved_nr_cpu_ids_) uk::set_nr_cpu_ids(saved_nr_cpu_ids_);
  }
  unsigned int saved_nr_cpu_ids_ = 1;
  unsigned int &hint(struct sbitmap *sb, int cpu = 0) {
    return *per_cpu_ptr(sb->alloc_hint, cpu);
  }
};

TEST_F(SbitmapTest, ShiftTableForDepths2To1024) {
  for (unsigned int depth = 2; depth <= 1024; depth++) {
    int want = 6;
    if (depth >= 4)
      while ((4u << want) > depth) want--;
    ASSERT_EQ(sbitmap_calculate_shift(depth), want) << depth;
    // At least four words once there are four bits.
    if (depth >= 4) {
      unsigned int map_nr = DIV_ROUND_UP(depth, 1u << want);
      EXPECT_GE(map_nr, 4u) << depth;
    }
  }
  EXPECT_EQ(sbitmap_calculate_shift(2), 6);
  EXPECT_EQ(sbitmap_calculate_shift(4), 0);
  EXPECT_EQ(sbitmap_calculate_shift(16), 2);
  EXPECT_EQ(sbitmap_calculate_shift(32), 3);
  EXPECT_EQ(sbitmap_calculate_shift(64), 4);
  EXPECT_EQ(sbitmap_calculate_shift(128), 5);
  EXPECT_EQ(sbitmap_calculate_shift(256), 6);
  EXPECT_EQ(sbitmap_calculate_shift(1024), 6);
}

TEST_F(SbitmapTest, InitGeometryAndErrors) {
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 100, -1, GFP_KERNEL, -1, false, true), 0);
  EXPECT_EQ(sb.shift, 4u);
  EXPECT_EQ(sb.map_nr, 7u);
  EXPECT_EQ(__map_depth(&sb, 0), 16u);
  EXPECT_EQ(__map_depth(&sb, 6), 4u);
  for (int c = 0; c < (int)nr_cpu_ids; c++) EXPECT_LT(hint(&sb, c), 100u);
  sbitmap_free(&sb);
  EXPECT_EQ(sbitmap_init_node(&sb, 100, 7, GFP_KERNEL, -1, false, true),
            -EINVAL);
  ASSERT_EQ(sbitmap_init_node(&sb, 0, -1, GFP_KERNEL, -1, false, false), 0);
  EXPECT_EQ(sb.map, nullptr);
  EXPECT_EQ(sb.map_nr, 0u);
}

TEST_F(SbitmapTest, GetAllThenFullAndHintRules) {
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 8, 3, GFP_KERNEL, -1, false, true), 0);
  // Hint 0 used: moves to 1.
  hint(&sb) = 0;
  EXPECT_EQ(sbitmap_get(&sb), 0);
  EXPECT_EQ(hint(&sb), 1u);
  // Non-RR searches the hinted word from bit 0: got bit 1 == hint -> 2.
  EXPECT_EQ(sbitmap_get(&sb), 1);
  EXPECT_EQ(hint(&sb), 2u);
  // A bit other than the hint leaves the hint alone.
  hint(&sb) = 5;
  EXPECT_EQ(sbitmap_get(&sb), 2);
  EXPECT_EQ(hint(&sb), 5u);
  EXPECT_EQ(sbitmap_get(&sb), 3);
  EXPECT_EQ(sbitmap_get(&sb), 4);
  EXPECT_EQ(sbitmap_get(&sb), 5);  // == hint -> 6
  EXPECT_EQ(hint(&sb), 6u);
  // Wrap quirk: using bit 6 gives hint 7 >= depth - 1, so 0.
  EXPECT_EQ(sbitmap_get(&sb), 6);
  EXPECT_EQ(hint(&sb), 0u);
  EXPECT_EQ(sbitmap_get(&sb), 7);
  EXPECT_EQ(hint(&sb), 0u);
  // Full: -1 and hint reset to 0.
  hint(&sb) = 3;
  EXPECT_EQ(sbitmap_get(&sb), -1);
  EXPECT_EQ(hint(&sb), 0u);
  EXPECT_EQ(sbitmap_weight(&sb), 8u);
  // sbitmap_put defers the clear and points this CPU's hint at the bit.
  sbitmap_put(&sb, 5);
  EXPECT_EQ(hint(&sb), 5u);
  EXPECT_EQ(sbitmap_weight(&sb), 7u);
  EXPECT_EQ(Cleared(&sb), 1u);
  EXPECT_TRUE(sbitmap_test_bit(&sb, 5));  // still in ->word
  EXPECT_EQ(sbitmap_get(&sb), 5);         // found via deferred clear
  EXPECT_EQ(Cleared(&sb), 0u);
  sbitmap_free(&sb);
}

TEST_F(SbitmapTest, HintOutOfRangeIsRerandomised) {
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 64, -1, GFP_KERNEL, -1, false, true), 0);
  sbitmap_resize(&sb, 10);
  EXPECT_EQ(sb.map_nr, 1u);  // shift stays 4: one word of 16, 10 used
  hint(&sb) = 50;
  int nr = sbitmap_get(&sb);
  EXPECT_GE(nr, 0);
  EXPECT_LT(nr, 10);
  EXPECT_LT(hint(&sb), 10u);
  sbitmap_free(&sb);
}

TEST_F(SbitmapTest, RoundRobinAllocatesInOrder) {
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 16, 2, GFP_KERNEL, -1, true, true), 0);
  EXPECT_EQ(hint(&sb), 0u);
  for (int i = 0; i < 14; i++) EXPECT_EQ(sbitmap_get(&sb), i);
  // Bit 14 -> hint 15 >= depth - 1 -> 0: the top bit is never a start.
  EXPECT_EQ(sbitmap_get(&sb), 14);
  EXPECT_EQ(hint(&sb), 0u);
  sbitmap_clear_bit(&sb, 3);
  EXPECT_EQ(sbitmap_get(&sb), 3);
  EXPECT_EQ(hint(&sb), 4u);
  // RR does not wrap inside a word: from 4 the next free is 15.
  EXPECT_EQ(sbitmap_get(&sb), 15);
  sbitmap_free(&sb);
}

TEST_F(SbitmapTest, ShallowWrapsInsideTheHintedWord) {
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 64, 6, GFP_KERNEL, -1, false, true), 0);
  for (int i = 10; i < 64; i++) sbitmap_set_bit(&sb, i);
  hint(&sb) = 10;
  EXPECT_EQ(sbitmap_get_shallow(&sb, 64), 0);  // from bit 10, wrapped to 0
  sbitmap_free(&sb);
}

TEST_F(SbitmapTest, ShallowLimitIsOverTheWholeBitmap) {
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 64, 4, GFP_KERNEL, -1, false, true), 0);
  // 64 bits in 4 words of 16; a limit of 10 gives 2/3/3/2... summing to 10.
  int got = 0;
  while (sbitmap_get_shallow(&sb, 10) >= 0) got++;
  EXPECT_EQ(got, 10);
  EXPECT_EQ(sbitmap_weight(&sb), 10u);
  sbitmap_free(&sb);
}

TEST_F(SbitmapTest, ForEachSetStartsAnywhereAndStops) {
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 40, 3, GFP_KERNEL, -1, false, false), 0);
  for (int b : {1, 7, 8, 20, 39}) sbitmap_set_bit(&sb, b);
  sbitmap_deferred_clear_bit(&sb, 20);  // freed: not busy
  std::vector<unsigned int> seen;
  auto collect = [](struct sbitmap *, unsigned int bit, void *data) {
    static_cast<std::vector<unsigned int> *>(data)->push_back(bit);
    return true;
  };
  __sbitmap_for_each_set(&sb, 8, collect, &seen);
  EXPECT_EQ(seen, (std::vector<unsigned int>{8, 39, 1, 7}));
  seen.clear();
  auto first = [](struct sbitmap *, unsigned int bit, void *data) {
    static_cast<std::vector<unsigned int> *>(data)->push_back(bit);
    return false;
  };
  sbitmap_for_each_set(&sb, first, &seen);
  EXPECT_EQ(seen, (std::vector<unsigned int>{1}));
  EXPECT_TRUE(sbitmap_any_bit_set(&sb));
  EXPECT_EQ(sbitmap_weight(&sb), 4u);
  struct seq_file m;
  sbitmap_show(&sb, &m);
  EXPECT_EQ(m.buf, "depth=40\nbusy=4\ncleared=1\nbits_per_word=8\nmap_nr=5\n");
  m.buf.clear();
  sbitmap_bitmap_show(&sb, &m);
  EXPECT_EQ(m.buf, "00000000: 8201 0000 80\n");
  sbitmap_free(&sb);
}

TEST_F(SbitmapTest, ResizeFlushesDeferredClears) {
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 32, 3, GFP_KERNEL, -1, false, true), 0);
  for (int i = 0; i < 32; i++) ASSERT_GE(sbitmap_get(&sb), 0);
  sbitmap_put(&sb, 30);
  sbitmap_put(&sb, 2);
  sbitmap_resize(&sb, 20);
  EXPECT_EQ(Cleared(&sb), 0u);
  EXPECT_FALSE(sbitmap_test_bit(&sb, 2));
  EXPECT_EQ(sb.map_nr, 3u);
  EXPECT_EQ(sbitmap_get(&sb), 2);
  EXPECT_EQ(sbitmap_get(&sb), -1);
  sbitmap_free(&sb);
}

// v5.11..v6.10: a caller that finds ->cleared empty while another one has
// taken it but not yet released the bits gives up although bits are free.
TEST_F(SbitmapTest, DeferredClearRaceV610LosesFreeBits) {
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 64, 6, GFP_KERNEL, -1, false, true), 0);
  for (int i = 0; i < 64; i++) ASSERT_GE(sbitmap_get(&sb), 0);
  sbitmap_put(&sb, 10);
  sbitmap_put(&sb, 11);
  sbitmap_deferred_clear_v610 = true;
  static struct sbitmap *g_sb;
  static int nested;
  g_sb = &sb;
  nested = -2;
  // T2 runs exactly between T1's xchg and its and-not.
  sbitmap_deferred_clear_hook = [](struct sbitmap_word *) {
    sbitmap_deferred_clear_hook = nullptr;
    nested = sbitmap_get(g_sb);
  };
  int t1 = sbitmap_get(&sb);
  EXPECT_TRUE(t1 == 10 || t1 == 11);
  EXPECT_EQ(nested, -1) << "T2 saw ->cleared == 0 and gave up";
  EXPECT_EQ(sbitmap_weight(&sb), 63u) << "while one bit was free";
  sbitmap_free(&sb);
}

// The race above with today's code (the v6.11 fix, switch off). T1 is held
// between its xchg of ->cleared and its update of ->word until T2 has either
// finished its allocation or is about to wait for swap_lock. Under the fix T2
// waits for T1's update and then takes the second free bit; without it T2
// sees ->cleared empty and ->word full, and fails although a bit is free.
TEST_F(SbitmapTest, DeferredClearRaceKeepsFreeBit) {
  if (nr_cpu_ids < 2) uk::set_nr_cpu_ids(2);
  struct sbitmap sb;
  ASSERT_EQ(sbitmap_init_node(&sb, 64, 6, GFP_KERNEL, -1, false, true), 0);
  for (int i = 0; i < 64; i++) ASSERT_GE(sbitmap_get(&sb), 0);
  sbitmap_put(&sb, 10);
  sbitmap_put(&sb, 11);
  sbitmap_deferred_clear_v610 = false;  // today's code

  // 0: T1 not yet inside; 1: T1 parked in the hook; 2: T2 is about to take
  // a spinlock (swap_lock: the only one on its path); 3: T2 has returned.
  static std::atomic<int> phase;
  static std::atomic<pid_t> t2_tid;
  static std::atomic<bool> timed_out;
  phase = 0;
  t2_tid = 0;
  timed_out = false;
  sbitmap_deferred_clear_hook = [](struct sbitmap_word *) {
    sbitmap_deferred_clear_hook = nullptr;
    phase.store(1);
    if (!uk::testing::WaitFor([] { return phase.load() >= 2; }))
      timed_out = true;
  };
  uk::sched_hook = [](const char *where) {
    if (t2_tid.load() == gettid() && strcmp(where, "spin_lock") == 0) {
      int one = 1;
      phase.compare_exchange_strong(one, 2);
    }
  };
  int t2_result = -2;
  std::thread t2([&] {
    uk::pin_thread_to_cpu(1);
    while (phase.load() != 1) std::this_thread::yield();
    t2_tid = gettid();
    t2_result = sbitmap_get(&sb);
    phase.store(3);
    uk::pin_thread_to_cpu(-1);
  });
  int t1 = sbitmap_get(&sb);
  t2.join();
  uk::sched_hook = nullptr;

  EXPECT_FALSE(timed_out.load())
      << "T2 neither returned nor reached swap_lock while T1 held it";
  EXPECT_TRUE(t1 == 10 || t1 == 11) << "T1 got " << t1;
  EXPECT_NE(t2_result, -1)
      << "T2 found no free bit while bit " << (t1 == 10 ? 11 : 10)
      << " was free: it saw ->cleared empty before T1 had moved the freed "
         "bits into ->word (the v6.10 race that swap_lock closes)";
  EXPECT_TRUE(t2_result == 10 || t2_result == 11) << "T2 got " << t2_result;
  EXPECT_NE(t1, t2_result);
  EXPECT_EQ(sbitmap_weight(&sb), 64u);
  sbitmap_free(&sb);
}

class SbqTest : public SbitmapTest {};

TEST_F(SbqTest, WakeBatchFormulas) {
  struct sbitmap_queue sbq;
  struct {
    unsigned int depth, batch;
  } cases[] = {{64, 8}, {32, 4}, {16, 2}, {8, 1}, {2, 1}, {1024, 8}};
  for (auto c : cases) {
    ASSERT_EQ(sbitmap_queue_init_node(&sbq, c.depth, -1, false, GFP_KERNEL, -1),
              0);
    EXPECT_EQ(sbq.wake_batch, c.batch) << c.depth;
    sbitmap_queue_free(&sbq);
  }
  ASSERT_EQ(sbitmap_queue_init_node(&sbq, 64, -1, false, GFP_KERNEL, -1), 0);
  sbitmap_queue_min_shallow_depth(&sbq, 16);
  EXPECT_EQ(sbq.wake_batch, 2u);  // min(64, 16) / 8
  sbitmap_queue_min_shallow_depth(&sbq, 4);
  EXPECT_EQ(sbq.wake_batch, 1u);
  sbitmap_queue_min_shallow_depth(&sbq, UINT_MAX);
  EXPECT_EQ(sbq.wake_batch, 8u);
  sbitmap_queue_recalculate_wake_batch(&sbq, 2);  // ceil(64/2)/8
  EXPECT_EQ(sbq.wake_batch, 4u);
  sbitmap_queue_recalculate_wake_batch(&sbq, 8);  // 8/8
  EXPECT_EQ(sbq.wake_batch, 1u);
  sbitmap_queue_recalculate_wake_batch(&sbq, 64);  // clamped to 1
  EXPECT_EQ(sbq.wake_batch, 1u);
  sbitmap_queue_resize(&sbq, 16);
  EXPECT_EQ(sbq.wake_batch, 2u);
  // v6.1: per-word shallow formula, min batch 4 on maps >= 32 bits, and a
  // batch change forces every wait_cnt to 1.
  sbitmap_queue_resize(&sbq, 64);
  sbitmap_queue_set_wake_scheme(&sbq, SBQ_WAKE_V61);
  EXPECT_EQ(sbq.wake_batch, 8u);
  EXPECT_EQ(atomic_read(&sbq.ws[3].wait_cnt), 8);
  sbitmap_queue_recalculate_wake_batch(&sbq, 8);
  EXPECT_EQ(sbq.wake_batch, 4u);
  for (int i = 0; i < SBQ_WAIT_QUEUES; i++)
    EXPECT_EQ(atomic_read(&sbq.ws[i].wait_cnt), 1);
  sbitmap_queue_min_shallow_depth(&sbq,
                                  2);  // shift 4: (64>>4)*2 = 8 usable -> 1
  EXPECT_EQ(sbq.wake_batch, 1u);
  sbitmap_queue_free(&sbq);
}

TEST_F(SbqTest, ShallowGetWarnsBelowDeclaredMinimum) {
  // WARN_ON_ONCE() fires once per process: only the first run can see it.
  static int runs;
  if (runs++ > 0) GTEST_SKIP() << "WARN_ON_ONCE already fired (--gtest_repeat)";
  struct sbitmap_queue sbq;
  ASSERT_EQ(sbitmap_queue_init_node(&sbq, 64, -1, false, GFP_KERNEL, -1), 0);
  sbitmap_queue_min_shallow_depth(&sbq, 16);
  EXPECT_GE(sbitmap_queue_get_shallow(&sbq, 16), 0);
  long before = uk::warn_count;
  uk::testing::AllowWarnings();
  EXPECT_GE(sbitmap_queue_get_shallow(&sbq, 8), 0);
  EXPECT_GT(uk::warn_count, before);
  sbitmap_queue_free(&sbq);
}

TEST_F(SbqTest, BatchGetReturnsPartialMasks) {
  struct sbitmap_queue sbq;
  ASSERT_EQ(sbitmap_queue_init_node(&sbq, 64, 6, false, GFP_KERNEL, -1), 0);
  *per_cpu_ptr(sbq.sb.alloc_hint, 0) = 0;
  sbitmap_set_bit(&sbq.sb, 2);  // someone else owns bit 2
  unsigned int off = 99;
  unsigned long mask = __sbitmap_queue_get_batch(&sbq, 4, &off);
  EXPECT_EQ(off, 0u);
  EXPECT_EQ(mask, 0b1011ul);  // bits 0, 1, 3 are ours; 2 is not
  int tags[] = {0, 1, 3};
  sbitmap_queue_clear_batch(&sbq, 0, tags, 3);
  EXPECT_EQ(sbitmap_weight(&sbq.sb), 1u);
  EXPECT_EQ(Cleared(&sbq.sb), 0u);  // batch clears skip ->cleared
  // A run that does not fit at the first zero bit: none from this word.
  for (int i = 0; i < 62; i++) sbitmap_set_bit(&sbq.sb, i);
  sbitmap_clear_bit(&sbq.sb, 2);
  for (int i = 62; i < 64; i++) sbitmap_set_bit(&sbq.sb, i);
  // The run only has to fit below the word's depth: bit 3 is taken, so
  // the caller gets bit 2 alone.
  EXPECT_EQ(__sbitmap_queue_get_batch(&sbq, 2, &off), 1ul);
  EXPECT_EQ(off, 2u);
  // Round-robin maps never batch.
  struct sbitmap_queue rr;
  ASSERT_EQ(sbitmap_queue_init_node(&rr, 64, -1, true, GFP_KERNEL, -1), 0);
  EXPECT_EQ(__sbitmap_queue_get_batch(&rr, 4, &off), 0ul);
  sbitmap_queue_free(&rr);
  sbitmap_queue_free(&sbq);
}

// Upstream compares a word against 2^(depth-1)-1 to decide it is full: a
// word whose only free bit is the top one is skipped by batch allocation.
TEST_F(SbqTest, BatchGetFullWordQuirk) {
  struct sbitmap_queue sbq;
  ASSERT_EQ(sbitmap_queue_init_node(&sbq, 16, 2, false, GFP_KERNEL, -1), 0);
  for (int w = 0; w < 4; w++)
    for (int b = 0; b < 3; b++) sbitmap_set_bit(&sbq.sb, w * 4 + b);
  unsigned int off;
  EXPECT_EQ(__sbitmap_queue_get_batch(&sbq, 1, &off), 0ul);
  EXPECT_GE(__sbitmap_queue_get(&sbq), 0);  // the single-bit path finds one
  sbitmap_queue_free(&sbq);
}

TEST_F(SbqTest, ClearUpdatesFreeingCpuHintAndShow) {
  struct sbitmap_queue sbq;
  ASSERT_EQ(sbitmap_queue_init_node(&sbq, 16, -1, false, GFP_KERNEL, -1), 0);
  unsigned int cpu;
  int nr = sbitmap_queue_get(&sbq, &cpu);
  ASSERT_GE(nr, 0);
  EXPECT_EQ(cpu, 0u);
  sbitmap_queue_clear(&sbq, nr, nr_cpu_ids - 1);
  EXPECT_EQ(*per_cpu_ptr(sbq.sb.alloc_hint, nr_cpu_ids - 1), (unsigned)nr);
  struct seq_file m;
  sbitmap_queue_show(&sbq, &m);
  EXPECT_NE(m.buf.find("wake_batch=2\n"), std::string::npos);
  EXPECT_NE(m.buf.find("\t{.wait=inactive},\n"), std::string::npos);
  EXPECT_NE(m.buf.find("min_shallow_depth=4294967295\n"), std::string::npos);
  sbitmap_queue_set_wake_scheme(&sbq, SBQ_WAKE_V61);
  m.buf.clear();
  sbitmap_queue_show(&sbq, &m);
  EXPECT_NE(m.buf.find("\t{.wait_cnt=2, .wait=inactive},\n"),
            std::string::npos);
  sbitmap_queue_free(&sbq);
}

// Frees with nobody waiting leave every wake-up counter alone, in every
// scheme (sbitmap_queue_wake_up() returns on ws_active == 0 before it looks
// at the scheme); the first waiter then gets a full batch's worth of credit.
TEST_F(SbqTest, FreesWithoutWaitersDoNoWakeAccounting) {
  for (int scheme :
       {SBQ_WAKE_CURRENT, SBQ_WAKE_V61, SBQ_WAKE_V60, SBQ_WAKE_V61_NEXT}) {
    struct sbitmap_queue sbq;
    ASSERT_EQ(sbitmap_queue_init_node(&sbq, 64, -1, false, GFP_KERNEL, -1), 0);
    sbitmap_queue_set_wake_scheme(&sbq,
                                  static_cast<enum sbq_wake_scheme>(scheme));
    const int batch = static_cast<int>(sbq.wake_batch);
    ASSERT_EQ(batch, 8);
    for (int i = 0; i < 3 * batch + 1; i++) {
      int nr = __sbitmap_queue_get(&sbq);
      ASSERT_GE(nr, 0);
      sbitmap_queue_clear(&sbq, nr, 0);
    }
    EXPECT_EQ(atomic_read(&sbq.completion_cnt), 0) << scheme;
    EXPECT_EQ(atomic_read(&sbq.wakeup_cnt), 0) << scheme;
    EXPECT_EQ(atomic_read(&sbq.wake_index), 0) << scheme;
    for (int i = 0; i < SBQ_WAIT_QUEUES; i++)
      EXPECT_EQ(atomic_read(&sbq.ws[i].wait_cnt), batch)
          << scheme << " ws " << i;
    sbitmap_queue_free(&sbq);
  }
}

// ---- lost wake-up under nested completions ----

// A sleeper stand-in: an exclusive entry whose wake function records the
// wake-up and unqueues itself, as autoremove_wake_function does.
struct SimWaiter {
  struct sbq_wait w = {};
  bool woken = false;
};

struct Scenario {
  struct sbitmap_queue sbq;
  std::deque<int> in_flight;
  std::deque<SimWaiter *> runnable;
  std::vector<std::unique_ptr<SimWaiter>> waiters;
  int nested_budget = 0;
  int nested_done = 0;
  int wakeups = 0;
  int served = 0;
  bool inject_in_wake_fn = false;
  bool in_irq = false;
  bool irq_pending = false;
};
Scenario *g_sc;

void complete_tag(int tag) { sbitmap_queue_clear(&g_sc->sbq, tag, 0); }

void sleep_on_ws0(SimWaiter *sw);

// The interrupt: on CPU 0, in hardirq context, the next in-flight request
// completes, and so do the requests of the sleepers just woken (they run on
// other CPUs, get a tag, and a fast device completes them at once).
void nested_irq() {
  Scenario *sc = g_sc;
  EXPECT_TRUE(in_hardirq());
  sc->in_irq = true;
  sc->nested_done++;
  if (!sc->in_flight.empty()) {
    int tag = sc->in_flight.front();
    sc->in_flight.pop_front();
    complete_tag(tag);
  }
  while (!sc->runnable.empty()) {
    SimWaiter *sw = sc->runnable.front();
    sc->runnable.pop_front();
    sbitmap_finish_wait(&sc->sbq, &sc->sbq.ws[0], &sw->w);
    int t = __sbitmap_queue_get(&sc->sbq);
    if (t >= 0) {
      sc->served++;
      complete_tag(t);
    } else {
      sleep_on_ws0(sw);
    }
  }
  sc->in_irq = false;
}

void inject_nested() {
  Scenario *sc = g_sc;
  if (sc->in_irq || sc->irq_pending || sc->nested_done >= sc->nested_budget)
    return;
  sc->irq_pending = true;
  uk::run_in_hardirq(0, [] {
    g_sc->irq_pending = false;
    nested_irq();
  });
}

int sim_wake(struct wait_queue_entry *entry, unsigned mode, int flags,
             void *key) {
  SimWaiter *sw = container_of(entry, SimWaiter, w.wait);
  sw->woken = true;
  list_del_init(&entry->entry);
  g_sc->runnable.push_back(sw);
  g_sc->wakeups++;
  // Interrupts are off here (wait-queue lock): the interrupt is taken at
  // the unlock, still inside wake_up_nr(), as in Hugh Dickins' trace.
  if (g_sc->inject_in_wake_fn) inject_nested();
  return 1;
}

void sleep_on_ws0(SimWaiter *sw) {
  sw->woken = false;
  sw->w.wait.func = sim_wake;
  if (!sw->w.wait.entry.next) INIT_LIST_HEAD(&sw->w.wait.entry);
  sbitmap_prepare_to_wait(&g_sc->sbq, &g_sc->sbq.ws[0], &sw->w,
                          TASK_UNINTERRUPTIBLE);
  __set_current_state(TASK_RUNNING);
}

// Depth 16 (wake_batch 2), all tags in flight, `nwaiters` sleepers on one
// wait queue. Completions run one by one on CPU 0 with preemption off and
// interrupts on. Each wake-up is interrupted (nested_irq) right after
// wake_up_nr(): in v6.1 that is between the count reaching 0 and its reset.
void RunScenario(Scenario *sc, enum sbq_wake_scheme scheme, bool use_v61_hook,
                 int nwaiters) {
  g_sc = sc;
  ASSERT_EQ(sbitmap_queue_init_node(&sc->sbq, 16, -1, false, GFP_KERNEL, -1),
            0);
  sbitmap_queue_set_wake_scheme(&sc->sbq, scheme);
  ASSERT_EQ(sc->sbq.wake_batch, 2u);
  for (int i = 0; i < 16; i++) {
    int t = __sbitmap_queue_get(&sc->sbq);
    ASSERT_GE(t, 0);
    sc->in_flight.push_back(t);
  }
  for (int i = 0; i < nwaiters; i++) {
    sc->waiters.push_back(std::make_unique<SimWaiter>());
    sleep_on_ws0(sc->waiters.back().get());
  }
  sc->nested_budget = 1 << 20;
  if (use_v61_hook)
    sbq_v61_wake_hook = [](struct sbitmap_queue *, struct sbq_wait_state *) {
      inject_nested();
    };
  else
    sc->inject_in_wake_fn = true;

  for (int steps = 0; steps < 100000; steps++) {
    if (!sc->runnable.empty()) {
      SimWaiter *sw = sc->runnable.front();
      sc->runnable.pop_front();
      sbitmap_finish_wait(&sc->sbq, &sc->sbq.ws[0], &sw->w);
      int t = __sbitmap_queue_get(&sc->sbq);
      if (t >= 0) {
        sc->served++;
        sc->in_flight.push_back(t);
      } else {
        sleep_on_ws0(sw);
      }
    } else if (!sc->in_flight.empty()) {
      int t = sc->in_flight.front();
      sc->in_flight.pop_front();
      preempt_disable();  // a completion owns its CPU; interrupts stay on
      complete_tag(t);
      preempt_enable();
    } else {
      break;
    }
  }
  sbq_v61_wake_hook = nullptr;
  sc->inject_in_wake_fn = false;
}

void Cleanup(Scenario *sc) {
  // Unqueue whoever is left so the queue can be freed.
  for (auto &w : sc->waiters)
    if (w->w.sbq) sbitmap_finish_wait(&sc->sbq, &sc->sbq.ws[0], &w->w);
  sbitmap_queue_free(&sc->sbq);
  g_sc = nullptr;
}

void ExpectStranded(Scenario *sc) {
  EXPECT_GT(sc->nested_done, 0);
  // Nothing in flight, nothing runnable: no further frees are coming...
  EXPECT_TRUE(sc->in_flight.empty());
  EXPECT_TRUE(sc->runnable.empty());
  EXPECT_EQ(sbitmap_weight(&sc->sbq.sb), 0u) << "all tags are free";
  // ...yet sleepers are still queued, waiting for more frees.
  EXPECT_GT(atomic_read(&sc->sbq.ws_active), 0);
  EXPECT_TRUE(waitqueue_active(&sc->sbq.ws[0].wait));
  EXPECT_GT(atomic_read(&sc->sbq.ws[0].wait_cnt), 0);
  // A new allocation would succeed at once: the sleepers are simply lost.
  int before = sc->wakeups;
  int t = __sbitmap_queue_get(&sc->sbq);
  EXPECT_GE(t, 0);
  EXPECT_EQ(sc->wakeups, before);
}

void ExpectAllWoken(Scenario *sc, int nwaiters) {
  EXPECT_GT(sc->nested_done, 0);
  EXPECT_TRUE(sc->in_flight.empty());
  EXPECT_EQ(atomic_read(&sc->sbq.ws_active), 0);
  EXPECT_FALSE(waitqueue_active(&sc->sbq.ws[0].wait));
  for (auto &w : sc->waiters) EXPECT_EQ(w->w.sbq, nullptr);
  EXPECT_GE(sc->wakeups, nwaiters);
  EXPECT_EQ(sc->served, nwaiters);
}

constexpr int kWaiters = 40;

TEST_F(SbqTest, V61LosesWakeupsOnNestedCompletionViaHook) {
  Scenario sc;
  RunScenario(&sc, SBQ_WAKE_V61, /*use_v61_hook=*/true, kWaiters);
  ExpectStranded(&sc);
  Cleanup(&sc);
}

TEST_F(SbqTest, V61LosesWakeupsOnInterruptInsideWakeUp) {
  Scenario sc;
  RunScenario(&sc, SBQ_WAKE_V61, /*use_v61_hook=*/false, kWaiters);
  ExpectStranded(&sc);
  Cleanup(&sc);
}

TEST_F(SbqTest, CurrentWakesEveryoneUnderTheSameNestedCompletions) {
  Scenario sc;
  RunScenario(&sc, SBQ_WAKE_CURRENT, /*use_v61_hook=*/false, kWaiters);
  ExpectAllWoken(&sc, kWaiters);
  Cleanup(&sc);
}

TEST_F(SbqTest, BothSchemesWakeEveryoneWithoutNesting) {
  for (auto scheme : {SBQ_WAKE_V61, SBQ_WAKE_CURRENT}) {
    Scenario sc;
    g_sc = &sc;
    ASSERT_EQ(sbitmap_queue_init_node(&sc.sbq, 16, -1, false, GFP_KERNEL, -1),
              0);
    sbitmap_queue_set_wake_scheme(&sc.sbq, scheme);
    for (int i = 0; i < 16; i++)
      sc.in_flight.push_back(__sbitmap_queue_get(&sc.sbq));
    for (int i = 0; i < kWaiters; i++) {
      sc.waiters.push_back(std::make_unique<SimWaiter>());
      sleep_on_ws0(sc.waiters.back().get());
    }
    while (!sc.runnable.empty() || !sc.in_flight.empty()) {
      if (!sc.runnable.empty()) {
        SimWaiter *sw = sc.runnable.front();
        sc.runnable.pop_front();
        sbitmap_finish_wait(&sc.sbq, &sc.sbq.ws[0], &sw->w);
        int t = __sbitmap_queue_get(&sc.sbq);
        if (t >= 0)
          sc.in_flight.push_back(t);
        else
          sleep_on_ws0(sw);
      } else {
        int t = sc.in_flight.front();
        sc.in_flight.pop_front();
        complete_tag(t);
      }
    }
    EXPECT_EQ(atomic_read(&sc.sbq.ws_active), 0) << scheme;
    Cleanup(&sc);
  }
}

// n waiters, each woken through `fn`, queued round-robin on sbq's wait
// queues with sbitmap_prepare_to_wait(); finish() takes them all off again.
class QueuedWaiters {
 public:
  QueuedWaiters(struct sbitmap_queue *sbq, int n, wait_queue_func_t fn)
      : sbq_(sbq), w_(n) {
    for (int i = 0; i < n; i++) {
      w_[i].w.wait.func = fn;
      INIT_LIST_HEAD(&w_[i].w.wait.entry);
      sbitmap_prepare_to_wait(sbq_, ws(i), &w_[i].w, TASK_UNINTERRUPTIBLE);
    }
    __set_current_state(TASK_RUNNING);
  }
  int woken() const {
    int n = 0;
    for (const SimWaiter &x : w_) n += x.woken;
    return n;
  }
  void finish() {
    for (size_t i = 0; i < w_.size(); i++)
      sbitmap_finish_wait(sbq_, ws(i), &w_[i].w);
  }

 private:
  struct sbq_wait_state *ws(size_t i) {
    return &sbq_->ws[i % SBQ_WAIT_QUEUES];
  }
  struct sbitmap_queue *sbq_;
  std::vector<SimWaiter> w_;
};

TEST_F(SbqTest, WakeAllWakesOnePerQueue) {
  struct sbitmap_queue sbq;
  Scenario sc;
  g_sc = &sc;
  ASSERT_EQ(sbitmap_queue_init_node(&sbq, 8, -1, false, GFP_KERNEL, -1), 0);
  QueuedWaiters w(&sbq, SBQ_WAIT_QUEUES * 2, sim_wake);
  EXPECT_EQ(atomic_read(&sbq.ws_active), 16);
  sbitmap_queue_wake_all(&sbq);
  EXPECT_EQ(w.woken(), SBQ_WAIT_QUEUES);
  w.finish();
  EXPECT_EQ(atomic_read(&sbq.ws_active), 0);
  sbitmap_queue_free(&sbq);
  g_sc = nullptr;
}

// 106397376c03: one waiter per queue, re-added right after each wake-up;
// batches must spread over queues so nobody is left behind.
TEST_F(SbqTest, CurrentSpreadsABatchAcrossQueues) {
  struct sbitmap_queue sbq;
  Scenario sc;
  g_sc = &sc;
  ASSERT_EQ(sbitmap_queue_init_node(&sbq, 64, -1, false, GFP_KERNEL, -1), 0);
  QueuedWaiters w(&sbq, SBQ_WAIT_QUEUES, sim_wake);
  sbitmap_queue_wake_up(&sbq, 8);  // one batch of 8
  EXPECT_EQ(w.woken(), 8);
  w.finish();
  sbitmap_queue_free(&sbq);
  g_sc = nullptr;
}

// An exclusive waiter that only records its wake-up (autoremove style).
int record_wake(struct wait_queue_entry *entry, unsigned mode, int flags,
                void *key) {
  container_of(entry, SimWaiter, w.wait)->woken = true;
  list_del_init(&entry->entry);
  return 1;
}

// §2.8: a batch is claimed on the wrapping difference completion_cnt -
// wakeup_cnt. Counters passing INT_MAX (atomic_t's sign) or UINT_MAX neither
// wake a batch early nor hold it back.
TEST_F(SbqTest, CurrentWakeCountersWrap) {
  struct {
    unsigned int completions, wakeups;
  } cases[] = {
      {INT_MAX - 2u, INT_MAX - 2u},  // passes INT_MAX at the 3rd free
      {UINT_MAX - 2, UINT_MAX - 2},  // wraps to 0 at the 3rd free
      {UINT_MAX - 1, UINT_MAX - 5},  // 4 frees counted, wraps at the 2nd
      {1, UINT_MAX - 4},             // 6 frees counted across the wrap
  };
  for (auto c : cases) {
    SCOPED_TRACE(::testing::Message() << c.completions << "/" << c.wakeups);
    struct sbitmap_queue sbq;
    ASSERT_EQ(sbitmap_queue_init_node(&sbq, 64, -1, false, GFP_KERNEL, -1), 0);
    ASSERT_EQ(sbq.wake_scheme, SBQ_WAKE_CURRENT);
    const int batch = static_cast<int>(sbq.wake_batch);
    ASSERT_EQ(batch, 8);
    std::vector<int> tags;
    for (int i = 0; i < 2 * batch; i++)
      tags.push_back(__sbitmap_queue_get(&sbq));
    QueuedWaiters w(&sbq, 3 * SBQ_WAIT_QUEUES, record_wake);
    atomic_set(&sbq.completion_cnt, static_cast<int>(c.completions));
    atomic_set(&sbq.wakeup_cnt, static_cast<int>(c.wakeups));
    const int owed = static_cast<int>(c.completions - c.wakeups);
    ASSERT_LT(owed, batch);
    size_t next = 0;
    // The first batch is due after batch - owed frees, not one before...
    for (int i = 1; i < batch - owed; i++) {
      ASSERT_GE(tags[next], 0);
      sbitmap_queue_clear(&sbq, tags[next++], 0);
      EXPECT_EQ(w.woken(), 0) << "woken after " << i << " frees";
    }
    sbitmap_queue_clear(&sbq, tags[next++], 0);
    EXPECT_EQ(w.woken(), batch);
    // ...and the next one after wake_batch more.
    for (int i = 1; i < batch; i++) {
      sbitmap_queue_clear(&sbq, tags[next++], 0);
      EXPECT_EQ(w.woken(), batch) << "second batch after " << i << " frees";
    }
    sbitmap_queue_clear(&sbq, tags[next++], 0);
    EXPECT_EQ(w.woken(), 2 * batch);
    EXPECT_EQ(static_cast<unsigned int>(atomic_read(&sbq.completion_cnt)),
              c.completions + static_cast<unsigned int>(next));
    EXPECT_EQ(static_cast<unsigned int>(atomic_read(&sbq.wakeup_cnt)),
              c.wakeups + 2u * batch);
    w.finish();
    EXPECT_EQ(atomic_read(&sbq.ws_active), 0);
    sbitmap_queue_free(&sbq);
  }
}

// The same across the wrap with batched frees (sbitmap_queue_clear_batch()
// reports them all at once).
TEST_F(SbqTest, CurrentWakeCountersWrapBatchedFrees) {
  struct sbitmap_queue sbq;
  ASSERT_EQ(sbitmap_queue_init_node(&sbq, 64, 6, false, GFP_KERNEL, -1), 0);
  ASSERT_EQ(sbq.wake_batch, 8u);
  *per_cpu_ptr(sbq.sb.alloc_hint, 0) = 0;
  for (int i = 0; i < 17; i++) ASSERT_EQ(__sbitmap_queue_get(&sbq), i);
  QueuedWaiters w(&sbq, 2 * SBQ_WAIT_QUEUES, record_wake);
  atomic_set(&sbq.completion_cnt, -3);  // UINT_MAX - 2
  atomic_set(&sbq.wakeup_cnt, -3);
  int first[] = {0, 1};  // up to UINT_MAX: 2 frees
  sbitmap_queue_clear_batch(&sbq, 0, first, 2);
  EXPECT_EQ(w.woken(), 0);
  int across[] = {2, 3, 4, 5, 6};  // across the wrap: 7 frees, one short
  sbitmap_queue_clear_batch(&sbq, 0, across, 5);
  EXPECT_EQ(w.woken(), 0);
  int second[] = {7, 8, 9, 10, 11, 12, 13, 14, 15};  // 9 more: 16 in all
  sbitmap_queue_clear_batch(&sbq, 0, second, 9);
  // One claim per call: the first batch now, the second is owed.
  EXPECT_EQ(w.woken(), 8);
  EXPECT_EQ(atomic_read(&sbq.completion_cnt), 13);
  EXPECT_EQ(atomic_read(&sbq.wakeup_cnt), 5);
  // The owed batch is not lost: the next free claims it.
  sbitmap_queue_clear(&sbq, 16, 0);
  EXPECT_EQ(w.woken(), 16);
  EXPECT_EQ(atomic_read(&sbq.completion_cnt), 14);
  EXPECT_EQ(atomic_read(&sbq.wakeup_cnt), 13);
  EXPECT_EQ(sbitmap_weight(&sbq.sb), 0u);
  w.finish();
  sbitmap_queue_free(&sbq);
}

// ---- stress: real sleepers ----

TEST_F(SbqTest, StressGetPutWithSleepers) {
  uk::pin_thread_to_cpu(-1);
  const unsigned nthreads = uk::testing::StressThreads() * 2;
  const int iters = 3000;
  struct sbitmap_queue sbq;
  ASSERT_EQ(sbitmap_queue_init_node(&sbq, 4, -1, false, GFP_KERNEL, -1), 0);
  std::vector<std::atomic<int>> owner(4);
  for (auto &o : owner) o = 0;
  std::atomic<int> dup{0}, done{0};
  std::atomic<long> max_wait_ns{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < nthreads; t++) {
    ts.emplace_back([&] {
      for (int i = 0; i < iters; i++) {
        auto t0 = std::chrono::steady_clock::now();
        unsigned int cpu;
        int tag = sbitmap_queue_get(&sbq, &cpu);
        if (tag < 0) {
          DEFINE_SBQ_WAIT(wait);
          struct sbq_wait_state *ws = &sbq.ws[i & (SBQ_WAIT_QUEUES - 1)];
          for (;;) {
            tag = sbitmap_queue_get(&sbq, &cpu);
            if (tag >= 0) break;
            sbitmap_prepare_to_wait(&sbq, ws, &wait, TASK_UNINTERRUPTIBLE);
            tag = sbitmap_queue_get(&sbq, &cpu);
            if (tag >= 0) break;
            io_schedule();
            sbitmap_finish_wait(&sbq, ws, &wait);
          }
          sbitmap_finish_wait(&sbq, ws, &wait);
        }
        long ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
        long m = max_wait_ns.load();
        while (ns > m && !max_wait_ns.compare_exchange_weak(m, ns)) {
        }
        if (owner[tag].exchange(1) != 0) dup++;
        owner[tag].store(0);
        sbitmap_queue_clear(&sbq, tag, cpu);
      }
      done++;
    });
  }
  // Wait with a deadline: a missed wake-up leaves some thread stuck before
  // done++, which this loop reports instead of hanging.
  bool hung = !uk::testing::WaitFor(
      [&] { return done.load() >= (int)nthreads; }, std::chrono::seconds(30));
  while (done.load() < (int)nthreads)
    sbitmap_queue_wake_all(&sbq);  // unstick to join
  for (auto &t : ts) t.join();
  EXPECT_FALSE(hung) << "a sleeper was never woken";
  EXPECT_EQ(dup.load(), 0);
  EXPECT_LT(max_wait_ns.load(), 10'000'000'000L);
  EXPECT_EQ(sbitmap_weight(&sbq.sb), 0u);
  EXPECT_EQ(atomic_read(&sbq.ws_active), 0);
  sbitmap_queue_free(&sbq);
}

}  // namespace
