// SPDX-License-Identifier: GPL-2.0-only
// Task credentials: the host's at start, prepare/override/revert, commit,
// capable(), and every struct cred freed with its last reference.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include <thread>

#include <uk/linux/cred.h>

#include "testmain.h"

namespace {

// The effective capability set the host reports for this process.
unsigned long long HostCapEff() {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  unsigned long long eff = 0;
  if (!f) return 0;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "CapEff: %llx", &eff) == 1) break;
  fclose(f);
  return eff;
}

TEST(CredTest, EveryTaskStartsWithTheHostsCredentials) {
  const struct cred *c = current_cred();
  EXPECT_EQ(c, current_real_cred());
  EXPECT_EQ(c, uk::init_cred());
  EXPECT_EQ(__kuid_val(c->uid), getuid());
  EXPECT_EQ(__kuid_val(c->euid), geteuid());
  EXPECT_EQ(__kgid_val(c->gid), getgid());
  EXPECT_EQ(__kgid_val(c->egid), getegid());
  EXPECT_EQ(__kuid_val(current_fsuid()), (uid_t)setfsuid((uid_t)-1));
  EXPECT_EQ(c->cap_effective.val, HostCapEff());
  EXPECT_EQ(capable(CAP_SYS_ADMIN), (HostCapEff() >> CAP_SYS_ADMIN & 1) != 0);

  const struct cred *other = nullptr;
  std::thread([&other] { other = current_cred(); }).join();
  EXPECT_EQ(other, uk::init_cred());
}

TEST(CredTest, OverrideActsOnACopyUntilReverted) {
  long live = uk::nr_creds();
  struct cred *new_cred = prepare_creds();
  ASSERT_NE(new_cred, nullptr);
  EXPECT_EQ(uk::nr_creds(), live + 1);
  new_cred->fsuid.val = 12345;
  new_cred->cap_effective.val = CAP_TO_MASK(CAP_SYS_NICE);

  const struct cred *old = override_creds(new_cred);
  EXPECT_EQ(__kuid_val(current_fsuid()), 12345u);
  EXPECT_TRUE(capable(CAP_SYS_NICE));
  EXPECT_FALSE(capable(CAP_SYS_ADMIN));
  // The objective credentials are untouched.
  EXPECT_NE(__kuid_val(current_real_cred()->fsuid), 12345u);
  revert_creds(old);
  EXPECT_EQ(current_cred(), old);

  // The override's reference is gone; the caller's is the last.
  EXPECT_EQ(atomic_long_read(&new_cred->usage), 1);
  put_cred(new_cred);
  EXPECT_EQ(uk::nr_creds(), live);
}

TEST(CredTest, CommitReplacesBothAndThreadExitFreesThem) {
  long live = uk::nr_creds();
  std::thread([] {
    struct cred *new_cred = prepare_creds();
    ASSERT_NE(new_cred, nullptr);
    new_cred->euid.val = 7;
    EXPECT_EQ(commit_creds(new_cred), 0);
    EXPECT_EQ(current_cred(), new_cred);
    EXPECT_EQ(current_real_cred(), new_cred);
    EXPECT_EQ(__kuid_val(current_euid()), 7u);
    EXPECT_EQ(atomic_long_read(&new_cred->usage), 2);

    struct cred *aborted = prepare_creds();
    ASSERT_NE(aborted, nullptr);
    EXPECT_EQ(__kuid_val(aborted->euid), 7u);  // a copy of the committed ones
    abort_creds(aborted);
  }).join();
  EXPECT_EQ(uk::nr_creds(), live);
  EXPECT_EQ(current_cred(), uk::init_cred());
}

TEST(CredTest, GetAndPutCount) {
  long live = uk::nr_creds();
  struct cred *c = prepare_creds();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(get_cred(c), c);
  EXPECT_EQ(atomic_long_read(&c->usage), 2);
  put_cred(c);
  EXPECT_EQ(uk::nr_creds(), live + 1);
  put_cred(c);
  EXPECT_EQ(uk::nr_creds(), live);
  EXPECT_EQ(get_cred(nullptr), nullptr);
  put_cred(nullptr);
}

}  // namespace
