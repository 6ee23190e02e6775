// SPDX-License-Identifier: GPL-2.0-only
//
// kernel/workqueue.c for host threads.
//
// Same objects and rules as the kernel: a workqueue has one pool_workqueue
// (pwq) per CPU (bound) or one (unbound); each pwq feeds a worker_pool. Per
// virtual CPU there are two pools (normal, highpri) whose workers are pinned
// to that CPU and concurrency-managed: schedule() tells the pool when a
// busy worker blocks (wq_worker_sleeping) so another may start, and only one
// worker runs work while nobody blocks. The two unbound pools start a worker
// for every pending item. max_active is per pwq, with the inactive list;
// a work item never runs on two workers of a pool at once, and a re-queue
// while it runs goes to the pool that runs it.
//
// Differences from the kernel, all internal: pools and workers are host
// threads created on demand (at most kMaxWorkersPerPool per pool) and a
// worker that goes idle while kMaxIdleWorkers others are idle exits; flush
// colours are counted per workqueue (atomics) and flushers take turns on a
// mutex instead of the kernel's flusher queue; there is no rescuer
// (WQ_MEM_RECLAIM is accepted and ignored), no freezer and no sysfs.
//
// Upstream: kernel/workqueue.c @ v6.12
#include <pthread.h>

#include <cstdarg>
#include <cstdio>
#include <new>

#include <uk/linux/completion.h>
#include <uk/linux/mutex.h>
#include <uk/linux/rcupdate.h>
#include <uk/linux/sched.h>
#include <uk/linux/smp.h>
#include <uk/linux/spinlock.h>
#include <uk/linux/wait.h>
#include <uk/linux/workqueue.h>

#include "shim/workqueue_internal.h"

enum {
	/* worker flags */
	WORKER_DIE = 1 << 1,
	WORKER_IDLE = 1 << 2,
	WORKER_PREP = 1 << 3,
	WORKER_CPU_INTENSIVE = 1 << 6,
	WORKER_UNBOUND = 1 << 7,
	WORKER_NOT_RUNNING = WORKER_PREP | WORKER_CPU_INTENSIVE | WORKER_UNBOUND,

	NR_STD_WORKER_POOLS = 2,
	NR_WORKER_POOLS = NR_CPUS * NR_STD_WORKER_POOLS + NR_STD_WORKER_POOLS,
	WQ_NAME_LEN = 32,
};

static constexpr int kMaxWorkersPerPool = 64;
static constexpr int kMaxIdleWorkers = 2;

struct worker_pool {
	raw_spinlock_t lock;
	int cpu; /* -1: unbound */
	int id;
	bool highpri;
	struct list_head worklist;
	int nr_workers;
	int nr_idle;
	int nr_creating; /* threads started, not yet registered */
	int nr_running;	 /* concurrency-managed running workers */
	int next_worker_id;
	struct list_head idle_list;
	struct list_head workers; /* every worker, to find executing work */
};

struct worker {
	struct list_head node;	     /* on pool->workers */
	struct list_head idle_entry; /* on pool->idle_list while idle */
	struct work_struct *current_work;
	work_func_t current_func;
	struct pool_workqueue *current_pwq;
	unsigned int current_color;
	struct list_head scheduled; /* works (and linked barriers) to run */
	struct task_struct *task;
	struct worker_pool *pool;
	unsigned int flags;
	int sleeping;
	int id;
};

struct alignas(1 << WORK_STRUCT_PWQ_SHIFT) pool_workqueue {
	struct worker_pool *pool;
	struct workqueue_struct *wq;
	int nr_active;	/* pool lock */
	int max_active; /* pool lock */
	struct list_head inactive_works;
};

struct workqueue_struct {
	unsigned int flags; /* WQ_* and __WQ_*; READ_ONCE outside mutex */
	int saved_max_active;
	struct pool_workqueue *cpu_pwq[NR_CPUS];
	struct pool_workqueue *dfl_pwq;
	struct mutex mutex;	  /* drainers, max_active */
	struct mutex flush_mutex; /* one flusher at a time */
	unsigned int work_color;  /* colour new work gets */
	atomic_t nr_in_flight[WORK_NR_COLORS];
	wait_queue_head_t flush_wait;
	int nr_drainers;
	char name[WQ_NAME_LEN];
};

static struct worker_pool worker_pools[NR_WORKER_POOLS];
static pthread_once_t pools_once = PTHREAD_ONCE_INIT;
static std::atomic<int> nr_live_workers{ 0 };
/* uk::wq_set_manual(): queued work waits for uk::wq_run_one(). */
static std::atomic<bool> wq_manual{ false };

static void wq_atfork_child(void);

static void init_worker_pools(void)
{
	pthread_atfork(nullptr, nullptr, wq_atfork_child);
	for (int i = 0; i < NR_WORKER_POOLS; i++) {
		struct worker_pool *pool = &worker_pools[i];

		raw_spin_lock_init(&pool->lock);
		pool->id = i;
		pool->cpu = i < NR_CPUS * NR_STD_WORKER_POOLS ? i / NR_STD_WORKER_POOLS : -1;
		pool->highpri = i % NR_STD_WORKER_POOLS;
		INIT_LIST_HEAD(&pool->worklist);
		INIT_LIST_HEAD(&pool->idle_list);
		INIT_LIST_HEAD(&pool->workers);
	}
}

/*
 * In the child of a fork() only the forking thread runs: the parent's
 * workers are not there. Each pool forgets them (their structs stay
 * behind) and starts a worker of its own when work is next queued to it.
 * A work item a worker of the parent was running at the fork does not
 * finish in the child.
 */
static void wq_atfork_child(void)
{
	for (int i = 0; i < NR_WORKER_POOLS; i++) {
		struct worker_pool *pool = &worker_pools[i];

		raw_spin_lock_init(&pool->lock);
		pool->nr_workers = 0;
		pool->nr_idle = 0;
		pool->nr_creating = 0;
		pool->nr_running = 0;
		INIT_LIST_HEAD(&pool->idle_list);
		INIT_LIST_HEAD(&pool->workers);
	}
	nr_live_workers.store(0, std::memory_order_relaxed);
}

static struct worker_pool *cpu_pool(int cpu, bool highpri)
{
	return &worker_pools[cpu * NR_STD_WORKER_POOLS + highpri];
}

static struct worker_pool *unbound_pool(bool highpri)
{
	return &worker_pools[NR_CPUS * NR_STD_WORKER_POOLS + highpri];
}

/* ---- the work data word ---- */

static inline unsigned long work_data(struct work_struct *work)
{
	return (unsigned long)atomic_long_read(&work->data);
}

static inline void set_work_data(struct work_struct *work, unsigned long data)
{
	WARN_ON_ONCE(!work_pending(work));
	atomic_long_set(&work->data, (long)data);
}

static void set_work_pwq(struct work_struct *work, struct pool_workqueue *pwq,
			 unsigned long extra_flags)
{
	set_work_data(work,
		      (unsigned long)pwq | WORK_STRUCT_PENDING | WORK_STRUCT_PWQ | extra_flags);
}

static void set_work_pool_and_keep_pending(struct work_struct *work, int pool_id)
{
	set_work_data(work, ((unsigned long)pool_id << WORK_OFFQ_POOL_SHIFT) | WORK_STRUCT_PENDING);
}

static void set_work_pool_and_clear_pending(struct work_struct *work, int pool_id)
{
	/*
	 * Release: everything done to the item before this store (dequeue,
	 * accounting) is seen by whoever sets PENDING again; the full barrier
	 * after it orders the PENDING clear before the work function's loads,
	 * pairing with the fully ordered test_and_set_bit() in queue_work_on()
	 * so that a queuer either sees PENDING set or the function sees its
	 * updates.
	 */
	atomic_long_set_release(&work->data,
				(long)((unsigned long)pool_id << WORK_OFFQ_POOL_SHIFT));
	smp_mb();
}

static void clear_work_data(struct work_struct *work)
{
	/* release pairs with the acquire of a later test_and_set_bit() */
	atomic_long_set_release(&work->data, (long)WORK_STRUCT_NO_POOL);
}

static struct pool_workqueue *get_work_pwq(struct work_struct *work)
{
	unsigned long data = work_data(work);

	if (data & WORK_STRUCT_PWQ)
		return (struct pool_workqueue *)(data & WORK_STRUCT_WQ_DATA_MASK);
	return nullptr;
}

static struct worker_pool *get_work_pool(struct work_struct *work)
{
	unsigned long data = work_data(work);
	unsigned long pool_id;

	if (data & WORK_STRUCT_PWQ)
		return ((struct pool_workqueue *)(data & WORK_STRUCT_WQ_DATA_MASK))->pool;
	pool_id = data >> WORK_OFFQ_POOL_SHIFT;
	if (pool_id >= NR_WORKER_POOLS)
		return nullptr;
	return &worker_pools[pool_id];
}

static int get_work_pool_id(struct work_struct *work)
{
	unsigned long data = work_data(work);

	if (data & WORK_STRUCT_PWQ)
		return ((struct pool_workqueue *)(data & WORK_STRUCT_WQ_DATA_MASK))->pool->id;
	return (int)(data >> WORK_OFFQ_POOL_SHIFT);
}

static bool work_is_canceling(struct work_struct *work)
{
	unsigned long data = work_data(work);

	return !(data & WORK_STRUCT_PWQ) && (data & WORK_OFFQ_CANCELING);
}

static inline int get_work_color(unsigned long data)
{
	return (data >> WORK_STRUCT_COLOR_SHIFT) & ((1 << WORK_STRUCT_COLOR_BITS) - 1);
}

static inline unsigned long work_color_to_flags(int color)
{
	return (unsigned long)color << WORK_STRUCT_COLOR_SHIFT;
}

static inline int work_next_color(int color)
{
	return (color + 1) % WORK_NR_COLORS;
}

/* ---- pool state ---- */

static bool need_more_worker(struct worker_pool *pool)
{
	return !list_empty(&pool->worklist) && !pool->nr_running;
}

static bool keep_working(struct worker_pool *pool)
{
	return !list_empty(&pool->worklist) && pool->nr_running <= 1;
}

static void worker_set_flags(struct worker *worker, unsigned int flags)
{
	struct worker_pool *pool = worker->pool;

	lockdep_assert_held(&pool->lock);
	if ((flags & WORKER_NOT_RUNNING) && !(worker->flags & WORKER_NOT_RUNNING))
		pool->nr_running--;
	worker->flags |= flags;
}

static void worker_clr_flags(struct worker *worker, unsigned int flags)
{
	struct worker_pool *pool = worker->pool;
	unsigned int oflags = worker->flags;

	lockdep_assert_held(&pool->lock);
	worker->flags &= ~flags;
	if ((flags & WORKER_NOT_RUNNING) && (oflags & WORKER_NOT_RUNNING))
		if (!(worker->flags & WORKER_NOT_RUNNING))
			pool->nr_running++;
}

static void *worker_thread(void *arg);

/*
 * Wake an idle worker if the pool needs one. Returns true when there is
 * none and the caller must start a thread with create_worker() once it has
 * dropped the pool lock (threads are not created under a spinlock).
 */
static bool kick_pool(struct worker_pool *pool)
{
	struct worker *worker;

	lockdep_assert_held(&pool->lock);
	if (!need_more_worker(pool))
		return false;
	if (wq_manual.load(std::memory_order_relaxed))
		return false;
	worker = list_first_entry_or_null(&pool->idle_list, struct worker, idle_entry);
	if (worker) {
		wake_up_process(worker->task);
		return false;
	}
	if (pool->nr_creating || pool->nr_workers >= kMaxWorkersPerPool)
		return false;
	pool->nr_creating++;
	return true;
}

static void create_worker(struct worker_pool *pool)
{
	struct worker *worker = new struct worker();
	pthread_attr_t attr;
	pthread_t thr;
	int err;

	INIT_LIST_HEAD(&worker->node);
	INIT_LIST_HEAD(&worker->idle_entry);
	INIT_LIST_HEAD(&worker->scheduled);
	worker->pool = pool;
	worker->flags = WORKER_PREP | (pool->cpu < 0 ? WORKER_UNBOUND : 0);
	worker->current_color = INT_MAX;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&thr, &attr, worker_thread, worker);
	pthread_attr_destroy(&attr);
	if (err) {
		pr_err("workqueue: failed to create a worker thread: %d\n", err);
		raw_spin_lock_irq(&pool->lock);
		pool->nr_creating--;
		raw_spin_unlock_irq(&pool->lock);
		delete worker;
	}
}

static void worker_enter_idle(struct worker *worker)
{
	struct worker_pool *pool = worker->pool;

	worker->flags |= WORKER_IDLE;
	pool->nr_idle++;
	list_add(&worker->idle_entry, &pool->idle_list);
}

static void worker_leave_idle(struct worker *worker)
{
	struct worker_pool *pool = worker->pool;

	if (!(worker->flags & WORKER_IDLE))
		return;
	worker->flags &= ~WORKER_IDLE;
	pool->nr_idle--;
	list_del_init(&worker->idle_entry);
}

static struct worker *find_worker_executing_work(struct worker_pool *pool, struct work_struct *work)
{
	struct worker *worker;

	list_for_each_entry (worker, &pool->workers, node)
		if (worker->current_work == work && worker->current_func == work->func)
			return worker;
	return nullptr;
}

/* Move @work and the works linked behind it (flush barriers) to @head. */
static void move_linked_works(struct work_struct *work, struct list_head *head,
			      struct work_struct **nextp)
{
	struct work_struct *n;

	for (;;) {
		n = list_entry(work->entry.next, struct work_struct, entry);
		list_move_tail(&work->entry, head);
		if (!(work_data(work) & WORK_STRUCT_LINKED))
			break;
		work = n;
	}
	if (nextp)
		*nextp = n;
}

/* Returns true if @worker got @work; else it went to the worker running it. */
static bool assign_work(struct work_struct *work, struct worker *worker, struct work_struct **nextp)
{
	struct worker_pool *pool = worker->pool;
	struct worker *collision;

	lockdep_assert_held(&pool->lock);
	collision = find_worker_executing_work(pool, work);
	if (unlikely(collision)) {
		move_linked_works(work, &collision->scheduled, nextp);
		return false;
	}
	move_linked_works(work, &worker->scheduled, nextp);
	return true;
}

static void pwq_activate_work(struct pool_workqueue *pwq, struct work_struct *work)
{
	clear_bit(WORK_STRUCT_INACTIVE_BIT, work_data_bits(work));
	pwq->nr_active++;
	move_linked_works(work, &pwq->pool->worklist, nullptr);
}

static bool pwq_activate_first_inactive(struct pool_workqueue *pwq)
{
	struct work_struct *work =
		list_first_entry_or_null(&pwq->inactive_works, struct work_struct, entry);

	if (!work || pwq->nr_active >= pwq->max_active)
		return false;
	pwq_activate_work(pwq, work);
	return kick_pool(pwq->pool);
}

/*
 * A work item left the pwq (ran or was stolen). Returns true if the caller
 * must create a worker after unlocking.
 */
static bool pwq_dec_nr_in_flight(struct pool_workqueue *pwq, unsigned long work_data)
{
	int color = get_work_color(work_data);
	bool create = false;

	if (!(work_data & WORK_STRUCT_INACTIVE)) {
		pwq->nr_active--;
		create = pwq_activate_first_inactive(pwq);
	}
	if (color == WORK_NO_COLOR)
		return create;
	/* Fully ordered: the item's effects are visible before a flusher sees
	 * the count drop; the barrier before waitqueue_active() pairs with
	 * set_current_state() in the flusher's wait_event(). */
	if (atomic_dec_and_test(&pwq->wq->nr_in_flight[color]) &&
	    waitqueue_active(&pwq->wq->flush_wait))
		wake_up_all(&pwq->wq->flush_wait);
	return create;
}

static void process_one_work(struct worker *worker, struct work_struct *work)
{
	struct pool_workqueue *pwq = get_work_pwq(work);
	struct worker_pool *pool = worker->pool;
	unsigned long data = work_data(work);
	bool cpu_intensive = READ_ONCE(pwq->wq->flags) & WQ_CPU_INTENSIVE;
	bool create;
	int pc;

	worker->current_work = work;
	worker->current_func = work->func;
	worker->current_pwq = pwq;
	worker->current_color = get_work_color(data);
	list_del_init(&work->entry);

	if (unlikely(cpu_intensive))
		worker_set_flags(worker, WORKER_CPU_INTENSIVE);
	/* unbound pools (and CPU-intensive items) start a worker per item */
	create = kick_pool(pool);

	set_work_pool_and_clear_pending(work, pool->id);
	raw_spin_unlock_irq(&pool->lock);
	if (create)
		create_worker(pool);

	pc = preempt_count();
	worker->current_func(work);

	if (unlikely(preempt_count() != pc || irqs_disabled())) {
		pr_err("BUG: workqueue leaked atomic, lock or RCU: %s/%d, last function %p\n",
		       worker->task->comm, worker->task->pid, (void *)worker->current_func);
		WARN_ON(1);
	}

	raw_spin_lock_irq(&pool->lock);
	if (unlikely(cpu_intensive))
		worker_clr_flags(worker, WORKER_CPU_INTENSIVE);
	worker->current_work = nullptr;
	worker->current_func = nullptr;
	worker->current_pwq = nullptr;
	worker->current_color = INT_MAX;
	if (pwq_dec_nr_in_flight(pwq, data)) {
		raw_spin_unlock_irq(&pool->lock);
		create_worker(pool);
		raw_spin_lock_irq(&pool->lock);
	}
}

static void process_scheduled_works(struct worker *worker)
{
	struct work_struct *work;

	while ((work = list_first_entry_or_null(&worker->scheduled, struct work_struct, entry)))
		process_one_work(worker, work);
}

static const char *pool_tag(struct worker_pool *pool)
{
	return pool->highpri ? "H" : "";
}

static void *worker_thread(void *arg)
{
	struct worker *worker = static_cast<struct worker *>(arg);
	struct worker_pool *pool = worker->pool;
	struct task_struct *task;
	char name[64];
	bool create;

	if (pool->cpu >= 0)
		uk::pin_thread_to_cpu(pool->cpu);
	task = get_current();
	task->flags |= PF_WQ_WORKER | PF_KTHREAD;
	task->uk_worker = worker;
	worker->task = task;

	raw_spin_lock_irq(&pool->lock);
	worker->id = pool->next_worker_id++;
	pool->nr_creating--;
	pool->nr_workers++;
	list_add_tail(&worker->node, &pool->workers);
	raw_spin_unlock_irq(&pool->lock);
	nr_live_workers.fetch_add(1, std::memory_order_relaxed);

	if (pool->cpu >= 0)
		snprintf(name, sizeof(name), "kworker/%d:%d%s", pool->cpu, worker->id,
			 pool_tag(pool));
	else
		snprintf(name, sizeof(name), "kworker/u:%d%s", worker->id, pool_tag(pool));
	name[TASK_COMM_LEN - 1] = '\0'; /* comm and pthread names: 15 chars */
	set_task_comm(task, name);
	pthread_setname_np(pthread_self(), name);

	raw_spin_lock_irq(&pool->lock);
	for (;;) {
		worker_leave_idle(worker);

		if (need_more_worker(pool)) {
			/* this worker runs work: it counts as running */
			worker_clr_flags(worker, WORKER_PREP);
			do {
				struct work_struct *work = list_first_entry(
					&pool->worklist, struct work_struct, entry);

				if (assign_work(work, worker, nullptr))
					process_scheduled_works(worker);
			} while (keep_working(pool));
			worker_set_flags(worker, WORKER_PREP);
		}

		if (pool->nr_idle >= kMaxIdleWorkers)
			break;
		worker_enter_idle(worker);
		/* Under the pool lock that kick_pool() takes before waking us. */
		__set_current_state(TASK_IDLE);
		raw_spin_unlock_irq(&pool->lock);
		schedule();
		raw_spin_lock_irq(&pool->lock);
	}

	/* Enough idle workers: this one exits. */
	list_del_init(&worker->node);
	pool->nr_workers--;
	create = kick_pool(pool);
	raw_spin_unlock_irq(&pool->lock);
	if (create)
		create_worker(pool);
	task->uk_worker = nullptr;
	task->flags &= ~PF_WQ_WORKER;
	nr_live_workers.fetch_sub(1, std::memory_order_relaxed);
	delete worker;
	return nullptr;
}

/* Called from schedule() when a worker is about to block. */
void wq_worker_sleeping(struct task_struct *task)
{
	struct worker *worker = task->uk_worker;
	struct worker_pool *pool;
	bool create = false;

	if (!worker || (worker->flags & WORKER_NOT_RUNNING))
		return;
	if (WARN_ON_ONCE(worker->sleeping))
		return;
	pool = worker->pool;
	worker->sleeping = 1;
	raw_spin_lock_irq(&pool->lock);
	if (!(worker->flags & WORKER_NOT_RUNNING)) {
		pool->nr_running--;
		create = kick_pool(pool);
	}
	raw_spin_unlock_irq(&pool->lock);
	if (create)
		create_worker(pool);
}

/* Called from schedule() when a worker that blocked runs again. */
void wq_worker_running(struct task_struct *task)
{
	struct worker *worker = task->uk_worker;
	struct worker_pool *pool;

	if (!worker || !worker->sleeping)
		return;
	pool = worker->pool;
	raw_spin_lock_irq(&pool->lock);
	if (!(worker->flags & WORKER_NOT_RUNNING))
		pool->nr_running++;
	raw_spin_unlock_irq(&pool->lock);
	worker->sleeping = 0;
}

static struct worker *current_wq_worker(void)
{
	struct task_struct *p = get_current();

	if (in_task() && (p->flags & PF_WQ_WORKER))
		return p->uk_worker;
	return nullptr;
}

static bool is_chained_work(struct workqueue_struct *wq)
{
	struct worker *worker = current_wq_worker();

	return worker && worker->current_pwq && worker->current_pwq->wq == wq;
}

struct work_struct *current_work(void)
{
	struct worker *worker = current_wq_worker();

	return worker ? worker->current_work : nullptr;
}

bool current_is_workqueue_rescuer(void)
{
	return false;
}

/* ---- queueing ---- */

static void insert_work(struct pool_workqueue *pwq, struct work_struct *work,
			struct list_head *head, unsigned long extra_flags)
{
	set_work_pwq(work, pwq, extra_flags);
	list_add_tail(&work->entry, head);
}

/* Caller has set PENDING and disabled interrupts. */
static void __queue_work(int cpu, struct workqueue_struct *wq, struct work_struct *work)
{
	struct pool_workqueue *pwq;
	struct worker_pool *last_pool, *pool;
	unsigned int req_cpu = cpu;
	unsigned long work_flags;
	unsigned int color;
	bool create = false;

	lockdep_assert_irqs_disabled();

	if (unlikely(READ_ONCE(wq->flags) & (__WQ_DESTROYING | __WQ_DRAINING)) &&
	    WARN_ON_ONCE(!is_chained_work(wq)))
		return;

	if (READ_ONCE(wq->flags) & WQ_UNBOUND) {
		pwq = wq->dfl_pwq;
	} else {
		if (req_cpu == WORK_CPU_UNBOUND)
			cpu = raw_smp_processor_id();
		if (WARN_ON_ONCE(cpu < 0 || (unsigned int)cpu >= nr_cpu_ids))
			cpu = raw_smp_processor_id();
		pwq = wq->cpu_pwq[cpu];
	}
	pool = pwq->pool;

	/* Still running on another pool of this wq: go there (non-reentrancy). */
	last_pool = get_work_pool(work);
	if (last_pool && last_pool != pool) {
		struct worker *worker;

		raw_spin_lock(&last_pool->lock);
		worker = find_worker_executing_work(last_pool, work);
		if (worker && worker->current_pwq->wq == wq) {
			pwq = worker->current_pwq;
			pool = pwq->pool;
		} else {
			raw_spin_unlock(&last_pool->lock);
			raw_spin_lock(&pool->lock);
		}
	} else {
		raw_spin_lock(&pool->lock);
	}

	if (WARN_ON(!list_empty(&work->entry))) {
		raw_spin_unlock(&pool->lock);
		return;
	}

	color = READ_ONCE(wq->work_color);
	atomic_inc(&wq->nr_in_flight[color]);
	work_flags = work_color_to_flags(color);

	if (list_empty(&pwq->inactive_works) && pwq->nr_active < pwq->max_active) {
		pwq->nr_active++;
		insert_work(pwq, work, &pool->worklist, work_flags);
		create = kick_pool(pool);
	} else {
		insert_work(pwq, work, &pwq->inactive_works, work_flags | WORK_STRUCT_INACTIVE);
	}
	raw_spin_unlock(&pool->lock);
	if (create)
		create_worker(pool);
}

bool queue_work_on(int cpu, struct workqueue_struct *wq, struct work_struct *work)
{
	bool ret = false;
	unsigned long flags;

	local_irq_save(flags);
	/* fully ordered; pairs with set_work_pool_and_clear_pending() */
	if (!test_and_set_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work))) {
		__queue_work(cpu, wq, work);
		ret = true;
	}
	local_irq_restore(flags);
	return ret;
}

bool queue_work_node(int node, struct workqueue_struct *wq, struct work_struct *work)
{
	(void)node;
	return queue_work_on(WORK_CPU_UNBOUND, wq, work);
}

void delayed_work_timer_fn(struct timer_list *t)
{
	struct delayed_work *dwork = from_timer(dwork, t, timer);
	unsigned long flags;

	local_irq_save(flags);
	__queue_work(dwork->cpu, dwork->wq, &dwork->work);
	local_irq_restore(flags);
}

static void __queue_delayed_work(int cpu, struct workqueue_struct *wq, struct delayed_work *dwork,
				 unsigned long delay)
{
	struct timer_list *timer = &dwork->timer;
	struct work_struct *work = &dwork->work;

	WARN_ON_ONCE(timer->function != delayed_work_timer_fn);
	WARN_ON_ONCE(timer_pending(timer));
	WARN_ON_ONCE(!list_empty(&work->entry));

	if (!delay) {
		__queue_work(cpu, wq, &dwork->work);
		return;
	}
	dwork->wq = wq;
	dwork->cpu = cpu;
	timer->expires = jiffies + delay;
	if (cpu == WORK_CPU_UNBOUND)
		add_timer(timer);
	else
		add_timer_on(timer, cpu);
}

bool queue_delayed_work_on(int cpu, struct workqueue_struct *wq, struct delayed_work *dwork,
			   unsigned long delay)
{
	struct work_struct *work = &dwork->work;
	bool ret = false;
	unsigned long flags;

	local_irq_save(flags);
	if (!test_and_set_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work))) {
		__queue_delayed_work(cpu, wq, dwork, delay);
		ret = true;
	}
	local_irq_restore(flags);
	return ret;
}

/*
 * Take PENDING away from whoever holds it: 1 if the item was queued (or its
 * timer armed) and is now ours, 0 if it was idle and is now ours, -EAGAIN if
 * it is in transit (retry), -ENOENT if someone is canceling it. On 0 or 1
 * interrupts stay disabled (*flags to restore).
 */
static int try_to_grab_pending(struct work_struct *work, bool is_dwork, unsigned long *flags)
{
	struct worker_pool *pool;
	struct pool_workqueue *pwq;

	local_irq_save(*flags);

	if (is_dwork) {
		struct delayed_work *dwork = to_delayed_work(work);

		if (likely(del_timer(&dwork->timer)))
			return 1;
	}

	if (!test_and_set_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work)))
		return 0;

	pool = get_work_pool(work);
	if (!pool)
		goto fail;

	raw_spin_lock(&pool->lock);
	pwq = get_work_pwq(work);
	if (pwq && pwq->pool == pool) {
		unsigned long data = work_data(work);
		bool create;

		list_del_init(&work->entry);
		create = pwq_dec_nr_in_flight(pwq, data);
		set_work_pool_and_keep_pending(work, pool->id);
		raw_spin_unlock(&pool->lock);
		if (create)
			create_worker(pool);
		return 1;
	}
	raw_spin_unlock(&pool->lock);
fail:
	local_irq_restore(*flags);
	if (work_is_canceling(work))
		return -ENOENT;
	cpu_relax();
	return -EAGAIN;
}

bool mod_delayed_work_on(int cpu, struct workqueue_struct *wq, struct delayed_work *dwork,
			 unsigned long delay)
{
	unsigned long flags;
	int ret;

	do {
		ret = try_to_grab_pending(&dwork->work, true, &flags);
	} while (unlikely(ret == -EAGAIN));

	if (likely(ret >= 0)) {
		__queue_delayed_work(cpu, wq, dwork, delay);
		local_irq_restore(flags);
	}
	/* -ENOENT (being canceled) reads as "was pending" */
	return ret != 0;
}

static void rcu_work_rcufn(struct rcu_head *rcu)
{
	struct rcu_work *rwork = container_of(rcu, struct rcu_work, rcu);
	unsigned long flags;

	local_irq_save(flags);
	__queue_work(WORK_CPU_UNBOUND, rwork->wq, &rwork->work);
	local_irq_restore(flags);
}

bool queue_rcu_work(struct workqueue_struct *wq, struct rcu_work *rwork)
{
	struct work_struct *work = &rwork->work;

	if (!test_and_set_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(work))) {
		rwork->wq = wq;
		call_rcu(&rwork->rcu, rcu_work_rcufn);
		return true;
	}
	return false;
}

/* ---- flushing and canceling ---- */

struct wq_barrier {
	struct work_struct work;
	struct completion done;
	struct task_struct *task;
};

static void wq_barrier_func(struct work_struct *work)
{
	struct wq_barrier *barr = container_of(work, struct wq_barrier, work);

	complete(&barr->done);
}

/*
 * Queue @barr to run right after @target: first in the executing worker's
 * scheduled list, or linked behind @target where it waits. Barriers count
 * neither towards max_active (INACTIVE) nor towards flush colours.
 */
static void insert_wq_barrier(struct pool_workqueue *pwq, struct wq_barrier *barr,
			      struct work_struct *target, struct worker *worker)
{
	unsigned long work_flags = WORK_STRUCT_INACTIVE | work_color_to_flags(WORK_NO_COLOR);
	struct list_head *head;

	INIT_WORK_ONSTACK(&barr->work, wq_barrier_func);
	set_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(&barr->work));
	init_completion(&barr->done);
	barr->task = get_current();

	if (worker) {
		head = worker->scheduled.next;
	} else {
		unsigned long *bits = work_data_bits(target);

		head = target->entry.next;
		work_flags |= READ_ONCE(*bits) & WORK_STRUCT_LINKED;
		set_bit(WORK_STRUCT_LINKED_BIT, bits);
	}
	insert_work(pwq, &barr->work, head, work_flags);
}

static bool start_flush_work(struct work_struct *work, struct wq_barrier *barr)
{
	struct worker *worker = nullptr;
	struct worker_pool *pool;
	struct pool_workqueue *pwq;

	might_sleep();
	pool = get_work_pool(work);
	if (!pool)
		return false;

	raw_spin_lock_irq(&pool->lock);
	pwq = get_work_pwq(work);
	if (pwq) {
		if (unlikely(pwq->pool != pool))
			goto already_gone;
	} else {
		worker = find_worker_executing_work(pool, work);
		if (!worker)
			goto already_gone;
		pwq = worker->current_pwq;
	}
	insert_wq_barrier(pwq, barr, work, worker);
	raw_spin_unlock_irq(&pool->lock);
	return true;
already_gone:
	raw_spin_unlock_irq(&pool->lock);
	return false;
}

static bool __flush_work(struct work_struct *work)
{
	struct wq_barrier barr;

	if (WARN_ON(!work->func))
		return false;
	if (start_flush_work(work, &barr)) {
		wait_for_completion(&barr.done);
		return true;
	}
	return false;
}

bool flush_work(struct work_struct *work)
{
	return __flush_work(work);
}

bool flush_delayed_work(struct delayed_work *dwork)
{
	unsigned long flags;

	/* del_timer_sync(): if the timer was armed it will not fire; queue now */
	if (del_timer_sync(&dwork->timer)) {
		local_irq_save(flags);
		__queue_work(dwork->cpu, dwork->wq, &dwork->work);
		local_irq_restore(flags);
	}
	return flush_work(&dwork->work);
}

bool flush_rcu_work(struct rcu_work *rwork)
{
	if (test_bit(WORK_STRUCT_PENDING_BIT, work_data_bits(&rwork->work))) {
		rcu_barrier();
		flush_work(&rwork->work);
		return true;
	}
	return flush_work(&rwork->work);
}

static bool __cancel_work(struct work_struct *work, bool is_dwork)
{
	unsigned long flags;
	int ret;

	do {
		ret = try_to_grab_pending(work, is_dwork, &flags);
	} while (unlikely(ret == -EAGAIN));

	if (unlikely(ret < 0))
		return false;

	set_work_pool_and_clear_pending(work, get_work_pool_id(work));
	local_irq_restore(flags);
	return ret;
}

static bool __cancel_work_sync(struct work_struct *work, bool is_dwork)
{
	unsigned long flags;
	int ret;

	might_sleep();
	for (;;) {
		ret = try_to_grab_pending(work, is_dwork, &flags);
		if (ret >= 0)
			break;
		/* -ENOENT: another task cancels it; wait for it to finish */
		if (ret == -ENOENT)
			cond_resched();
	}

	/* PENDING stays set while we wait, so queueing attempts fail. */
	set_work_data(work, ((unsigned long)get_work_pool_id(work) << WORK_OFFQ_POOL_SHIFT) |
				    WORK_OFFQ_CANCELING | WORK_STRUCT_PENDING);
	local_irq_restore(flags);

	__flush_work(work);

	clear_work_data(work);
	return ret;
}

bool cancel_work(struct work_struct *work)
{
	return __cancel_work(work, false);
}

bool cancel_work_sync(struct work_struct *work)
{
	return __cancel_work_sync(work, false);
}

bool cancel_delayed_work(struct delayed_work *dwork)
{
	return __cancel_work(&dwork->work, true);
}

bool cancel_delayed_work_sync(struct delayed_work *dwork)
{
	return __cancel_work_sync(&dwork->work, true);
}

/*
 * Wait for every work item queued before the call. New items get the next
 * colour; we wait for the count of the old colour to drain.
 */
void __flush_workqueue(struct workqueue_struct *wq)
{
	unsigned int color;

	might_sleep();
	mutex_lock(&wq->flush_mutex);
	color = wq->work_color;
	WRITE_ONCE(wq->work_color, (unsigned int)work_next_color(color));
	/* acquire: pairs with the fully ordered decrement in
	 * pwq_dec_nr_in_flight(); the items' effects are visible on return */
	wait_event(wq->flush_wait, atomic_read_acquire(&wq->nr_in_flight[color]) == 0);
	mutex_unlock(&wq->flush_mutex);
}

static bool wq_is_empty(struct workqueue_struct *wq)
{
	for (int c = 0; c < WORK_NR_COLORS; c++)
		if (atomic_read_acquire(&wq->nr_in_flight[c]))
			return false;
	return true;
}

void drain_workqueue(struct workqueue_struct *wq)
{
	unsigned int flush_cnt = 0;

	mutex_lock(&wq->mutex);
	if (!wq->nr_drainers++)
		WRITE_ONCE(wq->flags, wq->flags | __WQ_DRAINING);
	mutex_unlock(&wq->mutex);

	for (;;) {
		__flush_workqueue(wq);
		if (wq_is_empty(wq))
			break;
		if (++flush_cnt == 10 || (flush_cnt % 100 == 0 && flush_cnt <= 1000))
			pr_warn("workqueue %s: %s() isn't complete after %u tries\n", wq->name,
				__func__, flush_cnt);
	}

	mutex_lock(&wq->mutex);
	if (!--wq->nr_drainers)
		WRITE_ONCE(wq->flags, wq->flags & ~__WQ_DRAINING);
	mutex_unlock(&wq->mutex);
}

/* ---- creation and destruction ---- */

static struct pool_workqueue *alloc_pwq(struct workqueue_struct *wq, struct worker_pool *pool)
{
	struct pool_workqueue *pwq = new pool_workqueue();

	pwq->pool = pool;
	pwq->wq = wq;
	pwq->max_active = wq->saved_max_active;
	INIT_LIST_HEAD(&pwq->inactive_works);
	return pwq;
}

static int wq_clamp_max_active(int max_active, unsigned int flags, const char *name)
{
	(void)flags;
	if (max_active < 1 || max_active > WQ_MAX_ACTIVE)
		pr_warn("workqueue: max_active %d requested for %s is out of range, clamping "
			"between %d and %d\n",
			max_active, name, 1, (int)WQ_MAX_ACTIVE);
	return clamp_val(max_active, 1, (int)WQ_MAX_ACTIVE);
}

struct workqueue_struct *alloc_workqueue(const char *fmt, unsigned int flags, int max_active, ...)
{
	struct workqueue_struct *wq;
	bool highpri = flags & WQ_HIGHPRI;
	va_list args;

	if (flags & WQ_BH) /* BH workqueues run from softirq: not modelled */
		return nullptr;
	pthread_once(&pools_once, init_worker_pools);

	wq = new (std::nothrow) workqueue_struct();
	if (!wq)
		return nullptr;

	va_start(args, max_active);
	vsnprintf(wq->name, sizeof(wq->name), fmt, args);
	va_end(args);

	if (max_active == 0)
		max_active = WQ_DFL_ACTIVE;
	max_active = wq_clamp_max_active(max_active, flags, wq->name);

	wq->flags = flags;
	wq->saved_max_active = max_active;
	mutex_init(&wq->mutex);
	mutex_init(&wq->flush_mutex);
	init_waitqueue_head(&wq->flush_wait);

	if (flags & WQ_UNBOUND) {
		wq->dfl_pwq = alloc_pwq(wq, unbound_pool(highpri));
	} else {
		for (int cpu = 0; cpu < NR_CPUS; cpu++)
			wq->cpu_pwq[cpu] = alloc_pwq(wq, cpu_pool(cpu, highpri));
	}
	return wq;
}

static bool pwq_busy(struct pool_workqueue *pwq)
{
	bool busy;

	raw_spin_lock_irq(&pwq->pool->lock);
	busy = pwq->nr_active || !list_empty(&pwq->inactive_works);
	raw_spin_unlock_irq(&pwq->pool->lock);
	return busy;
}

void destroy_workqueue(struct workqueue_struct *wq)
{
	bool busy = false;

	if (!wq)
		return;
	mutex_lock(&wq->mutex);
	WRITE_ONCE(wq->flags, wq->flags | __WQ_DESTROYING);
	mutex_unlock(&wq->mutex);

	drain_workqueue(wq);

	if (wq->dfl_pwq)
		busy |= pwq_busy(wq->dfl_pwq);
	for (int cpu = 0; cpu < NR_CPUS; cpu++)
		if (wq->cpu_pwq[cpu])
			busy |= pwq_busy(wq->cpu_pwq[cpu]);
	if (WARN_ON(busy)) {
		pr_warn("destroy_workqueue: %s has busy pwqs; leaking it\n", wq->name);
		return;
	}

	delete wq->dfl_pwq;
	for (int cpu = 0; cpu < NR_CPUS; cpu++)
		delete wq->cpu_pwq[cpu];
	delete wq;
}

void workqueue_set_max_active(struct workqueue_struct *wq, int max_active)
{
	struct pool_workqueue *pwqs[NR_CPUS + 1];
	int n = 0;

	if (WARN_ON(READ_ONCE(wq->flags) & __WQ_ORDERED))
		return;
	max_active = wq_clamp_max_active(max_active, wq->flags, wq->name);

	mutex_lock(&wq->mutex);
	wq->saved_max_active = max_active;
	if (wq->dfl_pwq)
		pwqs[n++] = wq->dfl_pwq;
	for (int cpu = 0; cpu < NR_CPUS; cpu++)
		if (wq->cpu_pwq[cpu])
			pwqs[n++] = wq->cpu_pwq[cpu];
	for (int i = 0; i < n; i++) {
		struct worker_pool *pool = pwqs[i]->pool;
		bool create = false;

		raw_spin_lock_irq(&pool->lock);
		pwqs[i]->max_active = max_active;
		while (pwq_activate_first_inactive(pwqs[i]))
			create = true;
		raw_spin_unlock_irq(&pool->lock);
		if (create)
			create_worker(pool);
	}
	mutex_unlock(&wq->mutex);
}

bool workqueue_congested(int cpu, struct workqueue_struct *wq)
{
	struct pool_workqueue *pwq;
	bool ret;

	if (cpu == WORK_CPU_UNBOUND)
		cpu = raw_smp_processor_id();
	pwq = (READ_ONCE(wq->flags) & WQ_UNBOUND) ? wq->dfl_pwq : wq->cpu_pwq[cpu];
	raw_spin_lock_irq(&pwq->pool->lock);
	ret = !list_empty(&pwq->inactive_works);
	raw_spin_unlock_irq(&pwq->pool->lock);
	return ret;
}

unsigned int work_busy(struct work_struct *work)
{
	struct worker_pool *pool;
	unsigned int ret = 0;

	if (work_pending(work))
		ret |= WORK_BUSY_PENDING;
	pool = get_work_pool(work);
	if (pool) {
		raw_spin_lock_irq(&pool->lock);
		if (find_worker_executing_work(pool, work))
			ret |= WORK_BUSY_RUNNING;
		raw_spin_unlock_irq(&pool->lock);
	}
	return ret;
}

struct work_for_cpu {
	struct work_struct work;
	long (*fn)(void *);
	void *arg;
	long ret;
};

static void work_for_cpu_fn(struct work_struct *work)
{
	struct work_for_cpu *wfc = container_of(work, struct work_for_cpu, work);

	wfc->ret = wfc->fn(wfc->arg);
}

long work_on_cpu(int cpu, long (*fn)(void *), void *arg)
{
	struct work_for_cpu wfc = {};

	wfc.fn = fn;
	wfc.arg = arg;
	INIT_WORK_ONSTACK(&wfc.work, work_for_cpu_fn);
	schedule_work_on(cpu, &wfc.work);
	flush_work(&wfc.work);
	destroy_work_on_stack(&wfc.work);
	return wfc.ret;
}

struct workqueue_struct *system_wq;
struct workqueue_struct *system_percpu_wq;
struct workqueue_struct *system_highpri_wq;
struct workqueue_struct *system_long_wq;
struct workqueue_struct *system_unbound_wq;
struct workqueue_struct *system_dfl_wq;
struct workqueue_struct *system_freezable_wq;
struct workqueue_struct *system_power_efficient_wq;
struct workqueue_struct *system_freezable_power_efficient_wq;

/* workqueue_init_early(): the system queues exist before main(). */
__attribute__((constructor)) static void workqueue_init_early(void)
{
	system_wq = alloc_workqueue("events", 0, 0);
	system_percpu_wq = system_wq;
	system_highpri_wq = alloc_workqueue("events_highpri", WQ_HIGHPRI, 0);
	system_long_wq = alloc_workqueue("events_long", 0, 0);
	system_unbound_wq = alloc_workqueue("events_unbound", WQ_UNBOUND, WQ_MAX_ACTIVE);
	system_dfl_wq = system_unbound_wq;
	system_freezable_wq = alloc_workqueue("events_freezable", WQ_FREEZABLE, 0);
	system_power_efficient_wq =
		alloc_workqueue("events_power_efficient", WQ_POWER_EFFICIENT, 0);
	system_freezable_power_efficient_wq = alloc_workqueue("events_freezable_pwr_efficient",
							      WQ_FREEZABLE | WQ_POWER_EFFICIENT, 0);
}

namespace uk
{

int wq_nr_workers(void)
{
	return nr_live_workers.load(std::memory_order_relaxed);
}

void wq_set_manual(bool manual)
{
	pthread_once(&pools_once, init_worker_pools);
	wq_manual.store(manual, std::memory_order_relaxed);
	if (manual)
		return;
	/* Back to threads: what waits on a pool gets a worker. */
	for (int i = 0; i < NR_WORKER_POOLS; i++) {
		struct worker_pool *pool = &worker_pools[i];
		bool create;

		raw_spin_lock_irq(&pool->lock);
		create = kick_pool(pool);
		raw_spin_unlock_irq(&pool->lock);
		if (create)
			create_worker(pool);
	}
}

static void wq_pools_of(int cpu, struct worker_pool *pools[NR_STD_WORKER_POOLS])
{
	pthread_once(&pools_once, init_worker_pools);
	/* High priority first, as its workers would be picked first. */
	pools[0] = cpu >= 0 ? cpu_pool(cpu, true) : unbound_pool(true);
	pools[1] = cpu >= 0 ? cpu_pool(cpu, false) : unbound_pool(false);
}

bool wq_has_work(int cpu)
{
	struct worker_pool *pools[NR_STD_WORKER_POOLS];

	wq_pools_of(cpu, pools);
	/* A peek without the pool lock: the caller runs alone (the explorer). */
	for (struct worker_pool *pool : pools)
		if (__atomic_load_n(&pool->worklist.next, __ATOMIC_RELAXED) != &pool->worklist)
			return true;
	return false;
}

bool wq_run_one(int cpu)
{
	struct worker_pool *pools[NR_STD_WORKER_POOLS];
	struct task_struct *task = get_current();
	unsigned int saved_flags = task->flags;
	struct worker *saved_worker = task->uk_worker;

	wq_pools_of(cpu, pools);
	for (struct worker_pool *pool : pools) {
		struct worker worker = {};
		struct work_struct *work;

		INIT_LIST_HEAD(&worker.node);
		INIT_LIST_HEAD(&worker.idle_entry);
		INIT_LIST_HEAD(&worker.scheduled);
		worker.pool = pool;
		worker.flags = WORKER_PREP | (pool->cpu < 0 ? WORKER_UNBOUND : 0);
		worker.current_color = INT_MAX;
		worker.task = task;

		raw_spin_lock_irq(&pool->lock);
		if (list_empty(&pool->worklist)) {
			raw_spin_unlock_irq(&pool->lock);
			continue;
		}
		/* One pass of worker_thread()'s loop, by the calling task. */
		task->flags |= PF_WQ_WORKER;
		task->uk_worker = &worker;
		worker.id = pool->next_worker_id++;
		pool->nr_workers++;
		list_add_tail(&worker.node, &pool->workers);
		worker_clr_flags(&worker, WORKER_PREP);
		work = list_first_entry(&pool->worklist, struct work_struct, entry);
		if (assign_work(work, &worker, nullptr))
			process_scheduled_works(&worker);
		worker_set_flags(&worker, WORKER_PREP);
		list_del_init(&worker.node);
		pool->nr_workers--;
		raw_spin_unlock_irq(&pool->lock);
		task->uk_worker = saved_worker;
		task->flags = saved_flags;
		return true;
	}
	return false;
}

} // namespace uk
