// SPDX-License-Identifier: GPL-2.0-only
// ukern explore: the controlled scheduler, its strategies, replay, shrinking
// and the traces. See explore.h and docs/explore.md.
#include "explore.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include <uk/linux/compiler.h>
#include <uk/linux/irqflags.h>
#include <uk/linux/percpu.h>
#include <uk/linux/preempt.h>
#include <uk/linux/printk.h>
#include <uk/linux/sched.h>
#include <uk/linux/slab.h>
#include <uk/linux/interrupt.h>
#include <uk/linux/workqueue.h>
#include <uk/shim/clock.h>
#include <uk/shim/cpu.h>
#include <uk/shim/futex.h>

namespace explore {
namespace {

// ---- strategies ----

// One choice: `en` are the enabled task ids (sorted), `cur` the task at the
// scheduling point (-1 at the start), `cur_en` whether it may go on, `yield`
// whether it spins (cpu_relax) and would rather let others run, `def` the
// default (go on, else the next enabled task after `cur`).
struct Chooser {
  virtual ~Chooser() = default;
  virtual void begin(long index) { (void)index; }
  virtual int choose(long step, const std::vector<int> &en, int cur,
                     bool cur_en, bool yield, int def) = 0;
  virtual void end(long steps) { (void)steps; }
  // Prepares the next schedule; false when the space is exhausted.
  virtual bool next() { return true; }
  // Step at which the schedule left the replayed prefix (the set-up or the
  // code is not deterministic), or -1.
  long diverged = -1;
};

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct RandomChooser : Chooser {
  explicit RandomChooser(uint64_t seed) : seed_(seed) {}
  void begin(long index) override { rng_.seed(mix(seed_ ^ mix(index))); }
  int choose(long, const std::vector<int> &en, int cur, bool, bool yield,
             int def) override {
    if (yield && en.size() > 1) {
      std::vector<int> others;
      for (int t : en)
        if (t != cur) others.push_back(t);
      return others[rng_() % others.size()];
    }
    (void)def;
    return en[rng_() % en.size()];
  }
  uint64_t seed_;
  std::mt19937_64 rng_;
};

// PCT (Burckhardt et al., ASPLOS 2010): random distinct task priorities,
// d-1 random change points over the k steps of a schedule; the highest
// priority enabled task runs; at the i-th change point the running task
// drops to priority i. Finds a bug of depth d with probability at least
// 1/(n k^(d-1)).
struct PctChooser : Chooser {
  PctChooser(uint64_t seed, int depth) : seed_(seed), depth_(depth) {}
  void begin(long index) override {
    rng_.seed(mix(seed_ ^ mix(index + 0x5043)));
    prio_.clear();
    change_.clear();
    for (int i = 1; i < depth_; i++)
      change_[static_cast<long>(rng_() % std::max<long>(k_, 1))] = i;
  }
  long prio(int t) {
    auto it = prio_.find(t);
    if (it != prio_.end()) return it->second;
    long p = depth_ + static_cast<long>(rng_() % 1000000);
    prio_[t] = p;
    return p;
  }
  int choose(long step, const std::vector<int> &en, int cur, bool, bool yield,
             int) override {
    auto it = change_.find(step);
    if (it != change_.end() && cur >= 0) prio_[cur] = it->second;
    int best = -1;
    long bp = -1;
    for (int t : en) {
      if (yield && t == cur && en.size() > 1) continue;
      long p = prio(t);
      if (p > bp) bp = p, best = t;
    }
    return best;
  }
  void end(long steps) override { k_ = std::max(k_, steps); }
  uint64_t seed_;
  int depth_;
  long k_ = 64;
  std::mt19937_64 rng_;
  std::map<int, long> prio_;
  std::map<long, int> change_;
};

// Bounded exhaustive search: depth-first over the choice points, replaying
// the prefix of the previous schedule, with at most `bound` preemptions (a
// switch away from a task that could go on; spinning tasks switch for free).
struct DfsChooser : Chooser {
  explicit DfsChooser(int bound) : bound_(bound) {}
  struct Frame {
    std::vector<int> alts;
    int cur;
    bool costly;  // a switch away from cur counts as a preemption
    int before;   // preemptions before this point
  };
  int choose(long step, const std::vector<int> &en, int cur, bool cur_en,
             bool yield, int def) override {
    size_t s = static_cast<size_t>(step);
    if (s < prefix_.size()) {
      int c = prefix_[s];
      if (std::find(en.begin(), en.end(), c) != en.end()) return c;
      if (diverged < 0) diverged = step;
      return def;
    }
    int before = 0;
    if (!stack_.empty()) {
      const Frame &f = stack_.back();
      before = f.before + (f.costly && prefix_.back() != f.cur ? 1 : 0);
    }
    Frame f{{}, cur, cur_en && !yield, before};
    for (int t : en)
      if (t != def && !(yield && t == cur)) f.alts.push_back(t);
    stack_.push_back(std::move(f));
    prefix_.push_back(def);
    return def;
  }
  bool next() override {
    while (!stack_.empty()) {
      Frame &f = stack_.back();
      while (!f.alts.empty()) {
        int a = f.alts.front();
        f.alts.erase(f.alts.begin());
        int cost = f.before + (f.costly && a != f.cur ? 1 : 0);
        if (cost <= bound_) {
          prefix_.back() = a;
          return true;
        }
      }
      stack_.pop_back();
      prefix_.pop_back();
    }
    return false;
  }
  int bound_;
  std::vector<Frame> stack_;
  std::vector<int> prefix_;
};

struct ReplayChooser : Chooser {
  explicit ReplayChooser(std::map<long, int> dev) : dev_(std::move(dev)) {}
  int choose(long step, const std::vector<int> &en, int, bool, bool,
             int def) override {
    auto it = dev_.find(step);
    if (it != dev_.end() &&
        std::find(en.begin(), en.end(), it->second) != en.end())
      return it->second;
    return def;
  }
  std::map<long, int> dev_;
};

// ---- data races under ThreadSanitizer (the explore-tsan preset) ----

// Tasks run one at a time, but only the explorer makes them do so: to the
// program they run at once on their CPUs. Under ThreadSanitizer the engine
// is therefore invisible: its reads and writes are ignored, and so are its
// hand-overs, which would otherwise order every task after the one before.
// What orders one task's accesses after another's is then only what orders
// them in the kernel (locks, atomics, the CPU a section holds), and two
// plain accesses to one location with nothing between them are reported as
// a race: the schedule fails (see tsan_reports below).
#ifdef UKERN_TSAN
extern "C" {
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
void AnnotateIgnoreSyncBegin(const char *file, int line);
void AnnotateIgnoreSyncEnd(const char *file, int line);
}
#endif

struct EngineScope {
#ifdef UKERN_TSAN
  EngineScope() {
    AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
    AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
    AnnotateIgnoreSyncBegin(__FILE__, __LINE__);
  }
  ~EngineScope() {
    AnnotateIgnoreSyncEnd(__FILE__, __LINE__);
    AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
    AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
  }
#else
  // Not trivial, so that a scope held only for its lifetime is no unused
  // variable.
  EngineScope() {}
  ~EngineScope() {}
#endif
};

// ThreadSanitizer reports so far (every report, in any thread).
std::atomic<long> tsan_reports{0};

// ---- task threads, kept from one schedule to the next ----

// Hands the CPU from one task thread to the next: one post, one wait, and a
// futex call only when the waiter sleeps. The release/acquire pair orders
// the engine's state, which only the running task touches, from one task
// to the next.
class Handoff {
 public:
  void post() {
    if (v_.exchange(1, std::memory_order_release) == 2) uk::futex_wake(&v_, 1);
  }
  void wait() {
    for (;;) {
      uint32_t c = v_.load(std::memory_order_acquire);
      if (c == 1) {
        if (v_.compare_exchange_strong(c, 0, std::memory_order_acquire)) return;
        continue;
      }
      if (c == 0 &&
          !v_.compare_exchange_strong(c, 2, std::memory_order_relaxed))
        continue;
      uk::futex_wait(&v_, 2);
    }
  }

 private:
  std::atomic<uint32_t> v_{0};  // 0 empty, 1 posted, 2 a waiter sleeps
};

// A schedule's tasks run on host threads that the pool keeps between
// schedules: starting and joining a thread per task and schedule would cost
// more than the schedule itself. A worker whose task ended with shim state
// held (a failed schedule) is not reused; one left parked in a stuck schedule
// stays there.
struct Worker {
  std::thread th;
  std::condition_variable cv;
  std::function<bool()> job;  // returns whether the thread can be reused
  bool finished = false;
  bool reusable = true;
};

class WorkerPool {
 public:
  Worker *start(std::function<bool()> job) {
    EngineScope engine;
    std::lock_guard<std::mutex> lk(mu_);
    Worker *w;
    if (!idle_.empty()) {
      w = idle_.back();
      idle_.pop_back();
    } else {
      w = new Worker;
      w->th = std::thread([this, w] { loop(w); });
    }
    w->job = std::move(job);
    w->finished = false;
    w->cv.notify_one();
    return w;
  }

  // Waits until `w` has finished its job and the job's last access to the
  // engine is over, then keeps or retires the thread.
  void finish(Worker *w) {
    EngineScope engine;
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return w->finished; });
    if (w->reusable) {
      idle_.push_back(w);
      return;
    }
    lk.unlock();
    w->th.join();
    delete w;
  }

 private:
  void loop(Worker *w) {
    for (;;) {
      std::function<bool()> job;
      {
        EngineScope engine;
        std::unique_lock<std::mutex> lk(mu_);
        w->cv.wait(lk, [&] { return static_cast<bool>(w->job); });
        job = std::move(w->job);
        w->job = nullptr;
      }
      bool reusable = job();
      {
        EngineScope engine;
        std::lock_guard<std::mutex> lk(mu_);
        w->reusable = reusable;
        w->finished = true;
        done_cv_.notify_all();
      }
      if (!reusable) return;
    }
  }

  std::mutex mu_;
  std::condition_variable done_cv_;
  std::vector<Worker *> idle_;
};

WorkerPool &worker_pool() {
  static WorkerPool *p = new WorkerPool;  // outlives the workers
  return *p;
}

// ---- the engine: one schedule ----

struct Engine;

struct Task {
  Engine *e = nullptr;
  int id = 0;
  int cpu = 0;
  bool is_irq = false;
  bool soft = false;
  std::function<void()> fn;
  struct Worker *worker = nullptr;
  Handoff turn;        // posted when the task is to run
  char ended = 0;      // ThreadSanitizer: where the task last stopped
  bool fired = false;  // irq: delivered (on its CPU's interrupt stack)
  bool done = false;
  // A service (Services): kernel machinery that runs `fn` whenever `ready`
  // holds, any number of times; between runs it is idle.
  bool service = false;
  bool busy = false;   // service: chosen, not yet idle again
  bool leave = false;  // service: the schedule is over, the thread leaves
  std::function<bool()> ready;
  bool blocked = false;
  const void *bword = nullptr;
  uint32_t bmask = 0;
  const char *bwhere = nullptr;
  void *bsite = nullptr;
  std::string name;
  std::vector<const void *> held;  // exclusive locks held, in order taken
};

struct TraceEntry {
  long step;
  int task;
  int cpu;
  const char *where;
  int next;  // task switched to, or -1
  int nframes;
  void *frames[10];
};

thread_local Task *tl_task;

int g_services;  // Services objects alive

struct Engine {
  std::mutex mu;      // lock validation's maps
  Handoff main_turn;  // posted when the schedule ends or gets stuck
  char started = 0;   // ThreadSanitizer: the set-up, before every task
  std::vector<std::unique_ptr<Task>> tasks;
  int nr_normal = 0, nr_irq = 0;
  bool stuck = false;  // failed while tasks were still parked: leak them
  long step = 0;
  long max_steps = 20000;
  Chooser *chooser = nullptr;
  std::vector<std::pair<long, int>> deviations;
  std::vector<std::string> failures;
  bool tracing = false;
  std::vector<TraceEntry> trace;
  std::vector<int> irq_stack[NR_CPUS];
  bool joined = false;
  bool lockdep = true;

  // Lock validation (lockdep's two main checks, per schedule, with each
  // lock instance its own class): `order` holds an edge A -> B for every
  // acquisition of B while A was held, with where it was first seen;
  // `usage` records in which contexts and interrupt states each lock was
  // taken.
  struct Witness {
    int task;
    long step;
  };
  struct Usage {
    Witness in_hardirq{-1, 0}, hardirq_on{-1, 0};
    Witness in_softirq{-1, 0}, softirq_on{-1, 0};
  };
  std::map<std::pair<const void *, const void *>, Witness> order;
  std::map<const void *, Usage> usage;
  std::map<std::pair<const void *, const void *>, bool> reported;

  std::string witness(const Witness &w) const {
    return tasks[w.task]->name + " at step " + std::to_string(w.step);
  }

  // Is `to` reachable from `from` over the recorded order edges?
  bool reaches(const void *from, const void *to) const {
    std::vector<const void *> todo{from};
    std::vector<const void *> seen;
    while (!todo.empty()) {
      const void *l = todo.back();
      todo.pop_back();
      if (l == to) return true;
      if (std::find(seen.begin(), seen.end(), l) != seen.end()) continue;
      seen.push_back(l);
      for (auto it = order.lower_bound({l, nullptr});
           it != order.end() && it->first.first == l; ++it)
        todo.push_back(it->first.second);
    }
    return false;
  }

  static std::string addr(const void *p) {
    char b[32];
    snprintf(b, sizeof(b), "%p", p);
    return b;
  }

  void lock_event(Task *t, const void *lock, int op) {
    std::lock_guard<std::mutex> lk(mu);
    if (op == UK_LOCK_RELEASE) {
      auto it = std::find(t->held.rbegin(), t->held.rend(), lock);
      if (it != t->held.rend()) t->held.erase(std::next(it).base());
      return;
    }
    Witness now{t->id, step};
    if (op == UK_LOCK_ACQUIRE) {
      for (const void *h : t->held) {
        if (h == lock) continue;
        if (!order.count({h, lock}) && reaches(lock, h) &&
            !reported[{h, lock}]) {
          reported[{h, lock}] = true;
          auto back = order.lower_bound({lock, nullptr});
          Witness other = back != order.end() && back->first.first == lock
                              ? back->second
                              : now;
          auto direct = order.find({lock, h});
          if (direct != order.end()) other = direct->second;
          fail("lock-order inversion: " + t->name + " takes lock " +
               addr(lock) + " while holding " + addr(h) + " (step " +
               std::to_string(step) + "), and " + witness(other) +
               " took them (or a chain between them) in the other order");
        }
        order.emplace(std::make_pair(h, lock), now);
      }
    }
    t->held.push_back(lock);
    Usage &u = usage[lock];
    bool irqs_on = !irqs_disabled();
    if (in_hardirq()) {
      if (u.in_hardirq.task < 0) u.in_hardirq = now;
    } else if (irqs_on && u.hardirq_on.task < 0) {
      u.hardirq_on = now;
    }
    if (in_serving_softirq()) {
      if (u.in_softirq.task < 0) u.in_softirq = now;
    } else if (irqs_on && !in_hardirq() && softirq_count() == 0 &&
               u.softirq_on.task < 0) {
      u.softirq_on = now;
    }
    auto inconsistent = [&](const Witness &in, const Witness &on,
                            const char *ctx, const char *state) {
      if (in.task < 0 || on.task < 0 || reported[{lock, lock}]) return;
      reported[{lock, lock}] = true;
      fail(std::string("inconsistent lock state: lock ") + addr(lock) +
           " is taken in " + ctx + " (" + witness(in) + ") and with " + state +
           " enabled (" + witness(on) + "); that " + ctx +
           " can arrive on the holder's CPU and spin on it forever");
    };
    inconsistent(u.in_hardirq, u.hardirq_on, "hardirq", "interrupts");
    inconsistent(u.in_softirq, u.softirq_on, "softirq", "bottom halves");
  }

  static uint32_t load_word(const void *w) {
    return __atomic_load_n(static_cast<const uint32_t *>(w), __ATOMIC_SEQ_CST);
  }

  static bool idle(const Task &t) { return t.service && !t.busy; }

  bool enabled(const Task &t) const {
    if (t.done) return false;
    if (idle(t) && !t.ready()) return false;
    if (t.blocked && (load_word(t.bword) & t.bmask) != 0) return false;
    const auto &st = irq_stack[t.cpu];
    if (!t.is_irq) return st.empty();
    if (t.fired) return !st.empty() && st.back() == t.id;
    uint32_t w = uk::cpu_state[t.cpu].word.load(std::memory_order_relaxed);
    if (t.soft) return !(w & (uk::kCpuIrq | uk::kCpuBh)) && st.empty();
    return !(w & uk::kCpuIrq);
  }

  void fail(std::string why) { failures.push_back(std::move(why)); }

  std::string describe_stuck() {
    std::ostringstream os;
    bool sleeping = false;
    for (auto &t : tasks) {
      if (t->done || !t->blocked) continue;
      if (!strcmp(t->bwhere, "schedule")) sleeping = true;
    }
    os << (sleeping ? "lost wake-up or deadlock: " : "deadlock: ")
       << "no task can run;";
    for (auto &t : tasks) {
      if (t->done || idle(*t)) continue;
      os << " " << t->name;
      if (t->blocked)
        os << (strcmp(t->bwhere, "schedule") ? " waits for a " : " sleeps in ")
           << t->bwhere << (strcmp(t->bwhere, "schedule") ? "" : "()");
      else if (t->is_irq && !t->fired)
        os << " (interrupt never allowed in)";
      else
        os << " cannot run";
      os << ";";
    }
    return os.str();
  }

  // Picks the next task at a scheduling point of `self` (null at the
  // start). Returns -1 when nothing can run: the schedule ended or stuck.
  // choose_next()'s enabled tasks, kept from call to call (no allocation)
  std::vector<int> en;

  int choose_next(Task *self, bool yield) {
    en.clear();
    for (auto &t : tasks)
      if (enabled(*t)) en.push_back(t->id);
    if (en.empty()) {
      for (auto &t : tasks)
        if (!t->done && !idle(*t)) {
          fail(describe_stuck());
          stuck = true;
          break;
        }
      return -1;
    }
    int cur = self ? self->id : -1;
    bool cur_en = self && std::find(en.begin(), en.end(), cur) != en.end();
    int def;
    if (cur_en && !(yield && en.size() > 1)) {
      def = cur;
    } else {
      def = en.front();
      for (int t : en)
        if (t > cur && !(yield && t == cur)) {
          def = t;
          break;
        }
      if (yield && def == cur)
        for (int t : en)
          if (t != cur) {
            def = t;
            break;
          }
    }
    int c = chooser->choose(step, en, cur, cur_en, yield, def);
    if (c != def) deviations.emplace_back(step, c);
    Task &n = *tasks[c];
    if (n.service) n.busy = true;
    if (n.is_irq && !n.fired) {
      n.fired = true;
      irq_stack[n.cpu].push_back(c);
    }
    step++;
    return c;
  }

  // Parks `self` until it runs again. A schedule that failed while others
  // were parked leaves them parked for good (their stacks hold state that
  // cannot be unwound safely); the engine is leaked with them.
  void park(Task *self) { self->turn.wait(); }

  // Passes the CPU to task `next`, or back to the test's thread when no
  // task can run (-1). The caller touches no engine state afterwards.
  void give(int next) {
    if (next >= 0)
      tasks[next]->turn.post();
    else
      main_turn.post();
  }

  void record(Task *self, const char *where, int next) {
    if (!tracing) return;
    TraceEntry e{};
    e.step = step;
    e.task = self->id;
    e.cpu = uk::tls_cpu.cpu >= 0 ? uk::tls_cpu.cpu : self->cpu;
    e.where = where;
    e.next = next == self->id ? -1 : next;
    e.nframes = backtrace(e.frames, 10);
    trace.push_back(e);
  }

  void point(Task *self, const char *where) {
    if (step >= max_steps) {
      fail("livelock: the schedule did not end within " +
           std::to_string(max_steps) + " scheduling points");
      stuck = true;
      give(-1);
      park(self);  // forever
    }
    int n = choose_next(self, where[0] == '~');
    record(self, where, n);
    if (n == self->id) return;
    give(n);
    park(self);
  }

  void block(Task *self, const char *where, const void *word, uint32_t mask) {
    self->blocked = true;
    self->bword = word;
    self->bmask = mask;
    self->bwhere = where;
    int n = choose_next(self, false);
    record(self, where, n);
    if (n != self->id) {
      give(n);
      park(self);
    }
    self->blocked = false;
  }

  // Runs task `t` on a worker; returns whether the worker's thread is left
  // as a new thread would be (no CPU, preemption or interrupt state held)
  // and can run another task.
  bool task_main(Task *t) {
    {
      EngineScope engine;
      park(t);
      tl_task = t;
    }
    uk_tsan_acquire(&started);  // the body's set-up comes first
    if (t->service) return service_main(t);
    if (t->is_irq) {
      if (t->soft)
        uk::run_in_softirq(t->cpu, t->fn);
      else
        uk::run_in_hardirq(t->cpu, t->fn);
    } else {
      uk::pin_thread_to_cpu(t->cpu);
      t->fn();
    }
    bool clean = thread_clean();
    bool reusable = end_thread(clean, !t->is_irq);
    uk_tsan_release(&t->ended);  // join() waits for the task
    EngineScope engine;
    if (!clean)
      fail(t->name +
           " ended with preemption, bottom halves or interrupts "
           "disabled");
    t->done = true;
    if (t->is_irq) irq_stack[t->cpu].pop_back();
    int n = choose_next(t, false);
    record_end(t, "exit", n);
    give(n);
    return reusable;
  }

  // Whether the calling thread holds no CPU, preemption or interrupt state.
  static bool thread_clean() {
    const uk::ThreadCpu &tc = uk::tls_cpu;
    return tc.held == 0 && tc.preempt_count == 0 && !tc.irqs_off;
  }

  // The end of a task's thread: what the thread's exit would do, so that
  // the next task on this thread meets the shim as a new thread does.
  // Returns whether the thread can run another task.
  static bool end_thread(bool clean, bool pinned) {
    const uk::ThreadCpu &tc = uk::tls_cpu;
    if (clean && pinned) uk::pin_thread_to_cpu(-1);
    tl_task = nullptr;  // no scheduling point from here on
    if (clean) uk::task_exit_current();
    return clean && tc.cpu < 0 && tc.pinned < 0 && tc.sticky < 0 &&
           tc.pdepth == 0 && tc.bh_depth == 0 && tc.lock_depth == 0 &&
           !tc.in_irq_ctx;
  }

  // A trace line for a task that ended or went idle, and the next one.
  void record_end(Task *t, const char *where, int next) {
    if (!tracing) return;
    TraceEntry e{};
    e.step = step;
    e.task = t->id;
    e.cpu = t->cpu;
    e.where = where;
    e.next = next;
    trace.push_back(e);
  }

  // A service's thread: runs `fn` each time the service is chosen, in the
  // context `fn` enters itself, and goes idle in between; leaves when the
  // schedule is over. Returns as task_main() does.
  bool service_main(Task *t) {
    if (!t->is_irq) uk::pin_thread_to_cpu(t->cpu);
    while (!t->leave) {
      t->fn();
      bool clean = thread_clean();
      uk_tsan_release(&t->ended);
      EngineScope engine;
      if (!clean)
        fail(t->name +
             " went idle with preemption, bottom halves or interrupts "
             "disabled");
      if (t->is_irq) irq_stack[t->cpu].pop_back();
      t->fired = false;
      t->busy = false;
      int n = choose_next(t, false);
      record_end(t, "idle", n);
      give(n);
      park(t);
    }
    bool reusable = end_thread(thread_clean(), !t->is_irq);
    uk_tsan_release(&t->ended);
    EngineScope engine;
    t->done = true;
    return reusable;
  }

  // Adds the services' tasks (Services), after the test's own.
  void add_services() {
    auto add = [this](std::string name, int cpu, bool is_irq, bool soft,
                      std::function<void()> fn, std::function<bool()> ready) {
      auto t = std::make_unique<Task>();
      t->e = this;
      t->id = static_cast<int>(tasks.size());
      t->cpu = cpu;
      t->is_irq = is_irq;
      t->soft = soft;
      t->service = true;
      t->fn = std::move(fn);
      t->ready = std::move(ready);
      t->name = std::move(name);
      tasks.push_back(std::move(t));
    };
    int ncpu = static_cast<int>(nr_cpu_ids);
    for (int c = 0; c < ncpu; c++) {
      std::string n = std::to_string(c);
      add(
          "ksoftirqd/" + n, c, true, true, [c] { uk::softirq_run_pending(c); },
          [c] { return uk::softirq_pending(c) != 0; });
      // hrtimer/N fires hard hrtimers in hardirq context, timer/N soft
      // hrtimers and timer_lists in softirq context.
      for (bool hard : {true, false})
        add((hard ? "hrtimer/" : "timer/") + n, c, true, !hard,
            [c, hard] { uk::virtual_clock_fire_next(c, hard); },
            [c, hard] {
              uint64_t d;
              return uk::virtual_clock_next(c, hard, &d);
            });
      add(
          "kworker/" + n, c, false, false, [c] { uk::wq_run_one(c); },
          [c] { return uk::wq_has_work(c); });
    }
    add(
        "kworker/u", ncpu - 1, false, false, [] { uk::wq_run_one(-1); },
        [] { return uk::wq_has_work(-1); });
  }

  // Runs the tasks; returns false when the schedule got stuck.
  bool run_tasks() {
    joined = true;
    if (g_services) add_services();
    uk_tsan_release(&started);
    WorkerPool &pool = worker_pool();
    for (auto &t : tasks)
      t->worker = pool.start([this, p = t.get()] { return task_main(p); });
    {
      EngineScope engine;
      give(choose_next(nullptr, false));
      main_turn.wait();
      // Idle services hold nothing: their threads leave, also when the
      // schedule got stuck. A busy one is parked like a task.
      for (auto &t : tasks) {
        if (!idle(*t)) continue;
        t->leave = true;
        t->turn.post();
        pool.finish(t->worker);
        t->worker = nullptr;
      }
    }
    std::vector<Worker *> ended;
    for (auto &t : tasks) {
      uk_tsan_acquire(&t->ended);  // done, or parked for good
      if (t->done && t->worker) ended.push_back(t->worker);
    }
    for (Worker *w : ended) pool.finish(w);
    return !stuck;  // the workers of parked tasks stay parked
  }
};

Engine *g_engine;  // the schedule the body is setting up / running

void hook_point(const char *where) {
  Task *t = tl_task;
  if (t == nullptr) return;
  uk_tsan_release(&t->ended);  // a schedule can end with the task here
  EngineScope engine;
  t->e->point(t, where);
}

void hook_lock(const void *lock, int op) {
  Task *t = tl_task;
  if (t == nullptr || !t->e->lockdep) return;
  EngineScope engine;
  t->e->lock_event(t, lock, op);
}

void hook_block(const char *where, const void *word, uint32_t mask) {
  Task *t = tl_task;
  if (t != nullptr) {
    uk_tsan_release(&t->ended);  // a schedule can end with the task here
    EngineScope engine;
    t->e->block(t, where, word, mask);
    return;
  }
  // A thread outside the explorer (the test's own): plain waiting.
  std::this_thread::yield();
}

struct StuckSchedule {};  // thrown out of join() into the body

// ---- symbolizing traces ----

struct Site {
  std::string func, file;
  int line = 0;
};

std::map<void *, std::vector<Site>> symbolize(const std::vector<void *> &pcs) {
  std::map<void *, std::vector<Site>> out;
  std::map<std::string, std::vector<std::pair<void *, uintptr_t>>> by_obj;
  for (void *pc : pcs) {
    Dl_info info{};
    if (!dladdr(pc, &info) || !info.dli_fname) continue;
    uintptr_t off = reinterpret_cast<uintptr_t>(pc) -
                    reinterpret_cast<uintptr_t>(info.dli_fbase) - 1;
    std::string obj = info.dli_fname;
    if (obj.empty() || obj.find(".so") == std::string::npos) {
      char exe[4096];
      ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
      if (n <= 0) continue;
      exe[n] = 0;
      obj = exe;
    }
    by_obj[obj].emplace_back(pc, off);
  }
  for (auto &[obj, v] : by_obj) {
    std::string cmd = "addr2line -a -C -f -i -e '" + obj + "'";
    char buf[64];
    for (auto &[pc, off] : v) {
      snprintf(buf, sizeof(buf), " 0x%lx", static_cast<unsigned long>(off));
      cmd += buf;
    }
    FILE *f = popen(cmd.c_str(), "r");
    if (!f) continue;
    char line[4096];
    size_t idx = 0;
    std::vector<Site> *cur = nullptr;
    std::string func;
    bool want_func = true;
    while (fgets(line, sizeof(line), f)) {
      std::string s(line);
      if (!s.empty() && s.back() == '\n') s.pop_back();
      if (s.rfind("0x", 0) == 0) {
        cur = idx < v.size() ? &out[v[idx].first] : nullptr;
        idx++;
        want_func = true;
        continue;
      }
      if (want_func) {
        func = s;
        want_func = false;
        continue;
      }
      want_func = true;
      if (!cur) continue;
      Site site;
      site.func = func;
      auto colon = s.rfind(':');
      site.file = s.substr(0, colon);
      if (colon != std::string::npos) site.line = atoi(s.c_str() + colon + 1);
      auto disc = site.file.find(" (discriminator");
      if (disc != std::string::npos) site.file.resize(disc);
      cur->push_back(site);
    }
    pclose(f);
  }
  return out;
}

bool boring(const Site &s) {
  static const char *const skip[] = {"/include/uk/", "/kernel_shim/shim/",
                                     "/tests/explore/lib/", "/usr/", "??"};
  for (const char *k : skip)
    if (s.file.find(k) != std::string::npos || s.file.empty()) return true;
  return false;
}

std::string short_path(const std::string &f) {
  for (const char *root :
       {"/kernel_shim/", "/blk/", "/aio/", "/tests/", "/devices/", "/lib/"}) {
    auto p = f.rfind(root);
    if (p != std::string::npos) return f.substr(p + 1);
  }
  auto p = f.rfind('/');
  return p == std::string::npos ? f : f.substr(p + 1);
}

std::string format_trace(Engine &e) {
  std::vector<void *> pcs;
  for (auto &t : e.trace)
    for (int i = 1; i < t.nframes; i++) pcs.push_back(t.frames[i]);
  auto sym = symbolize(pcs);
  std::ostringstream os;
  os << "  step task cpu  operation           source\n";
  for (auto &t : e.trace) {
    std::string where = "?";
    for (int i = 1; i < t.nframes && where == "?"; i++) {
      auto it = sym.find(t.frames[i]);
      if (it == sym.end()) continue;
      for (auto &s : it->second)
        if (!boring(s)) {
          where = short_path(s.file) + ":" + std::to_string(s.line) + " " +
                  s.func.substr(0, s.func.find('('));
          break;
        }
    }
    char head[96];
    snprintf(head, sizeof(head), "  %4ld %-4s cpu%-2d %-19s ", t.step,
             e.tasks[t.task]->name.c_str(), t.cpu, t.where);
    os << head << (t.nframes ? where : std::string());
    if (t.next >= 0 && t.next != t.task)
      os << "   -> " << e.tasks[t.next]->name;
    else if (t.next < 0 && !strcmp(t.where, "exit"))
      os << "   (end)";
    os << "\n";
  }
  return os.str();
}

// ---- schedule strings ----

std::string encode(const std::vector<std::pair<long, int>> &dev) {
  if (dev.empty()) return "v1:-";
  std::string s = "v1:";
  for (size_t i = 0; i < dev.size(); i++) {
    if (i) s += ",";
    s += std::to_string(dev[i].first) + "." + std::to_string(dev[i].second);
  }
  return s;
}

bool decode(const std::string &s, std::map<long, int> *out) {
  if (s.rfind("v1:", 0) != 0) return false;
  std::string body = s.substr(3);
  if (body == "-") return true;
  std::stringstream ss(body);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto dot = item.find('.');
    if (dot == std::string::npos) return false;
    (*out)[atol(item.c_str())] = atoi(item.c_str() + dot + 1);
  }
  return true;
}

// ---- running schedules ----

struct Outcome {
  bool failed = false;
  std::string message;
  std::vector<std::pair<long, int>> deviations;
  std::string trace;
  long steps = 0;
};

long leak_count() {
  return uk::slab_total_allocated() + uk::kmalloc_nr_allocated() +
         static_cast<long>(uk::percpu_bytes_in_use());
}

bool g_lockdep = true;  // Options::lockdep of the running explore::run()

// With Services: each schedule starts at the same time, and its softirqs
// and work items wait for the services' tasks.
struct ServicesSchedule {
  bool on = g_services > 0;
  ServicesSchedule() {
    if (!on) return;
    uk::virtual_clock_set(uk::kVirtualClockDefaultStart);
    uk::softirq_set_threads(false);
    uk::wq_set_manual(true);
  }
  ~ServicesSchedule() {
    if (!on) return;
    uk::wq_set_manual(false);
    uk::softirq_set_threads(true);
  }
};

Outcome run_one(const std::function<void()> &body, Chooser *ch, long index,
                long max_steps, bool tracing) {
  auto *e = new Engine;
  e->lockdep = g_lockdep;
  e->chooser = ch;
  e->max_steps = max_steps;
  e->tracing = tracing;
  g_engine = e;
  ch->begin(index);
  ch->diverged = -1;
  long warns = __atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED);
  long races = tsan_reports.load(std::memory_order_relaxed);
  long live = leak_count();
  {
    // Host threads outside the explorer (workqueue workers, the RCU
    // thread) read the hooks at any time; installing them races with
    // nothing that matters to a schedule.
    EngineScope engine;
    uk::sched_hook = hook_point;
    uk::sched_block_hook = hook_block;
    uk::lock_hook = hook_lock;
  }
  bool stuck = false;
  try {
    ServicesSchedule services;
    body();
    if (!e->joined) join();
  } catch (StuckSchedule &) {
    stuck = true;
  }
  {
    EngineScope engine;
    uk::sched_hook = nullptr;
    uk::sched_block_hook = nullptr;
    uk::lock_hook = nullptr;
  }
  Outcome o;
  if (__atomic_load_n(&uk::warn_count, __ATOMIC_RELAXED) != warns)
    e->fail("the kernel code WARNed");
  if (tsan_reports.load(std::memory_order_relaxed) != races)
    e->fail("data race: ThreadSanitizer's report is above");
  if (!stuck && e->failures.empty() && leak_count() != live)
    e->fail("leak: " + std::to_string(leak_count() - live) +
            " slab objects or percpu bytes still allocated at the end");
  if (ch->diverged >= 0)
    e->fail("nondeterministic: the replayed prefix diverged at step " +
            std::to_string(ch->diverged) +
            " (set-up or code depends on more than the schedule)");
  o.failed = !e->failures.empty();
  for (auto &f : e->failures) o.message += (o.message.empty() ? "" : "; ") + f;
  o.deviations = e->deviations;
  o.steps = e->step;
  if (tracing) o.trace = format_trace(*e);
  ch->end(e->step);
  g_engine = nullptr;
  if (stuck) {
    // Parked threads keep CPUs and locks: give the CPUs back for the next
    // schedule (only explorer tasks use them during an explore test).
    for (auto &s : uk::cpu_state) {
      s.word.store(0, std::memory_order_relaxed);
      s.has_pending.store(false, std::memory_order_relaxed);
    }
  } else {
    delete e;
  }
  return o;
}

Outcome replay(const std::function<void()> &body,
               const std::vector<std::pair<long, int>> &dev, long max_steps,
               bool tracing) {
  std::map<long, int> m(dev.begin(), dev.end());
  ReplayChooser rc(m);
  return run_one(body, &rc, 0, max_steps, tracing);
}

// Drops deviations (preemptions, interrupt arrivals) one at a time while
// the failure still reproduces.
std::vector<std::pair<long, int>> shrink(const std::function<void()> &body,
                                         std::vector<std::pair<long, int>> dev,
                                         long max_steps) {
  int budget = 400;
  bool progress = true;
  while (progress && budget > 0) {
    progress = false;
    for (size_t i = 0; i < dev.size() && budget > 0; i++) {
      auto trial = dev;
      trial.erase(trial.begin() + static_cast<long>(i));
      budget--;
      Outcome o = replay(body, trial, max_steps, false);
      if (o.failed && o.deviations.size() < dev.size()) {
        dev = o.deviations;
        progress = true;
        i--;  // same position again
      }
    }
  }
  return dev;
}

std::string flag_value(const char *name) {
  // --explore_<name>=value on the command line, else UKERN_EXPLORE_<NAME>.
  std::string flag = std::string("--explore_") + name + "=";
  FILE *f = fopen("/proc/self/cmdline", "r");
  if (f) {
    std::string all;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) all.append(buf, n);
    fclose(f);
    size_t p = 0;
    while (p < all.size()) {
      std::string arg = all.c_str() + p;
      p += arg.size() + 1;
      if (arg.rfind(flag, 0) == 0) return arg.substr(flag.size());
    }
  }
  std::string env = std::string("UKERN_EXPLORE_") + name;
  for (auto &c : env) c = static_cast<char>(toupper(c));
  const char *v = getenv(env.c_str());
  return v ? v : "";
}

}  // namespace

Options options_from_env(Options o) {
  std::string v;
  if (!(v = flag_value("strategy")).empty()) {
    if (v == "random") o.strategy = Strategy::kRandom;
    if (v == "pct") o.strategy = Strategy::kPct;
    if (v == "dfs") o.strategy = Strategy::kDfs;
  }
  if (!(v = flag_value("seed")).empty())
    o.seed = strtoull(v.c_str(), nullptr, 0);
  if (!(v = flag_value("schedules")).empty()) o.max_schedules = atol(v.c_str());
  if (!(v = flag_value("seconds")).empty()) o.max_seconds = atof(v.c_str());
  if (!(v = flag_value("depth")).empty()) o.pct_depth = atoi(v.c_str());
  if (!(v = flag_value("bound")).empty()) o.preemption_bound = atoi(v.c_str());
  if (!(v = flag_value("replay")).empty()) o.replay = v;
  if (!(v = flag_value("trace")).empty()) o.trace = v != "0";
  return o;
}

void spawn(std::function<void()> fn, int cpu) {
  Engine *e = g_engine;
  BUG_ON(!e || e->joined);
  auto t = std::make_unique<Task>();
  t->e = e;
  t->id = static_cast<int>(e->tasks.size());
  t->cpu = cpu >= 0 ? cpu : e->nr_normal % static_cast<int>(nr_cpu_ids);
  t->fn = std::move(fn);
  t->name = "T" + std::to_string(e->nr_normal++);
  e->tasks.push_back(std::move(t));
}

static void add_irq(int cpu, std::function<void()> fn, bool soft) {
  Engine *e = g_engine;
  BUG_ON(!e || e->joined);
  BUG_ON(cpu < 0 || cpu >= static_cast<int>(nr_cpu_ids));
  auto t = std::make_unique<Task>();
  t->e = e;
  t->id = static_cast<int>(e->tasks.size());
  t->cpu = cpu;
  t->is_irq = true;
  t->soft = soft;
  t->fn = std::move(fn);
  t->name = (soft ? "S" : "I") + std::to_string(e->nr_irq++);
  e->tasks.push_back(std::move(t));
}

void irq(int cpu, std::function<void()> fn) {
  add_irq(cpu, std::move(fn), false);
}
void softirq(int cpu, std::function<void()> fn) {
  add_irq(cpu, std::move(fn), true);
}

void join() {
  Engine *e = g_engine;
  BUG_ON(!e || e->joined);
  if (!e->run_tasks()) throw StuckSchedule{};
}

void check(bool ok, const char *what, const char *file, int line) {
  if (ok) return;
  Engine *e = g_engine;
  std::string msg = std::string("check failed: ") + what + " (" +
                    short_path(file) + ":" + std::to_string(line) + ")";
  if (!e) {
    ADD_FAILURE() << msg;
    return;
  }
  std::lock_guard<std::mutex> g(e->mu);
  e->fail(msg);
}

static long g_index;
long schedule_index() { return g_index; }

Services::Services() {
  if (g_services++ == 0) uk::clock_use_virtual();
}

Services::~Services() {
  if (--g_services == 0) uk::clock_use_host();
}

// Schedules are numbered the same on every host: explore runs always see
// this many virtual CPUs.
constexpr unsigned int kExploreCpus = 4;

struct CpuCount {
  unsigned int saved = nr_cpu_ids;
  CpuCount() {
    if (saved != kExploreCpus) uk::set_nr_cpu_ids(kExploreCpus);
  }
  ~CpuCount() {
    if (saved != kExploreCpus) uk::set_nr_cpu_ids(saved);
  }
};

Result run(const std::function<void()> &body, const Options &opts) {
  CpuCount cpus;
  g_lockdep = opts.lockdep;
  Result r;
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
        .count();
  };
  if (!opts.replay.empty()) {
    std::map<long, int> m;
    if (!decode(opts.replay, &m)) {
      r.failed = true;
      r.message = "bad schedule string: " + opts.replay;
      return r;
    }
    std::vector<std::pair<long, int>> dev(m.begin(), m.end());
    g_index = 0;
    Outcome o = replay(body, dev, opts.max_steps, true);
    r.schedules = 1;
    r.failed = o.failed;
    r.found_at = o.failed ? 1 : 0;
    r.message = o.message;
    r.schedule = r.unshrunk = encode(o.deviations);
    r.trace = o.trace;
    r.seconds = elapsed();
    return r;
  }
  std::unique_ptr<Chooser> ch;
  switch (opts.strategy) {
    case Strategy::kPct:
      ch = std::make_unique<PctChooser>(opts.seed, opts.pct_depth);
      break;
    case Strategy::kDfs:
      ch = std::make_unique<DfsChooser>(opts.preemption_bound);
      break;
    default:
      ch = std::make_unique<RandomChooser>(opts.seed);
      break;
  }
  Outcome fail;
  for (long i = 0; i < opts.max_schedules; i++) {
    if (i > 0 && (i & 15) == 0 && elapsed() > opts.max_seconds) break;
    g_index = i;
    Outcome o = run_one(body, ch.get(), i, opts.max_steps, false);
    r.schedules++;
    if (o.failed) {
      fail = o;
      r.failed = true;
      r.found_at = i + 1;
      break;
    }
    if (!ch->next()) {
      r.exhausted = true;
      break;
    }
  }
  r.seconds = elapsed();
  if (!r.failed) return r;
  r.unshrunk = encode(fail.deviations);
  auto dev = fail.deviations;
  if (opts.shrink) dev = shrink(body, dev, opts.max_steps);
  Outcome o = replay(body, dev, opts.max_steps, opts.trace);
  if (o.failed) {
    r.schedule = encode(o.deviations);
    r.message = o.message;
    r.trace = o.trace;
  } else {
    r.schedule = r.unshrunk;
    r.message = fail.message;
  }
  return r;
}

Options test_defaults() {
  Options o;
  o.strategy = Strategy::kDfs;
  o.preemption_bound = 2;
  o.max_schedules = 10000;
  o.max_seconds = 60;
  return o;
}

Options find_options(long budget, Strategy strategy) {
  Options o;
  o.strategy = strategy;
  o.preemption_bound = 2;
  o.max_schedules = budget;
  o.max_seconds = 120;
  o = options_from_env(o);
  o.trace = true;
  return o;
}

void report_found(const char *name, const Result &r, long budget) {
  printf(
      "[explore] %s: %s after %ld schedules (budget %ld) in %.2f s "
      "(%.0f schedules/s)\n",
      name, r.failed ? "found" : "NOT found",
      r.found_at ? r.found_at : r.schedules, budget, r.seconds,
      r.schedules_per_second());
  if (r.failed)
    printf("[explore] %s: %s\n  schedule %s\n%s", name, r.message.c_str(),
           r.schedule.c_str(), r.trace.c_str());
}

void run_test(const char *name, const std::function<void()> &body,
              Options base) {
  Options o = options_from_env(base);
  o.trace = true;
  Result r = run(body, o);
  if (!o.replay.empty()) {
    printf("[explore] %s: replay %s: %s\n%s", name, o.replay.c_str(),
           r.failed ? r.message.c_str() : "passes", r.trace.c_str());
    EXPECT_FALSE(r.failed) << r.message;
    return;
  }
  printf("[explore] %s: %ld schedules in %.2f s (%.0f schedules/s)%s\n", name,
         r.schedules, r.seconds, r.schedules_per_second(),
         r.exhausted ? ", bounded space exhausted" : "");
  EXPECT_FALSE(r.failed) << name << ": " << r.message << "\n  found after "
                         << r.found_at << " schedules; schedule " << r.schedule
                         << " (unshrunk " << r.unshrunk << ")\n  replay: "
                         << "--explore_replay=" << r.schedule << "\n"
                         << r.trace;
}

}  // namespace explore

#ifdef UKERN_TSAN
// ThreadSanitizer's hooks: each report fails the schedule it comes in, and
// a race is reported every time it happens, not only the first, so that
// shrinking and replay meet it again. Tests pass or fail by the explorer's
// verdict, not by the exit status.
extern "C" void __tsan_on_report(const void *) {
  explore::tsan_reports.fetch_add(1, std::memory_order_relaxed);
}

extern "C" const char *__tsan_default_options() {
  return "suppress_equal_stacks=0:suppress_equal_addresses=0:exitcode=0";
}
#endif
