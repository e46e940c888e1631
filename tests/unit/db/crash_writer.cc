// db_crash_writer: the child process of crash_test.cc.
//
//   db_crash_writer DB_PATH PROGRESS_FD
//
// Completes run A with kRunARows samples, then starts run B and inserts
// samples in batches of kBatchRows until killed, reporting on PROGRESS_FD:
//   "A <run id> <rows>\n"  run A complete
//   "B <run id>\n"         run B started
//   "P <rows>\n"           rows of run B committed so far (after each batch)
// It stops by itself (exit 3) after kMaxRows or 60 s, so a parent that
// forgets to kill it cannot leave it running.
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nabla/db/store.hh"

namespace {

constexpr std::int64_t kRunARows = 25'000;
constexpr std::size_t kBatchRows = 2'000;
constexpr std::int64_t kMaxRows = 20'000'000;
constexpr auto kMaxTime = std::chrono::seconds(60);

std::int64_t wall_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void report(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::_Exit(4);
}

nabla::db::Sample sample(std::int64_t i, std::int64_t type_id) {
  nabla::db::Sample s;
  s.send_ns = 1'000'000 * i;
  s.latency_ns = 40'000 + (i * 7919) % 10'000;
  s.type_id = type_id;
  s.source = nabla::db::TimestampSource::kSoftware;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DB_PATH PROGRESS_FD\n", argv[0]);
    return 2;
  }
  const int fd = std::atoi(argv[2]);
  try {
    nabla::db::Store store = nabla::db::Store::open(argv[1], wall_ns());
    const std::int64_t type_id = store.transaction_type_id("/view");
    nabla::db::RunStart start;
    start.kind = nabla::db::RunKind::kLoad;
    start.tool_version = "crash-writer";
    start.started_ns = wall_ns();
    const std::int64_t run_a = store.begin_run(start);
    {
      nabla::db::SampleWriter writer = store.sample_writer(run_a);
      for (std::int64_t i = 0; i < kRunARows; ++i) writer.add(sample(i, type_id));
      writer.flush();
    }
    store.finish_run(run_a, nabla::db::RunStatus::kComplete, wall_ns());
    report(fd, "A " + std::to_string(run_a) + " " + std::to_string(kRunARows) + "\n");

    start.started_ns = wall_ns();
    const std::int64_t run_b = store.begin_run(start);
    report(fd, "B " + std::to_string(run_b) + "\n");
    nabla::db::SampleWriter writer = store.sample_writer(run_b, kBatchRows);
    const auto deadline = std::chrono::steady_clock::now() + kMaxTime;
    std::int64_t last = 0;
    for (std::int64_t i = 0; i < kMaxRows; ++i) {
      writer.add(sample(i, type_id));
      if (writer.rows_written() != last) {
        last = writer.rows_written();
        report(fd, "P " + std::to_string(last) + "\n");
        if (std::chrono::steady_clock::now() > deadline) break;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "db_crash_writer: %s\n", e.what());
    return 1;
  }
  return 3;  // never killed: the parent failed to do its part
}
