// SPDX-License-Identifier: GPL-2.0-only
/*
 * CPU hotplug over the virtual CPUs, after kernel/cpu.c: a table of states
 * with startup and teardown callbacks (single, or once per instance), the
 * hotplug lock, and remove_cpu()/add_cpu(), which walk a CPU between
 * CPUHP_ONLINE and CPUHP_OFFLINE. A CPU is either fully online or fully
 * offline outside those two calls: a failing callback rolls the CPU back to
 * where it started, so no per-CPU intermediate state is kept.
 *
 * Where callbacks run (docs/cpu-model.md, "CPU hotplug"): AP states on a
 * thread pinned to the CPU itself (the kernel's cpuhp/N thread), PREPARE
 * states on a thread pinned to another online CPU (the control CPU).
 */
#include <pthread.h>

#include <shared_mutex>
#include <thread>

#include <uk/linux/cpu.h>
#include <uk/linux/errno.h>
#include <uk/linux/kernel.h>
#include <uk/linux/mutex.h>
#include <uk/linux/printk.h>
#include <uk/linux/smp.h>

struct cpuhp_step {
	const char *name;
	union {
		int (*single)(unsigned int cpu);
		int (*multi)(unsigned int cpu, struct hlist_node *node);
	} startup;
	union {
		int (*single)(unsigned int cpu);
		int (*multi)(unsigned int cpu, struct hlist_node *node);
	} teardown;
	struct hlist_head list;
	bool multi_instance;
};

static struct cpuhp_step cpuhp_hp_states[CPUHP_ONLINE + 1];

/* The model's own steps carry a name, so that nobody else takes them. */
static const struct cpuhp_names {
	cpuhp_names()
	{
		cpuhp_hp_states[CPUHP_OFFLINE].name = "offline";
		cpuhp_hp_states[CPUHP_BRINGUP_CPU].name = "cpu:bringup";
		cpuhp_hp_states[CPUHP_AP_OFFLINE].name = "ap:offline";
		cpuhp_hp_states[CPUHP_AP_ONLINE].name = "ap:online";
		cpuhp_hp_states[CPUHP_TEARDOWN_CPU].name = "cpu:teardown";
		cpuhp_hp_states[CPUHP_AP_ONLINE_IDLE].name = "ap:online-idle";
		cpuhp_hp_states[CPUHP_ONLINE].name = "online";
	}
} cpuhp_names_init;

/* Serializes changes to the table (the kernel's cpuhp_state_mutex). */
static DEFINE_MUTEX(cpuhp_state_mutex);

/* Serializes remove_cpu() and add_cpu() (cpu_add_remove_lock). */
static DEFINE_MUTEX(cpu_add_remove_lock);

/* cpu_hotplug_lock, and who holds it for the lockdep assertion. */
static std::shared_mutex cpu_hotplug_lock;
static thread_local int cpus_read_depth;
static thread_local bool cpuhp_context;

void cpus_read_lock(void)
{
	might_sleep();
	cpu_hotplug_lock.lock_shared();
	cpus_read_depth++;
}

void cpus_read_unlock(void)
{
	if (WARN_ON_ONCE(cpus_read_depth == 0))
		return;
	cpus_read_depth--;
	cpu_hotplug_lock.unlock_shared();
}

int cpus_read_trylock(void)
{
	if (!cpu_hotplug_lock.try_lock_shared())
		return 0;
	cpus_read_depth++;
	return 1;
}

static void cpus_write_lock(void)
{
	cpu_hotplug_lock.lock();
	cpuhp_context = true;
}

static void cpus_write_unlock(void)
{
	cpuhp_context = false;
	cpu_hotplug_lock.unlock();
}

/* Held by a reader, or by a hotplug operation (its callbacks included). */
void lockdep_assert_cpus_held(void)
{
	WARN_ON(cpus_read_depth == 0 && !cpuhp_context);
}

static struct cpuhp_step *cpuhp_get_step(enum cpuhp_state state)
{
	return cpuhp_hp_states + state;
}

static bool cpuhp_is_ap_state(enum cpuhp_state state)
{
	return state > CPUHP_BRINGUP_CPU && state != CPUHP_TEARDOWN_CPU;
}

/* Where a CPU stands between hotplug operations. */
static enum cpuhp_state cpuhp_cpu_state(unsigned int cpu)
{
	return cpu_online(cpu) ? CPUHP_ONLINE : CPUHP_OFFLINE;
}

/*
 * Runs @fn on a task pinned to @cpu, as the kernel runs AP callbacks in the
 * CPU's hotplug thread and teardown of PREPARE states on the control CPU
 * (work_on_cpu()). The task counts as holding the hotplug lock.
 */
template <typename Fn> static int cpuhp_run_on(unsigned int cpu, Fn &&fn)
{
	int ret = 0;
	std::thread t([&] {
		uk::pin_thread_to_cpu(cpu);
		cpuhp_context = true;
		ret = fn();
	});

	t.join();
	return ret;
}

static bool cpuhp_step_empty(bool bringup, struct cpuhp_step *step)
{
	return bringup ? !step->startup.single : !step->teardown.single;
}

/*
 * One state's callback for @cpu: for a multi-instance state, @node alone,
 * or every instance, undoing the ones done when one fails.
 */
static int cpuhp_invoke_callback(unsigned int cpu, enum cpuhp_state state, bool bringup,
				 struct hlist_node *node)
{
	struct cpuhp_step *step = cpuhp_get_step(state);
	int (*cbm)(unsigned int cpu, struct hlist_node *node);
	int ret, cnt;

	if (cpuhp_step_empty(bringup, step))
		return 0;

	if (!step->multi_instance)
		return (bringup ? step->startup.single : step->teardown.single)(cpu);

	cbm = bringup ? step->startup.multi : step->teardown.multi;
	if (node)
		return cbm(cpu, node);

	cnt = 0;
	hlist_for_each (node, &step->list) {
		ret = cbm(cpu, node);
		if (ret)
			goto err;
		cnt++;
	}
	return 0;
err:
	cbm = !bringup ? step->startup.multi : step->teardown.multi;
	if (!cbm)
		return ret;
	hlist_for_each (node, &step->list) {
		if (!cnt--)
			break;
		WARN_ON_ONCE(cbm(cpu, node));
	}
	return ret;
}

/*
 * Walks @cpu through the states from @from to @to (both included, upwards
 * for bringup, downwards for teardown); on a failure the states done are
 * walked back and the error returned.
 */
static int cpuhp_invoke_range(unsigned int cpu, bool bringup, int from, int to)
{
	int step = bringup ? 1 : -1;
	int state, ret;

	for (state = from; bringup ? state <= to : state >= to; state += step) {
		ret = cpuhp_invoke_callback(cpu, (enum cpuhp_state)state, bringup, NULL);
		if (!ret)
			continue;
		for (state -= step; bringup ? state >= from : state <= from; state -= step)
			WARN_ON(cpuhp_invoke_callback(cpu, (enum cpuhp_state)state, !bringup,
						      NULL));
		return ret;
	}
	return 0;
}

/* The CPU that runs the PREPARE states while @cpu comes or goes. */
static unsigned int cpuhp_control_cpu(unsigned int cpu)
{
	unsigned int c;

	for_each_online_cpu (c)
		if (c != cpu)
			return c;
	return cpu;
}

static int _cpu_down(unsigned int cpu)
{
	unsigned int control = cpuhp_control_cpu(cpu);

	if (num_online_cpus() == 1)
		return -EBUSY;

	return cpuhp_run_on(control, [cpu] {
		int ret;

		cpus_write_lock();
		/* AP states, on the CPU going down; CPUHP_TEARDOWN_CPU ends them. */
		ret = cpuhp_run_on(cpu, [cpu] {
			return cpuhp_invoke_range(cpu, false, CPUHP_ONLINE, CPUHP_TEARDOWN_CPU + 1);
		});
		if (!ret) {
			uk::cpu_mark_offline(cpu);
			/* The dead CPU's PREPARE states, here: their errors are bugs. */
			WARN(cpuhp_invoke_range(cpu, false, CPUHP_BRINGUP_CPU - 1,
						CPUHP_OFFLINE + 1),
			     "DEAD callback error for CPU%u", cpu);
			uk::cpu_mark_dead(cpu);
		}
		cpus_write_unlock();
		return ret;
	});
}

static int _cpu_up(unsigned int cpu)
{
	return cpuhp_run_on(cpuhp_control_cpu(cpu), [cpu] {
		int ret;

		cpus_write_lock();
		ret = cpuhp_invoke_range(cpu, true, CPUHP_OFFLINE + 1, CPUHP_BRINGUP_CPU - 1);
		if (ret)
			goto out;
		uk::cpu_mark_online(cpu);
		ret = cpuhp_run_on(cpu, [cpu] {
			return cpuhp_invoke_range(cpu, true, CPUHP_TEARDOWN_CPU + 1, CPUHP_ONLINE);
		});
		if (ret) {
			uk::cpu_mark_offline(cpu);
			WARN_ON(cpuhp_invoke_range(cpu, false, CPUHP_BRINGUP_CPU - 1,
						   CPUHP_OFFLINE + 1));
			uk::cpu_mark_dead(cpu);
		}
out:
		cpus_write_unlock();
		return ret;
	});
}

int remove_cpu(unsigned int cpu)
{
	int ret = 0;

	might_sleep();
	if (cpu >= nr_cpu_ids)
		return -EINVAL;
	mutex_lock(&cpu_add_remove_lock);
	if (cpu_online(cpu))
		ret = _cpu_down(cpu);
	mutex_unlock(&cpu_add_remove_lock);
	return ret;
}

int add_cpu(unsigned int cpu)
{
	int ret = 0;

	might_sleep();
	if (cpu >= nr_cpu_ids)
		return -EINVAL;
	mutex_lock(&cpu_add_remove_lock);
	if (!cpu_online(cpu))
		ret = _cpu_up(cpu);
	mutex_unlock(&cpu_add_remove_lock);
	return ret;
}

/* A free dynamic state, or -ENOSPC. */
static int cpuhp_reserve_state(enum cpuhp_state state)
{
	enum cpuhp_state i, end;

	if (state == CPUHP_AP_ONLINE_DYN) {
		i = CPUHP_AP_ONLINE_DYN;
		end = CPUHP_AP_ONLINE_DYN_END;
	} else {
		i = CPUHP_BP_PREPARE_DYN;
		end = CPUHP_BP_PREPARE_DYN_END;
	}
	for (; i <= end; i = (enum cpuhp_state)(i + 1))
		if (!cpuhp_hp_states[i].name)
			return i;
	WARN(1, "No more dynamic states available for CPU hotplug\n");
	return -ENOSPC;
}

static int cpuhp_store_callbacks(enum cpuhp_state state, const char *name,
				 int (*startup)(unsigned int cpu),
				 int (*teardown)(unsigned int cpu), bool multi_instance)
{
	struct cpuhp_step *sp;
	int ret = 0;

	/* Removal names the reserved state itself, which may be the first. */
	if (name && (state == CPUHP_AP_ONLINE_DYN || state == CPUHP_BP_PREPARE_DYN)) {
		ret = cpuhp_reserve_state(state);
		if (ret < 0)
			return ret;
		state = (enum cpuhp_state)ret;
	}
	sp = cpuhp_get_step(state);
	if (name && sp->name)
		return -EBUSY;

	sp->startup.single = startup;
	sp->teardown.single = teardown;
	sp->name = name;
	sp->multi_instance = multi_instance;
	INIT_HLIST_HEAD(&sp->list);
	return ret;
}

/* One callback for one CPU, where the state runs (see cpuhp_run_on()). */
static int cpuhp_issue_call(int cpu, enum cpuhp_state state, bool bringup, struct hlist_node *node)
{
	if (cpuhp_step_empty(bringup, cpuhp_get_step(state)))
		return 0;
	if (cpuhp_is_ap_state(state))
		return cpuhp_run_on(
			cpu, [=] { return cpuhp_invoke_callback(cpu, state, bringup, node); });
	return cpuhp_invoke_callback(cpu, state, bringup, node);
}

/* Undoes the startup of @state on the CPUs before @failedcpu. */
static void cpuhp_rollback_install(int failedcpu, enum cpuhp_state state, struct hlist_node *node)
{
	int cpu;

	for_each_possible_cpu (cpu) {
		if (cpu >= failedcpu)
			break;
		if (cpuhp_cpu_state(cpu) >= state)
			cpuhp_issue_call(cpu, state, false, node);
	}
}

int __cpuhp_state_add_instance_cpuslocked(enum cpuhp_state state, struct hlist_node *node,
					  bool invoke)
{
	struct cpuhp_step *sp;
	int cpu;
	int ret;

	lockdep_assert_cpus_held();

	if (state <= CPUHP_OFFLINE || state >= CPUHP_ONLINE)
		return -EINVAL;
	sp = cpuhp_get_step(state);
	if (sp->multi_instance == false)
		return -EINVAL;

	mutex_lock(&cpuhp_state_mutex);

	if (!invoke || !sp->startup.multi)
		goto add_node;

	for_each_present_cpu(cpu)
	{
		if (cpuhp_cpu_state(cpu) < state)
			continue;

		ret = cpuhp_issue_call(cpu, state, true, node);
		if (ret) {
			if (sp->teardown.multi)
				cpuhp_rollback_install(cpu, state, node);
			goto unlock;
		}
	}
add_node:
	ret = 0;
	hlist_add_head(node, &sp->list);
unlock:
	mutex_unlock(&cpuhp_state_mutex);
	return ret;
}

int __cpuhp_state_add_instance(enum cpuhp_state state, struct hlist_node *node, bool invoke)
{
	int ret;

	cpus_read_lock();
	ret = __cpuhp_state_add_instance_cpuslocked(state, node, invoke);
	cpus_read_unlock();
	return ret;
}

int __cpuhp_setup_state_cpuslocked(enum cpuhp_state state, const char *name, bool invoke,
				   int (*startup)(unsigned int cpu),
				   int (*teardown)(unsigned int cpu), bool multi_instance)
{
	int cpu, ret = 0;
	bool dynstate;

	lockdep_assert_cpus_held();

	if (state <= CPUHP_OFFLINE || state >= CPUHP_ONLINE || !name)
		return -EINVAL;

	mutex_lock(&cpuhp_state_mutex);

	ret = cpuhp_store_callbacks(state, name, startup, teardown, multi_instance);

	dynstate = state == CPUHP_AP_ONLINE_DYN || state == CPUHP_BP_PREPARE_DYN;
	if (ret > 0 && dynstate) {
		state = (enum cpuhp_state)ret;
		ret = 0;
	}

	if (ret || !invoke || !startup)
		goto out;

	for_each_present_cpu(cpu)
	{
		if (cpuhp_cpu_state(cpu) < state)
			continue;

		ret = cpuhp_issue_call(cpu, state, true, NULL);
		if (ret) {
			if (teardown)
				cpuhp_rollback_install(cpu, state, NULL);
			cpuhp_store_callbacks(state, NULL, NULL, NULL, false);
			goto out;
		}
	}
out:
	mutex_unlock(&cpuhp_state_mutex);
	/* A dynamic state's number is what the caller removes it with. */
	if (!ret && dynstate)
		return state;
	return ret;
}

int __cpuhp_setup_state(enum cpuhp_state state, const char *name, bool invoke,
			int (*startup)(unsigned int cpu), int (*teardown)(unsigned int cpu),
			bool multi_instance)
{
	int ret;

	cpus_read_lock();
	ret = __cpuhp_setup_state_cpuslocked(state, name, invoke, startup, teardown,
					     multi_instance);
	cpus_read_unlock();
	return ret;
}

int __cpuhp_state_remove_instance(enum cpuhp_state state, struct hlist_node *node, bool invoke)
{
	struct cpuhp_step *sp = cpuhp_get_step(state);
	int cpu;

	if (state <= CPUHP_OFFLINE || state >= CPUHP_ONLINE || !sp->multi_instance)
		return -EINVAL;

	cpus_read_lock();
	mutex_lock(&cpuhp_state_mutex);

	if (!invoke || !sp->teardown.single)
		goto remove;
	for_each_present_cpu(cpu)
	{
		if (cpuhp_cpu_state(cpu) >= state)
			cpuhp_issue_call(cpu, state, false, node);
	}
remove:
	hlist_del(node);
	mutex_unlock(&cpuhp_state_mutex);
	cpus_read_unlock();
	return 0;
}

void __cpuhp_remove_state_cpuslocked(enum cpuhp_state state, bool invoke)
{
	struct cpuhp_step *sp = cpuhp_get_step(state);
	int cpu;

	if (WARN_ON(state <= CPUHP_OFFLINE || state >= CPUHP_ONLINE))
		return;

	lockdep_assert_cpus_held();

	mutex_lock(&cpuhp_state_mutex);
	if (sp->multi_instance) {
		WARN(!hlist_empty(&sp->list),
		     "Error: Removing state %d which has instances left.\n", state);
		goto remove;
	}

	if (!invoke || !sp->teardown.single)
		goto remove;

	for_each_present_cpu(cpu)
	{
		if (cpuhp_cpu_state(cpu) >= state)
			cpuhp_issue_call(cpu, state, false, NULL);
	}
remove:
	cpuhp_store_callbacks(state, NULL, NULL, NULL, false);
	mutex_unlock(&cpuhp_state_mutex);
}

void __cpuhp_remove_state(enum cpuhp_state state, bool invoke)
{
	cpus_read_lock();
	__cpuhp_remove_state_cpuslocked(state, invoke);
	cpus_read_unlock();
}
