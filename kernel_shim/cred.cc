// SPDX-License-Identifier: GPL-2.0-only
//
// Task credentials: the minimal model of <uk/linux/cred.h>. The initial
// credentials are read from the host once; each thread (task) holds a
// reference to its objective (real_cred) and subjective (cred) credentials,
// dropped when the thread exits. A struct cred is only read by its holders,
// never by another task under RCU, so the last put frees it at once.
#include <uk/linux/cred.h>

#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include <uk/linux/printk.h>
#include <uk/linux/slab.h>

namespace
{

// capget(2)'s version 3 layout (<linux/capability.h>, not included: its
// CAP_TO_MASK differs from the kernel-internal one of <uk/linux/cred.h>).
constexpr uint32_t kCapVersion3 = 0x20080522;
struct CapHeader {
	uint32_t version;
	int pid;
};
struct CapData {
	uint32_t effective;
	uint32_t permitted;
	uint32_t inheritable;
};

struct cred init_cred_storage;
std::once_flag init_once;
std::atomic<long> live_creds{ 0 };

u64 Join(uint32_t lo, uint32_t hi)
{
	return (u64)hi << 32 | lo;
}

void ReadHostCred()
{
	struct cred *c = &init_cred_storage;
	uid_t r, e, s;
	gid_t rg, eg, sg;
	CapHeader hdr = { kCapVersion3, 0 };
	CapData data[2] = {};

	getresuid(&r, &e, &s);
	getresgid(&rg, &eg, &sg);
	c->uid.val = r;
	c->euid.val = e;
	c->suid.val = s;
	c->gid.val = rg;
	c->egid.val = eg;
	c->sgid.val = sg;
	// Setting an invalid id changes nothing and returns the current one.
	c->fsuid.val = (uid_t)setfsuid((uid_t)-1);
	c->fsgid.val = (gid_t)setfsgid((gid_t)-1);
	if (syscall(SYS_capget, &hdr, data) == 0) {
		c->cap_effective.val = Join(data[0].effective, data[1].effective);
		c->cap_permitted.val = Join(data[0].permitted, data[1].permitted);
		c->cap_inheritable.val = Join(data[0].inheritable, data[1].inheritable);
	}
	c->cap_bset.val = CAP_TO_MASK(CAP_LAST_CAP + 1) - 1;
	c->cap_ambient.val = 0;
	// The initial credentials live for the whole process.
	atomic_long_set(&c->usage, 1);
}

struct cred *InitCred()
{
	std::call_once(init_once, ReadHostCred);
	return &init_cred_storage;
}

// The calling task's credentials; references dropped at thread exit.
struct TaskCreds {
	const struct cred *real_cred = nullptr;
	const struct cred *cred = nullptr;

	void Load()
	{
		if (real_cred)
			return;
		real_cred = get_cred(InitCred());
		cred = get_cred(real_cred);
	}
	~TaskCreds()
	{
		put_cred(cred);
		put_cred(real_cred);
	}
};
thread_local TaskCreds task_creds;

} // namespace

const struct cred *current_cred(void)
{
	task_creds.Load();
	return task_creds.cred;
}

const struct cred *current_real_cred(void)
{
	task_creds.Load();
	return task_creds.real_cred;
}

void __put_cred(struct cred *cred)
{
	WARN_ON(atomic_long_read(&cred->usage) != 0);
	if (WARN_ON(cred == &init_cred_storage))
		return;
	live_creds.fetch_sub(1, std::memory_order_relaxed);
	kfree(cred);
}

// A copy of the current task's credentials (the subjective ones, an
// override included), to change and then commit, or to act on the task's
// behalf with (override_creds()).
struct cred *prepare_creds(void)
{
	const struct cred *old = current_cred();
	struct cred *new_cred = (struct cred *)kmalloc(sizeof(*new_cred), GFP_KERNEL);

	if (!new_cred)
		return NULL;
	/*
	 * The copy reads ->usage, which other tasks may be changing; it is
	 * overwritten next (the kernel's memcpy() does the same).
	 */
	data_race(*new_cred = *old);
	atomic_long_set(&new_cred->usage, 1);
	live_creds.fetch_add(1, std::memory_order_relaxed);
	return new_cred;
}

void abort_creds(struct cred *new_cred)
{
	put_cred(new_cred);
}

// Installs @new_cred as the task's objective and subjective credentials;
// takes over the caller's reference. Not while an override is in force.
int commit_creds(struct cred *new_cred)
{
	const struct cred *old = current_real_cred();

	BUG_ON(task_creds.cred != old);
	get_cred(new_cred); // one reference each for real_cred and cred
	task_creds.real_cred = new_cred;
	task_creds.cred = new_cred;
	put_cred(old);
	put_cred(old);
	return 0;
}

// Makes @new_cred the subjective credentials until revert_creds(); returns
// the ones to give back to it.
const struct cred *override_creds(const struct cred *new_cred)
{
	const struct cred *old = current_cred();

	get_new_cred((struct cred *)new_cred);
	task_creds.cred = new_cred;
	return old;
}

void revert_creds(const struct cred *old)
{
	const struct cred *override = current_cred();

	task_creds.cred = old;
	put_cred(override);
}

bool capable(int cap)
{
	if (WARN_ON(!cap_valid(cap)))
		return false;
	return cap_raised(current_cred()->cap_effective, cap);
}

namespace uk
{

const struct cred *init_cred(void)
{
	return InitCred();
}

long nr_creds(void)
{
	return live_creds.load(std::memory_order_relaxed);
}

} // namespace uk
