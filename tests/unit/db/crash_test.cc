// Crash safety with a real process: db_crash_writer is SIGKILLed while it
// inserts samples; the database must pass integrity_check, keep the earlier
// run whole, and show the interrupted run as failed after the next open.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "nabla/db/store.hh"
#include "temp_dir.hh"

#ifndef NABLA_DB_CRASH_WRITER
#error "NABLA_DB_CRASH_WRITER must name the db_crash_writer binary"
#endif

namespace nabla::db {
namespace {

// The helper process; killed and reaped on scope exit if still running.
class Child {
 public:
  Child(const std::string& db_path, int progress_fd) {
    pid_ = ::fork();
    if (pid_ < 0) throw std::system_error(errno, std::generic_category(), "fork");
    if (pid_ == 0) {
      if (::dup2(progress_fd, 3) < 0) ::_exit(120);  // dup2 clears FD_CLOEXEC
      ::execl(NABLA_DB_CRASH_WRITER, NABLA_DB_CRASH_WRITER, db_path.c_str(), "3",
              static_cast<char*>(nullptr));
      ::_exit(121);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  pid_t pid() const { return pid_; }
  // Reaps the child; returns its wait status.
  int wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status;
  }

 private:
  pid_t pid_ = -1;
};

class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}
  // The next line, or "" on EOF or when `deadline` passes.
  std::string next(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return "";
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[256];
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n <= 0) return "";
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }

 private:
  int fd_;
  std::string buf_;
};

std::int64_t scalar(Database& db, const std::string& sql) {
  Statement st(db, sql);
  EXPECT_TRUE(st.step()) << sql;
  return st.column_int64(0);
}

TEST(CrashSafety, SigkillMidInsertLeavesAConsistentDatabase) {
  testing::TempDir dir;
  const std::string path = dir.file("crash.db");
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::int64_t run_a = 0, rows_a = 0, run_b = 0, committed_b = 0;
  pid_t child_pid = 0;
  {
    Child child(path, fds[1]);
    child_pid = child.pid();
    ::close(fds[1]);
    LineReader lines(fds[0]);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::istringstream a(lines.next(deadline));
    char tag = 0;
    ASSERT_TRUE(a >> tag >> run_a >> rows_a) << "no run A report";
    ASSERT_EQ(tag, 'A');
    std::istringstream b(lines.next(deadline));
    ASSERT_TRUE(b >> tag >> run_b) << "no run B report";
    ASSERT_EQ(tag, 'B');
    // Let several batches commit, then kill while the next one is written.
    for (int batches = 0; batches < 5;) {
      std::istringstream p(lines.next(deadline));
      ASSERT_TRUE(p >> tag >> committed_b) << "child stopped reporting progress";
      ++batches;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    ASSERT_EQ(::kill(child.pid(), SIGKILL), 0);
    const int status = child.wait();
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "helper was not killed by us (status " << status << ")";
    ::close(fds[0]);
  }

  Store store = Store::open(path, 0);  // recovery marks run B failed
  Database& db = store.database();
  EXPECT_EQ(query(db, "PRAGMA integrity_check").rows,
            (std::vector<std::vector<Value>>{{std::string("ok")}}));
  EXPECT_TRUE(query(db, "PRAGMA foreign_key_check").rows.empty());

  auto a = store.get_run(run_a);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, RunStatus::kComplete);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM samples WHERE run_id = " + std::to_string(run_a)),
            rows_a);
  EXPECT_EQ(scalar(db, "SELECT sum(send_ns / 1000000) FROM samples WHERE run_id = " +
                           std::to_string(run_a)),
            rows_a * (rows_a - 1) / 2);  // every row, each once

  auto b = store.get_run(run_b);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, RunStatus::kFailed);
  EXPECT_EQ(b->error, "interrupted (process " + std::to_string(child_pid) + " no longer running)");
  // Batches are all-or-nothing: what survived is whole batches, at least as
  // many as the child saw committed.
  const std::int64_t kept =
      scalar(db, "SELECT count(*) FROM samples WHERE run_id = " + std::to_string(run_b));
  EXPECT_GE(kept, committed_b);
  EXPECT_EQ(kept % 2000, 0) << kept;
  EXPECT_EQ(scalar(db, "SELECT status = 'failed' FROM run_summary WHERE run_id = " +
                           std::to_string(run_b)),
            1);
}

}  // namespace
}  // namespace nabla::db
