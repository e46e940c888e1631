// db_insert_bench: the nabla side of bench/db/insert_vs_sqlite3.sh.
//
//   db_insert_bench gen N CSV        write N sample rows (seeded, no header):
//                                    run_id,phase_id,send_ns,latency_ns,
//                                    service_ns,type_id,ts_source
//   db_insert_bench init DB          create schema v1 plus run 1, phase 1,
//                                    type 1, which the rows reference
//   db_insert_bench import DB CSV    parse CSV, insert with SampleWriter;
//                                    prints "parse_s insert_s rows"
#include <time.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "nabla/db/store.hh"

namespace {

double mono_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

int generate(long n, const char* path) {
  std::mt19937_64 rng(20261122);  // fixed seed: both sides see the same rows
  std::exponential_distribution<double> gap(1.0 / 50'000.0);  // 20k req/s
  std::lognormal_distribution<double> latency(11.0, 0.5);     // ~60 us median
  std::FILE* out = std::fopen(path, "w");
  if (out == nullptr) throw std::runtime_error(std::string("cannot write ") + path);
  double t = 1.7e18;
  for (long i = 0; i < n; ++i) {
    t += gap(rng);
    const auto lat = static_cast<long long>(latency(rng));
    std::fprintf(out, "1,1,%lld,%lld,%lld,1,1\n", static_cast<long long>(t), lat, lat / 2);
  }
  return std::fclose(out) == 0 ? 0 : 1;
}

int init(const char* path) {
  nabla::db::Store store = nabla::db::Store::open(path, 0);
  nabla::db::RunStart run;
  run.kind = nabla::db::RunKind::kLoad;
  run.tool_version = "bench";
  const auto run_id = store.begin_run(run);
  nabla::db::Phase phase;
  phase.run_id = run_id;
  phase.kind = nabla::db::PhaseKind::kBaseline;
  const auto phase_id = store.add_phase(phase);
  const auto type_id = store.transaction_type_id("get");
  if (run_id != 1 || phase_id != 1 || type_id != 1) throw std::runtime_error("init: not empty");
  // The run stays 'running' on purpose: finish it so a later open does not
  // mark it failed (its owner, this process, exits now).
  store.finish_run(run_id, nabla::db::RunStatus::kComplete, 0);
  return 0;
}

// Parses "a,b,c,d,e,f,g\n" rows of integers.
std::vector<nabla::db::Sample> parse(const std::string& text) {
  std::vector<nabla::db::Sample> rows;
  rows.reserve(text.size() / 40);
  const char* p = text.data();
  const char* end = p + text.size();
  std::int64_t v[7];
  long line = 1;
  while (p < end) {
    for (int c = 0; c < 7; ++c) {
      auto [next, ec] = std::from_chars(p, end, v[c]);
      const char want = c == 6 ? '\n' : ',';
      if (ec != std::errc() || next == end || *next != want) {
        throw std::runtime_error("bad CSV at line " + std::to_string(line));
      }
      p = next + 1;
    }
    if (v[0] != 1) throw std::runtime_error("rows must belong to run 1");
    nabla::db::Sample s;
    s.phase_id = v[1];
    s.send_ns = v[2];
    s.latency_ns = v[3];
    s.service_ns = v[4];
    s.type_id = v[5];
    s.source = static_cast<nabla::db::TimestampSource>(v[6]);
    rows.push_back(s);
    ++line;
  }
  return rows;
}

int import(const char* db_path, const char* csv_path) {
  const double t0 = mono_s();
  std::ifstream in(csv_path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot read ") + csv_path);
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::vector<nabla::db::Sample> rows = parse(buf.str());
  const double t1 = mono_s();
  {
    nabla::db::Store store = nabla::db::Store::open(db_path, 0);
    nabla::db::SampleWriter writer = store.sample_writer(1);
    for (const auto& s : rows) writer.add(s);
    writer.flush();
  }
  const double t2 = mono_s();
  std::printf("%.3f %.3f %zu\n", t1 - t0, t2 - t1, rows.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "gen" && argc == 4) return generate(std::stol(argv[2]), argv[3]);
    if (cmd == "init" && argc == 3) return init(argv[2]);
    if (cmd == "import" && argc == 4) return import(argv[2], argv[3]);
    std::fprintf(stderr, "usage: %s gen N CSV | init DB | import DB CSV\n", argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "db_insert_bench: %s\n", e.what());
    return 1;
  }
}
