/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Task credentials (include/linux/cred.h, include/linux/capability.h), the
 * minimal model: a struct cred holds the ids and capability sets, counted
 * by `usage`, never changed once published. Every task starts with the
 * process's credentials as the host gave them (ids from getres[ug]id(),
 * capabilities from capget()); prepare_creds() copies the current ones for
 * a change or for work done on the task's behalf, override_creds() and
 * revert_creds() switch what current_cred() answers, capable() tests the
 * effective set. There are no user namespaces, keyrings, LSMs or
 * supplementary groups.
 */
#ifndef UK_LINUX_CRED_H
#define UK_LINUX_CRED_H

#include <sys/types.h>

#include <uk/linux/atomic.h>
#include <uk/linux/compiler.h>
#include <uk/linux/types.h>

typedef struct {
	uid_t val;
} kuid_t;

typedef struct {
	gid_t val;
} kgid_t;

static inline uid_t __kuid_val(kuid_t uid)
{
	return uid.val;
}

static inline gid_t __kgid_val(kgid_t gid)
{
	return gid.val;
}

static inline bool uid_eq(kuid_t left, kuid_t right)
{
	return __kuid_val(left) == __kuid_val(right);
}

static inline bool gid_eq(kgid_t left, kgid_t right)
{
	return __kgid_val(left) == __kgid_val(right);
}

#define GLOBAL_ROOT_UID ((kuid_t){ 0 })
#define GLOBAL_ROOT_GID ((kgid_t){ 0 })

/* The capability numbers of include/uapi/linux/capability.h this tree uses. */
#define CAP_CHOWN 0
#define CAP_DAC_OVERRIDE 1
#define CAP_FOWNER 3
#define CAP_IPC_LOCK 14
#define CAP_SYS_RAWIO 17
#define CAP_SYS_ADMIN 21
#define CAP_SYS_NICE 23
#define CAP_SYS_RESOURCE 24
#define CAP_LAST_CAP 40

#define cap_valid(x) ((x) >= 0 && (x) <= CAP_LAST_CAP)

typedef struct {
	u64 val;
} kernel_cap_t;

#define CAP_TO_MASK(x) (1ULL << (x))

static inline bool cap_raised(kernel_cap_t c, int flag)
{
	return c.val & CAP_TO_MASK(flag);
}

struct cred {
	atomic_long_t usage;
	kuid_t uid; /* real */
	kgid_t gid;
	kuid_t suid; /* saved */
	kgid_t sgid;
	kuid_t euid; /* effective */
	kgid_t egid;
	kuid_t fsuid; /* for file access */
	kgid_t fsgid;
	kernel_cap_t cap_inheritable;
	kernel_cap_t cap_permitted;
	kernel_cap_t cap_effective;
	kernel_cap_t cap_bset;
	kernel_cap_t cap_ambient;
};

/*
 * What current_cred() and current_real_cred() answer: the calling task's,
 * held per host thread (a task is one).
 */
const struct cred *current_cred(void);
const struct cred *current_real_cred(void);

void __put_cred(struct cred *cred);
struct cred *prepare_creds(void);
void abort_creds(struct cred *new_cred);
int commit_creds(struct cred *new_cred);
const struct cred *override_creds(const struct cred *new_cred);
void revert_creds(const struct cred *old);

static inline struct cred *get_new_cred(struct cred *cred)
{
	atomic_long_inc(&cred->usage);
	return cred;
}

static inline const struct cred *get_cred(const struct cred *cred)
{
	struct cred *nonconst_cred = (struct cred *)cred;

	if (!cred)
		return cred;
	return get_new_cred(nonconst_cred);
}

static inline void put_cred(const struct cred *_cred)
{
	struct cred *cred = (struct cred *)_cred;

	if (cred) {
		if (atomic_long_dec_and_test(&cred->usage))
			__put_cred(cred);
	}
}

#define current_uid() (current_cred()->uid)
#define current_gid() (current_cred()->gid)
#define current_euid() (current_cred()->euid)
#define current_fsuid() (current_cred()->fsuid)
#define current_fsgid() (current_cred()->fsgid)

/* Whether the current task has capability @cap in its effective set. */
bool capable(int cap);

namespace uk
{
/* The credentials every task starts with (read from the host once). */
const struct cred *init_cred(void);
/* Live struct creds other than the initial one (for leak checks). */
long nr_creds(void);
} // namespace uk

#endif /* UK_LINUX_CRED_H */
