#pragma once
// Bulk insertion of samples: rows are buffered in memory and written in
// batches, each batch one BEGIN IMMEDIATE transaction reusing one prepared
// multi-row INSERT. Buffering (instead of holding a transaction open while
// the load runs) keeps the write lock short, so other writers and
// `nabla sql` readers are never blocked for long.
#include <cstdint>
#include <vector>

#include "nabla/db/records.hh"
#include "nabla/db/sqlite.hh"

namespace nabla::db {

class SampleWriter {
 public:
  static constexpr std::size_t kDefaultBatchRows = 10'000;

  // `db` must outlive the writer. The run must exist (foreign key).
  SampleWriter(Database& db, std::int64_t run_id, std::size_t batch_rows = kDefaultBatchRows);
  SampleWriter(SampleWriter&&) noexcept = default;
  SampleWriter& operator=(SampleWriter&&) = delete;
  SampleWriter(const SampleWriter&) = delete;
  SampleWriter& operator=(const SampleWriter&) = delete;
  // Flushes what is buffered; never throws. A failed final flush is counted
  // in failed_rows() (readable only before destruction, so call flush()
  // explicitly when the outcome matters) and reported on stderr.
  ~SampleWriter();

  // Buffers one row; writes a batch when batch_rows are buffered. Throws
  // db::Error when that write fails (the batch is then dropped and counted).
  void add(const Sample& sample);
  // Writes whatever is buffered now. Throws db::Error on failure.
  void flush();

  std::int64_t run_id() const { return run_id_; }
  std::int64_t rows_written() const { return rows_written_; }  // committed
  std::int64_t failed_rows() const { return failed_rows_; }
  std::size_t buffered() const { return buffer_.size(); }

 private:
  void write_rows(std::size_t first, std::size_t count, Statement& insert);

  Database* db_;
  std::int64_t run_id_;
  std::size_t batch_rows_;
  std::vector<Sample> buffer_;
  Statement insert_many_;  // kRowsPerStatement rows
  std::int64_t rows_written_ = 0;
  std::int64_t failed_rows_ = 0;
};

}  // namespace nabla::db
