#include "stored_runs.hh"

#include <stdexcept>

#include "fake_environment.hh"
#include "nabla/campaign/campaign.hh"
#include "nabla/common/clock.hh"
#include "nabla/db/store.hh"

namespace nabla::report::testing {
namespace {

// Two hosts, both directions of one connection, two transaction types.
std::string spec_text(std::int64_t seed, bool simultaneous) {
  return R"(
name = "report-fake"
seed = )" +
         std::to_string(seed) +
         R"(
[[node]]
name = "web"
address = "10.0.0.1"
injectd = "127.0.0.1:7311"
sniffd = "127.0.0.1:7312"
[[node]]
name = "app"
address = "10.0.0.2"
injectd = "127.0.0.1:7321"
sniffd = "127.0.0.1:7322"
[workload]
target = "http://10.0.0.2:9002"
rate = 2000
mix = { "/a" = 0.5, "/b" = 0.5 }
warmup = "100ms"
[links]
discover_for = "1s"
[gradient]
bins = 64
chunks = 4
lease = "1s"
)" + std::string(simultaneous ? "schedule = \"simultaneous\"\n" : "schedule = \"sequential\"\n") +
         R"(
[truth]
"tcp web -> app:9002" = { "/a" = 1.5, "/b" = 0.5 }
"tcp app:9002 -> web" = { "/a" = 0.0, "/b" = 0.0 }
)";
}

}  // namespace

std::int64_t store_fake_campaign_run(const std::string& db_path, std::int64_t seed,
                                     bool simultaneous) {
  campaign::fake::FakeClock clock;
  campaign::fake::FakeDaemons daemons{clock};
  daemons.flows["web"] = {
      campaign::fake::tcp_flow_end("10.0.0.1", 0, 10, "client", "10.0.0.2", 9002, "outbound")};
  daemons.flows["app"] = {
      campaign::fake::tcp_flow_end("10.0.0.2", 9002, 20, "tier", "10.0.0.1", 0, "inbound")};
  campaign::fake::FakeServiceModel model;
  model.base_ns = {2'000'000, 3'000'000};
  model.noise_ns = 300'000;
  model.gradients = {{"tcp 10.0.0.1:* -> 10.0.0.2:9002", {1.5, 0.5}},
                     {"tcp 10.0.0.2:9002 -> 10.0.0.1:*", {0.0, 0.0}}};
  campaign::fake::FakeService service{daemons, model};
  db::Store store = db::Store::open(db_path, common::realtime_ns());
  const campaign::CampaignOutcome o =
      campaign::run_campaign(campaign::parse_campaign_spec(spec_text(seed, simultaneous)), store,
                             {}, campaign::CampaignEnvironment{clock, service, daemons});
  if (!o.complete) throw std::runtime_error("the fake campaign failed: " + o.error);
  return o.run_id;
}

std::int64_t store_load_sweep_run(const std::string& db_path) {
  db::Store store = db::Store::open(db_path, common::realtime_ns());
  db::RunStart start;
  start.kind = db::RunKind::kLoad;
  start.config_json = R"({"target":"http://127.0.0.1:9/","rate":[1000,4000]})";
  start.tool_version = "test";
  start.seed = 3;
  start.started_ns = common::realtime_ns();
  const std::int64_t run = store.begin_run(start);
  const std::int64_t type = store.transaction_type_id("get");
  const double rates[] = {1000, 4000};
  for (int point = 0; point < 2; ++point) {
    db::Phase phase;
    phase.run_id = run;
    phase.kind = db::PhaseKind::kBaseline;
    phase.started_ns = start.started_ns + point * 1'000'000'000LL;
    phase.ended_ns = phase.started_ns + 1'000'000'000LL;
    const std::int64_t phase_id = store.add_phase(phase);
    db::SampleWriter writer = store.sample_writer(run);
    for (int i = 0; i < 500; ++i) {
      const std::int64_t latency = 100'000 + (i * 7919) % 400'000 + point * 200'000;
      writer.add({phase_id, phase.started_ns + i * 2'000'000LL, latency, latency / 2, type,
                  db::TimestampSource::kSoftware});
    }
    writer.flush();
    for (const double p : {50.0, 99.0}) {
      db::TailResult t;
      t.run_id = run;
      t.rate_rps = rates[point];
      t.throughput_rps = rates[point] * 0.99;
      t.percentile = p;
      t.samples = 500;
      t.late_sends = point * 12;
      t.source = db::TimestampSource::kSoftware;
      t.ok = point == 0;
      if (t.ok) {
        t.value_ns = 200'000.5 + p * 1'000;
        t.ci_low_ns = *t.value_ns - 10'000.25;
        t.ci_high_ns = *t.value_ns + 12'000.125;
      } else {
        t.reasons_json =
            R"(["not iid: lag-1 correlation 0.4", "throughput below 95% of the rate"])";
      }
      store.add_tail_result(t);
    }
  }
  store.finish_run(run, db::RunStatus::kComplete, common::realtime_ns());
  return run;
}

std::int64_t store_failed_campaign_run(const std::string& db_path) {
  db::Store store = db::Store::open(db_path, common::realtime_ns());
  db::RunStart start;
  start.kind = db::RunKind::kRun;
  start.tool_version = "test";
  start.started_ns = common::realtime_ns();
  const std::int64_t run = store.begin_run(start);
  db::Link link;
  link.run_id = run;
  link.src_host = "web";
  link.src_comm = "client";
  link.dst_host = "app";
  link.dst_comm = "tier";
  link.dst_port = 9002;
  store.add_link(link);
  store.finish_run(run, db::RunStatus::kFailed, common::realtime_ns(),
                   "node app: inject.start refused");
  return run;
}

}  // namespace nabla::report::testing
