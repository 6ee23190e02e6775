// SPDX-License-Identifier: GPL-2.0-only
// Wake-up latency and throughput: ping-pong between two tasks through wait
// queues, completions and bare wake_up_process(); workqueue queue+flush.
// Each benchmark reports round trips per second (items_per_second) and the
// process's context switches per round trip (ctxsw/rt, voluntary ones in
// vcsw/rt).
#include <benchmark/benchmark.h>

#include <atomic>
#include <thread>
#include <vector>

#include <uk/linux/completion.h>
#include <uk/linux/sched.h>
#include <uk/linux/wait.h>
#include <uk/linux/workqueue.h>
#include <uk/shim/ctxsw.h>

namespace {

void report_ctxsw(benchmark::State &state, const uk::CtxswCounts &before) {
  uk::CtxswCounts d = uk::ctxsw_counts_process() - before;
  double it = static_cast<double>(state.iterations());
  state.counters["ctxsw/rt"] = static_cast<double>(d.total()) / it;
  state.counters["vcsw/rt"] = static_cast<double>(d.voluntary) / it;
  state.SetItemsProcessed(state.iterations());
}

// Two tasks hand a token back and forth with wait_event()/wake_up().
void BM_WaitQueuePingPong(benchmark::State &state) {
  DECLARE_WAIT_QUEUE_HEAD(to_partner);
  DECLARE_WAIT_QUEUE_HEAD(to_main);
  std::atomic<int> turn{0};  // 0: main, 1: partner, 2: stop
  std::thread partner([&] {
    for (;;) {
      wait_event(to_partner, turn.load() != 0);
      if (turn.load() == 2) break;
      turn.store(0);
      wake_up(&to_main);
    }
  });
  uk::CtxswCounts before = uk::ctxsw_counts_process();
  for (auto _ : state) {
    turn.store(1);
    wake_up(&to_partner);
    wait_event(to_main, turn.load() == 0);
  }
  report_ctxsw(state, before);
  turn.store(2);
  wake_up(&to_partner);
  partner.join();
}
BENCHMARK(BM_WaitQueuePingPong)->UseRealTime();

// The same with two completions.
void BM_CompletionPingPong(benchmark::State &state) {
  struct completion ping, pong;
  init_completion(&ping);
  init_completion(&pong);
  std::atomic<bool> stop{false};
  std::thread partner([&] {
    for (;;) {
      wait_for_completion(&ping);
      if (stop.load()) break;
      complete(&pong);
    }
  });
  uk::CtxswCounts before = uk::ctxsw_counts_process();
  for (auto _ : state) {
    complete(&ping);
    wait_for_completion(&pong);
  }
  report_ctxsw(state, before);
  stop.store(true);
  complete(&ping);
  partner.join();
}
BENCHMARK(BM_CompletionPingPong)->UseRealTime();

// Bare set_current_state()/schedule()/wake_up_process(): the floor under
// both of the above (no queue lock).
void BM_WakeUpProcessPingPong(benchmark::State &state) {
  std::atomic<struct task_struct *> partner_task{nullptr};
  struct task_struct *main_task = current;
  std::atomic<int> turn{0};
  std::thread partner([&] {
    partner_task.store(current);
    for (;;) {
      set_current_state(TASK_UNINTERRUPTIBLE);
      int t = turn.load();
      if (t == 0) {
        schedule();
        continue;
      }
      __set_current_state(TASK_RUNNING);
      if (t == 2) break;
      turn.store(0);
      wake_up_process(main_task);
    }
  });
  while (!partner_task.load()) std::this_thread::yield();
  uk::CtxswCounts before = uk::ctxsw_counts_process();
  for (auto _ : state) {
    turn.store(1);
    wake_up_process(partner_task.load());
    for (;;) {
      set_current_state(TASK_UNINTERRUPTIBLE);
      if (turn.load() == 0) break;
      schedule();
    }
    __set_current_state(TASK_RUNNING);
  }
  report_ctxsw(state, before);
  turn.store(2);
  wake_up_process(partner_task.load());
  partner.join();
}
BENCHMARK(BM_WakeUpProcessPingPong)->UseRealTime();

struct BenchWork {
  struct work_struct work;
  std::atomic<long> runs{0};
};

void bench_work_fn(struct work_struct *work) {
  container_of(work, BenchWork, work)
      ->runs.fetch_add(1, std::memory_order_relaxed);
}

// queue_work() + flush_work() of one item: a round trip to a worker.
void BM_QueueWorkFlushWork(benchmark::State &state) {
  struct workqueue_struct *wq =
      state.range(0) ? alloc_workqueue("bench_unbound", WQ_UNBOUND, 0)
                     : alloc_workqueue("bench_percpu", 0, 0);
  BenchWork w;
  INIT_WORK(&w.work, bench_work_fn);
  uk::CtxswCounts before = uk::ctxsw_counts_process();
  for (auto _ : state) {
    queue_work(wq, &w.work);
    flush_work(&w.work);
  }
  report_ctxsw(state, before);
  destroy_workqueue(wq);
  if (w.runs.load() != state.iterations()) state.SkipWithError("lost work");
}
BENCHMARK(BM_QueueWorkFlushWork)->Arg(0)->Arg(1)->UseRealTime();

// Queue a batch of distinct items, then flush_workqueue(): throughput.
void BM_QueueWorkBatchFlush(benchmark::State &state) {
  const int batch = static_cast<int>(state.range(1));
  struct workqueue_struct *wq =
      state.range(0) ? alloc_workqueue("bench_unbound", WQ_UNBOUND, 0)
                     : alloc_workqueue("bench_percpu", 0, 0);
  std::vector<BenchWork> w(batch);
  for (auto &x : w) INIT_WORK(&x.work, bench_work_fn);
  uk::CtxswCounts before = uk::ctxsw_counts_process();
  for (auto _ : state) {
    for (auto &x : w) queue_work(wq, &x.work);
    flush_workqueue(wq);
  }
  uk::CtxswCounts d = uk::ctxsw_counts_process() - before;
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["ctxsw/item"] =
      static_cast<double>(d.total()) /
      static_cast<double>(state.iterations() * batch);
  destroy_workqueue(wq);
}
BENCHMARK(BM_QueueWorkBatchFlush)->Args({0, 64})->Args({1, 64})->UseRealTime();

}  // namespace
