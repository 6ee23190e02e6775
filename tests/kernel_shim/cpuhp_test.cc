// SPDX-License-Identifier: GPL-2.0-only
// CPU hotplug (kernel_shim/cpu.cc): states and instances, the order and the
// CPU of the callbacks in remove_cpu() and add_cpu(), rollback on a failing
// callback, and what an offline CPU means to the rest of the CPU model.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <uk/linux/cpu.h>
#include <uk/linux/errno.h>
#include <uk/linux/preempt.h>
#include <uk/linux/smp.h>

#include "testmain.h"

namespace {

// One callback run: which, for which CPU, on which CPU, and whether the CPU
// was online then.
struct Call {
  std::string what;
  unsigned int cpu;
  int ran_on;
  bool online;
};

std::mutex calls_mu;
std::vector<Call> calls;
int fail_teardown_cpu = -1;  // the "ap-b" teardown fails for this CPU

void Record(const char *what, unsigned int cpu) {
  std::lock_guard<std::mutex> l(calls_mu);
  calls.push_back({what, cpu, raw_smp_processor_id(), cpu_online(cpu)});
}

std::vector<Call> TakeCalls() {
  std::lock_guard<std::mutex> l(calls_mu);
  std::vector<Call> out;
  out.swap(calls);
  return out;
}

std::string Names(const std::vector<Call> &v) {
  std::string s;
  for (const Call &c : v) s += (s.empty() ? "" : " ") + c.what;
  return s;
}

int PrepUp(unsigned int cpu) {
  Record("prep-up", cpu);
  return 0;
}
int PrepDead(unsigned int cpu) {
  Record("prep-dead", cpu);
  return 0;
}
int ApAUp(unsigned int cpu) {
  Record("ap-a-up", cpu);
  return 0;
}
int ApADown(unsigned int cpu) {
  Record("ap-a-down", cpu);
  return 0;
}
int ApBUp(unsigned int cpu) {
  Record("ap-b-up", cpu);
  return 0;
}
int ApBDown(unsigned int cpu) {
  Record("ap-b-down", cpu);
  return (int)cpu == fail_teardown_cpu ? -EBUSY : 0;
}

struct Inst {
  struct hlist_node node;
  const char *name;
};

int MultiUp(unsigned int cpu, struct hlist_node *node) {
  Record((std::string(hlist_entry(node, Inst, node)->name) + "-up").c_str(),
         cpu);
  return 0;
}
int MultiDown(unsigned int cpu, struct hlist_node *node) {
  Record((std::string(hlist_entry(node, Inst, node)->name) + "-down").c_str(),
         cpu);
  return 0;
}

class CpuhpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = nr_cpu_ids;
    uk::set_nr_cpu_ids(4);
    TakeCalls();
    fail_teardown_cpu = -1;
  }
  void TearDown() override {
    for (unsigned int c = 0; c < nr_cpu_ids; c++) EXPECT_EQ(add_cpu(c), 0);
    uk::set_nr_cpu_ids(saved_);
  }
  unsigned int saved_;
};

TEST_F(CpuhpTest, CallbacksRunInStateOrderOnTheRightCpu) {
  int prep = cpuhp_setup_state_nocalls(CPUHP_BP_PREPARE_DYN, "test:prep",
                                       PrepUp, PrepDead);
  ASSERT_GE(prep, CPUHP_BP_PREPARE_DYN);
  ASSERT_LE(prep, CPUHP_BP_PREPARE_DYN_END);
  int a =
      cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "test:a", ApAUp, ApADown);
  int b =
      cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "test:b", ApBUp, ApBDown);
  ASSERT_GT(a, CPUHP_AP_ONLINE_DYN - 1);
  ASSERT_EQ(b, a + 1);               // the next free dynamic state
  EXPECT_TRUE(TakeCalls().empty());  // _nocalls

  ASSERT_EQ(remove_cpu(2), 0);
  EXPECT_FALSE(cpu_online(2));
  EXPECT_EQ(num_online_cpus(), 3u);
  std::vector<Call> down = TakeCalls();
  // Teardown from the highest state down: AP states on CPU 2 while it is
  // still online, then the PREPARE state on another CPU once it is dead.
  ASSERT_EQ(Names(down), "ap-b-down ap-a-down prep-dead");
  for (int i = 0; i < 2; i++) {
    EXPECT_EQ(down[i].ran_on, 2);
    EXPECT_TRUE(down[i].online);
  }
  EXPECT_NE(down[2].ran_on, 2);
  EXPECT_FALSE(down[2].online);
  for (const Call &c : down) EXPECT_EQ(c.cpu, 2u);

  // Down again: nothing to do.
  EXPECT_EQ(remove_cpu(2), 0);
  EXPECT_TRUE(TakeCalls().empty());

  ASSERT_EQ(add_cpu(2), 0);
  EXPECT_TRUE(cpu_online(2));
  std::vector<Call> up = TakeCalls();
  ASSERT_EQ(Names(up), "prep-up ap-a-up ap-b-up");
  EXPECT_NE(up[0].ran_on, 2);
  EXPECT_FALSE(up[0].online);
  for (int i = 1; i < 3; i++) {
    EXPECT_EQ(up[i].ran_on, 2);
    EXPECT_TRUE(up[i].online);
  }

  cpuhp_remove_state_nocalls((enum cpuhp_state)b);
  cpuhp_remove_state_nocalls((enum cpuhp_state)a);
  cpuhp_remove_state_nocalls((enum cpuhp_state)prep);
  EXPECT_TRUE(TakeCalls().empty());
}

TEST_F(CpuhpTest, SetupAndRemoveInvokeOnEveryOnlineCpu) {
  ASSERT_EQ(remove_cpu(1), 0);
  int a = cpuhp_setup_state(CPUHP_AP_ONLINE_DYN, "test:a", ApAUp, ApADown);
  ASSERT_GT(a, 0);
  std::vector<Call> up = TakeCalls();
  ASSERT_EQ(up.size(), 3u);  // CPUs 0, 2 and 3, each on itself
  EXPECT_EQ(up[0].cpu, 0u);
  EXPECT_EQ(up[1].cpu, 2u);
  EXPECT_EQ(up[2].cpu, 3u);
  for (const Call &c : up) EXPECT_EQ(c.ran_on, (int)c.cpu);

  // The offline CPU meets the state when it comes up.
  ASSERT_EQ(add_cpu(1), 0);
  EXPECT_EQ(Names(TakeCalls()), "ap-a-up");

  cpuhp_remove_state((enum cpuhp_state)a);
  EXPECT_EQ(TakeCalls().size(), 4u);
}

TEST_F(CpuhpTest, InstancesOfAMultiState) {
  int s = cpuhp_setup_state_multi(CPUHP_AP_ONLINE_DYN, "test:multi", MultiUp,
                                  MultiDown);
  ASSERT_GT(s, 0);
  Inst x = {{}, "x"}, y = {{}, "y"};
  INIT_HLIST_NODE(&x.node);
  INIT_HLIST_NODE(&y.node);
  ASSERT_EQ(cpuhp_state_add_instance_nocalls((enum cpuhp_state)s, &x.node), 0);
  EXPECT_TRUE(TakeCalls().empty());
  EXPECT_FALSE(hlist_unhashed(&x.node));
  // With calls: y's startup runs for each online CPU.
  ASSERT_EQ(cpuhp_state_add_instance((enum cpuhp_state)s, &y.node), 0);
  EXPECT_EQ(Names(TakeCalls()), "y-up y-up y-up y-up");

  // A hotplug runs every instance, the latest added first.
  ASSERT_EQ(remove_cpu(3), 0);
  EXPECT_EQ(Names(TakeCalls()), "y-down x-down");
  ASSERT_EQ(add_cpu(3), 0);
  EXPECT_EQ(Names(TakeCalls()), "y-up x-up");

  EXPECT_EQ(cpuhp_state_remove_instance_nocalls((enum cpuhp_state)s, &x.node),
            0);
  EXPECT_TRUE(TakeCalls().empty());
  EXPECT_EQ(cpuhp_state_remove_instance((enum cpuhp_state)s, &y.node), 0);
  EXPECT_EQ(Names(TakeCalls()), "y-down y-down y-down y-down");
  ASSERT_EQ(remove_cpu(3), 0);
  EXPECT_TRUE(TakeCalls().empty());
  cpuhp_remove_multi_state((enum cpuhp_state)s);
}

TEST_F(CpuhpTest, BadCallsGetTheKernelsErrors) {
  EXPECT_EQ(remove_cpu(nr_cpu_ids), -EINVAL);
  EXPECT_EQ(add_cpu(nr_cpu_ids), -EINVAL);
  EXPECT_EQ(cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, NULL, ApAUp, NULL),
            -EINVAL);
  EXPECT_EQ(cpuhp_setup_state_nocalls(CPUHP_ONLINE, "test:x", ApAUp, NULL),
            -EINVAL);
  // The model's own states are taken.
  EXPECT_EQ(
      cpuhp_setup_state_nocalls(CPUHP_TEARDOWN_CPU, "test:x", ApAUp, NULL),
      -EBUSY);
  int a =
      cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "test:a", ApAUp, ApADown);
  ASSERT_GT(a, 0);
  struct hlist_node n;
  INIT_HLIST_NODE(&n);
  EXPECT_EQ(cpuhp_state_add_instance_nocalls((enum cpuhp_state)a, &n), -EINVAL);
  cpuhp_remove_state_nocalls((enum cpuhp_state)a);

  // The last online CPU stays.
  ASSERT_EQ(remove_cpu(0), 0);
  ASSERT_EQ(remove_cpu(1), 0);
  ASSERT_EQ(remove_cpu(2), 0);
  EXPECT_EQ(remove_cpu(3), -EBUSY);
  EXPECT_TRUE(cpu_online(3));
  EXPECT_EQ(cpumask_first(cpu_online_mask), 3u);
}

TEST_F(CpuhpTest, AFailingTeardownRollsTheCpuBack) {
  int a =
      cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "test:a", ApAUp, ApADown);
  int b =
      cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "test:b", ApBUp, ApBDown);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, a);
  int c =
      cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN, "test:c", ApAUp, ApADown);
  ASSERT_GT(c, b);
  fail_teardown_cpu = 1;
  // c goes down, b fails, c comes back up; a is never reached.
  EXPECT_EQ(remove_cpu(1), -EBUSY);
  EXPECT_TRUE(cpu_online(1));
  EXPECT_EQ(Names(TakeCalls()), "ap-a-down ap-b-down ap-a-up");
  fail_teardown_cpu = -1;
  EXPECT_EQ(remove_cpu(1), 0);
  EXPECT_EQ(Names(TakeCalls()), "ap-a-down ap-b-down ap-a-down");
  cpuhp_remove_state_nocalls((enum cpuhp_state)c);
  cpuhp_remove_state_nocalls((enum cpuhp_state)b);
  cpuhp_remove_state_nocalls((enum cpuhp_state)a);
}

TEST_F(CpuhpTest, NoTaskRunsOnAnOfflineCpu) {
  ASSERT_EQ(remove_cpu(1), 0);
  EXPECT_FALSE(cpumask_test_cpu(1, cpu_online_mask));
  EXPECT_TRUE(cpumask_test_cpu(1, cpu_possible_mask));
  EXPECT_TRUE(cpu_possible(1));
  unsigned int seen = 0, cpu;
  for_each_online_cpu(cpu) seen |= 1u << cpu;
  EXPECT_EQ(seen, 0xdu);

  // A thread pinned to the CPU runs elsewhere, in and out of sections.
  std::thread t([] {
    uk::pin_thread_to_cpu(1);
    EXPECT_NE(raw_smp_processor_id(), 1);
    int c = get_cpu();
    EXPECT_NE(c, 1);
    EXPECT_TRUE(cpu_online(c));
    put_cpu();
    uk::pin_thread_to_cpu(-1);
  });
  t.join();

  // A thread on host CPU 1 is another virtual CPU.
  std::thread h([] {
    if (!uk::testing::PinToHostCpu(1)) return;
    EXPECT_NE(raw_smp_processor_id(), 1);
    int c = get_cpu();
    EXPECT_NE(c, 1);
    put_cpu();
  });
  h.join();

  // No IPI reaches it.
  EXPECT_EQ(smp_call_function_single(
                1, [](void *) {}, nullptr, 1),
            -ENXIO);

  // Back online, a pinned thread is on it again.
  ASSERT_EQ(add_cpu(1), 0);
  std::thread u([] {
    uk::pin_thread_to_cpu(1);
    EXPECT_EQ(get_cpu(), 1);
    put_cpu();
    uk::pin_thread_to_cpu(-1);
  });
  u.join();
}

TEST_F(CpuhpTest, ReadLockIsHeldForTheAssertion) {
  cpus_read_lock();
  lockdep_assert_cpus_held();
  EXPECT_EQ(cpus_read_trylock(), 1);
  cpus_read_unlock();
  cpus_read_unlock();
  uk::testing::AllowWarnings();
  lockdep_assert_cpus_held();
}

}  // namespace
