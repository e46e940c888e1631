#include "nabla/db/process_identity.hh"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nabla::db {
namespace {

TEST(ProcessIdentity, CurrentProcessIsAliveAndStable) {
  const ProcessIdentity me = current_process();
  EXPECT_EQ(me.pid, ::getpid());
  EXPECT_GT(me.start_ticks, 0);
  EXPECT_EQ(me.boot_id.size(), 36u) << me.boot_id;  // a UUID, newline stripped
  EXPECT_EQ(lookup_process(me.pid), me);
  EXPECT_EQ(current_process(), me);
  EXPECT_TRUE(is_alive(me));
}

TEST(ProcessIdentity, ReusedPidOtherBootAndZombiesAreNotAlive) {
  const ProcessIdentity me = current_process();
  EXPECT_FALSE(is_alive({me.pid, me.start_ticks + 1, me.boot_id}));
  EXPECT_FALSE(is_alive({me.pid, me.start_ticks, "00000000-0000-0000-0000-000000000000"}));
  EXPECT_FALSE(lookup_process(0));
  EXPECT_FALSE(lookup_process(-1));

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  // Until reaped the child is a zombie: it writes nothing any more.
  bool zombie_seen_dead = false;
  for (int i = 0; i < 2000 && !zombie_seen_dead; ++i) {
    zombie_seen_dead = !lookup_process(child).has_value();
    if (!zombie_seen_dead) ::usleep(1000);
  }
  EXPECT_TRUE(zombie_seen_dead);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(lookup_process(child));
}

}  // namespace
}  // namespace nabla::db
