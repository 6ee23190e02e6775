/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * CPU hotplug states (include/linux/cpuhotplug.h): the states a CPU passes
 * through between CPUHP_OFFLINE and CPUHP_ONLINE, and the calls that attach
 * callbacks and instances to them. The enum keeps the kernel's order for the
 * states that exist here: the PREPARE section (startup on the control CPU
 * before the CPU comes up, teardown there after it died: the *_DEAD states),
 * CPUHP_BRINGUP_CPU, then the AP section (callbacks run on the CPU itself,
 * startup once it is online, teardown before it leaves cpu_online_mask).
 * kernel_shim/cpu.cc walks them; docs/cpu-model.md, "CPU hotplug".
 */
#ifndef UK_LINUX_CPUHOTPLUG_H
#define UK_LINUX_CPUHOTPLUG_H

#include <uk/linux/list.h>
#include <uk/linux/types.h>

enum cpuhp_state {
	CPUHP_INVALID = -1,

	/* PREPARE section: the control CPU, task context */
	CPUHP_OFFLINE = 0,
	CPUHP_CREATE_THREADS,
	CPUHP_BLOCK_SOFTIRQ_DEAD,
	CPUHP_BIO_DEAD,
	CPUHP_BLK_MQ_DEAD,
	CPUHP_BP_PREPARE_DYN,
	CPUHP_BP_PREPARE_DYN_END = CPUHP_BP_PREPARE_DYN + 20,
	CPUHP_BRINGUP_CPU,

	/* AP section: on the hotplugged CPU, task context */
	CPUHP_AP_OFFLINE,
	CPUHP_AP_ONLINE,
	CPUHP_TEARDOWN_CPU,
	CPUHP_AP_ONLINE_IDLE,
	CPUHP_AP_BLK_MQ_ONLINE,
	CPUHP_AP_ONLINE_DYN,
	CPUHP_AP_ONLINE_DYN_END = CPUHP_AP_ONLINE_DYN + 40,
	CPUHP_AP_ACTIVE,
	CPUHP_ONLINE,
};

int __cpuhp_setup_state(enum cpuhp_state state, const char *name, bool invoke,
			int (*startup)(unsigned int cpu), int (*teardown)(unsigned int cpu),
			bool multi_instance);
int __cpuhp_setup_state_cpuslocked(enum cpuhp_state state, const char *name, bool invoke,
				   int (*startup)(unsigned int cpu),
				   int (*teardown)(unsigned int cpu), bool multi_instance);
void __cpuhp_remove_state(enum cpuhp_state state, bool invoke);
void __cpuhp_remove_state_cpuslocked(enum cpuhp_state state, bool invoke);
int __cpuhp_state_add_instance(enum cpuhp_state state, struct hlist_node *node, bool invoke);
int __cpuhp_state_add_instance_cpuslocked(enum cpuhp_state state, struct hlist_node *node,
					  bool invoke);
int __cpuhp_state_remove_instance(enum cpuhp_state state, struct hlist_node *node, bool invoke);

/* Callbacks run for every online CPU at setup; a dynamic state returns its number. */
static inline int cpuhp_setup_state(enum cpuhp_state state, const char *name,
				    int (*startup)(unsigned int cpu),
				    int (*teardown)(unsigned int cpu))
{
	return __cpuhp_setup_state(state, name, true, startup, teardown, false);
}

static inline int cpuhp_setup_state_nocalls(enum cpuhp_state state, const char *name,
					    int (*startup)(unsigned int cpu),
					    int (*teardown)(unsigned int cpu))
{
	return __cpuhp_setup_state(state, name, false, startup, teardown, false);
}

static inline int cpuhp_setup_state_nocalls_cpuslocked(enum cpuhp_state state, const char *name,
						       int (*startup)(unsigned int cpu),
						       int (*teardown)(unsigned int cpu))
{
	return __cpuhp_setup_state_cpuslocked(state, name, false, startup, teardown, false);
}

/* A state whose callbacks run once per instance (an hlist_node) added to it. */
static inline int cpuhp_setup_state_multi(enum cpuhp_state state, const char *name,
					  int (*startup)(unsigned int cpu, struct hlist_node *node),
					  int (*teardown)(unsigned int cpu,
							  struct hlist_node *node))
{
	return __cpuhp_setup_state(state, name, false, (int (*)(unsigned int))(void *)startup,
				   (int (*)(unsigned int))(void *)teardown, true);
}

static inline void cpuhp_remove_state(enum cpuhp_state state)
{
	__cpuhp_remove_state(state, true);
}

static inline void cpuhp_remove_state_nocalls(enum cpuhp_state state)
{
	__cpuhp_remove_state(state, false);
}

static inline void cpuhp_remove_multi_state(enum cpuhp_state state)
{
	__cpuhp_remove_state(state, false);
}

static inline int cpuhp_state_add_instance(enum cpuhp_state state, struct hlist_node *node)
{
	return __cpuhp_state_add_instance(state, node, true);
}

static inline int cpuhp_state_add_instance_nocalls(enum cpuhp_state state, struct hlist_node *node)
{
	return __cpuhp_state_add_instance(state, node, false);
}

static inline int cpuhp_state_add_instance_nocalls_cpuslocked(enum cpuhp_state state,
							      struct hlist_node *node)
{
	return __cpuhp_state_add_instance_cpuslocked(state, node, false);
}

static inline int cpuhp_state_remove_instance(enum cpuhp_state state, struct hlist_node *node)
{
	return __cpuhp_state_remove_instance(state, node, true);
}

static inline int cpuhp_state_remove_instance_nocalls(enum cpuhp_state state,
						      struct hlist_node *node)
{
	return __cpuhp_state_remove_instance(state, node, false);
}

#endif /* UK_LINUX_CPUHOTPLUG_H */
