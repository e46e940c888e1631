#include "stored_runs.hh"

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "fake_environment.hh"
#include "nabla/campaign/campaign.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/link_label.hh"
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

std::int64_t store_load_sweep_run(const std::string& db_path, bool checks) {
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
    if (!checks) continue;
    // The controller's checks: all pass at 1000 rps; at 4000 the series is
    // not iid, so the CI width is not reached either.
    const bool ok = point == 0;
    const struct {
      const char* name;
      const char* outcome;
      std::optional<double> statistic, threshold, p_value;
      std::int64_t samples;
    } rows[] = {{"rate reached", "pass", -0.01, 0.02, std::nullopt, 1000},
                {"Anderson-Darling (send gaps exponential)", "pass", 0.8, 1.957, std::nullopt, 999},
                {"late sends", "pass", 0.001 * point, 0.02, std::nullopt, 1000},
                {"iid (lag-1 Spearman)", ok ? "pass" : "fail", ok ? 0.02 : 0.4, 0.05,
                 ok ? 0.61 : 0.0001, 500},
                {"stationary (ADF)", "pass", -12.5, 0.05, 0.001, 500},
                {"CI width (p99)", ok ? "pass" : "fail", ok ? 22'000.0 : 90'000.0, 50'000.0,
                 std::nullopt, 500}};
    std::int64_t position = 0;
    for (const auto& r : rows) {
      db::LoadCheck c;
      c.run_id = run;
      c.rate_rps = rates[point];
      c.position = position++;
      c.name = r.name;
      c.outcome = r.outcome;
      c.statistic = r.statistic;
      c.threshold = r.threshold;
      c.p_value = r.p_value;
      c.samples = r.samples;
      c.detail = "stored by the test";
      store.add_load_check(c);
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

std::int64_t store_experiment_run(const std::string& db_path) {
  db::Store store = db::Store::open(db_path, common::realtime_ns());
  db::RunStart start;
  start.kind = db::RunKind::kRun;
  start.tool_version = "test";
  start.started_ns = common::realtime_ns();
  const std::int64_t run = store.begin_run(start);
  db::Experiment e;
  e.run_id = run;
  e.name = "db-slow";
  e.links_json = R"(["tcp app -> db:5432"])";
  e.started_ns = start.started_ns;
  e.fault_start_ns = e.started_ns + 2'000'000'000;
  e.fault_end_ns = e.started_ns + 5'000'000'000;
  e.ended_ns = e.started_ns + 7'000'000'000;
  e.verdict = "fail";
  e.mean_delay_ns = 10'000'000;
  e.observed_change_ns = 12'500'000;
  e.observed_ci_low_ns = 11'000'000;
  e.observed_ci_high_ns = 14'000'000;
  const std::int64_t id = store.add_experiment(e);
  const struct {
    const char* window;
    const char* term;
    double bound, value;
    const char* verdict;
  } checks[] = {{"baseline", "p99", 20e6, 8.5e6, "pass"}, {"baseline", "errors", 0.01, 0, "pass"},
                {"fault", "p99", 20e6, 23.25e6, "fail"},  {"fault", "errors", 0.01, 0.002, "pass"},
                {"recovery", "p99", 20e6, 9e6, "pass"},   {"recovery", "errors", 0.01, 0, "pass"}};
  for (const auto& c : checks) {
    db::ExperimentCheck row;
    row.experiment_id = id;
    row.window = c.window;
    row.term = c.term;
    row.bound = c.bound;
    row.value = c.value;
    row.ci_low = c.value * 0.9;
    row.ci_high = c.value * 1.1;
    row.verdict = c.verdict;
    row.samples = 3000;
    row.scheduled = 3000;
    store.add_experiment_check(row);
  }
  store.finish_run(run, db::RunStatus::kComplete, common::realtime_ns());
  return run;
}

namespace {

// A gradient that depends on the link's place and the type, so labels differ.
double stored_gradient(std::size_t link, std::size_t type) {
  return 0.25 * static_cast<double>((link * 3 + type * 5) % 9);
}

// A step-oracle estimate `offset` away from the spectral one, CI +-0.05.
void add_step(db::Gradient& g, double offset) {
  g.step_value = g.value + offset;
  g.step_ci_low = *g.step_value - 0.05;
  g.step_ci_high = *g.step_value + 0.05;
}

void add_breaking_sweep(db::Store& store, const db::Gradient& g, std::int64_t gradient_id) {
  const std::pair<std::int64_t, double> points[] = {
      {2'000'000, g.value}, {4'000'000, g.value}, {8'000'000, g.value * 1.5 + 1.0}};
  for (const auto& [amplitude, value] : points) {
    db::GradientAmplitude a;
    a.run_id = g.run_id;
    a.gradient_id = gradient_id;
    a.amplitude_ns = amplitude;
    a.value = value;
    a.ci_low = value - 0.02;
    a.ci_high = value + 0.02;
    store.add_gradient_amplitude(a);
  }
}

}  // namespace

std::int64_t store_topology_run(const std::string& db_path, const TopologyRun& topology) {
  db::Store store = db::Store::open(db_path, common::realtime_ns());
  nlohmann::json truth = nlohmann::json::object();
  for (std::size_t i = 0; i < topology.links.size(); ++i) {
    const TopologyLink& l = topology.links[i];
    const std::string label =
        common::campaign_link_label("tcp", l.src_host, l.src_port, l.dst_host, l.dst_port);
    for (std::size_t t = 0; t < topology.types.size(); ++t) {
      truth[label][topology.types[t]] = stored_gradient(i, t);
    }
  }
  db::RunStart start;
  start.kind = db::RunKind::kDemo;
  start.config_json = nlohmann::json{{"name", "report-topology"}, {"truth", truth}}.dump();
  start.tool_version = "test";
  start.seed = 11;
  start.started_ns = common::realtime_ns();
  const std::int64_t run = store.begin_run(start);
  for (const std::string& host : topology.hosts) store.add_node({run, host, {}, {}, {}});
  std::size_t misses = topology.truth_misses;
  std::size_t steps_disagreeing = topology.step_disagreements;
  for (std::size_t i = 0; i < topology.links.size(); ++i) {
    const TopologyLink& t = topology.links[i];
    db::Link link;
    link.run_id = run;
    link.src_host = t.src_host;
    link.src_port = t.src_port;
    link.dst_host = t.dst_host;
    link.dst_port = t.dst_port;
    const std::int64_t link_id = store.add_link(link);
    std::optional<std::int64_t> phase_id;
    if (topology.repeated_phase && i == 0) {
      for (int attempt = 0; attempt < 2; ++attempt) {
        db::Phase phase;
        phase.run_id = run;
        phase.kind = db::PhaseKind::kActive;
        phase.link_id = link_id;
        phase.started_ns = start.started_ns + attempt * 1'000'000'000LL;
        phase.ended_ns = phase.started_ns + 1'000'000'000LL;
        phase_id = store.add_phase(phase);
      }
    }
    for (std::size_t type = 0; type < topology.types.size(); ++type) {
      db::Gradient g;
      g.run_id = run;
      g.link_id = link_id;
      g.type_id = store.transaction_type_id(topology.types[type]);
      g.phase_id = phase_id;
      g.value = stored_gradient(i, type) + (misses > 0 ? 0.5 : 0.01);
      if (misses > 0) --misses;
      g.ci_low = g.value - 0.05;
      g.ci_high = g.value + 0.05;
      // Each later link's phase moved the responses more: 0.1 ms per link.
      g.perturbation_ns = 100'000.0 * static_cast<double>(i + 1);
      if (topology.steps) add_step(g, steps_disagreeing > 0 ? 1.0 : 0.0);
      if (steps_disagreeing > 0) --steps_disagreeing;
      const std::int64_t gradient_id = store.add_gradient(g);
      if (topology.sweep && i == 0 && type == 0) add_breaking_sweep(store, g, gradient_id);
    }
  }
  store.finish_run(run, db::RunStatus::kComplete, common::realtime_ns());
  return run;
}

TopologyRun demo_shaped_topology() {
  TopologyRun t;
  t.hosts = {"client", "web", "app", "db"};
  t.links = {{"client", 0, "web", 8080}, {"web", 8080, "client", 0}, {"web", 0, "app", 8081},
             {"app", 8081, "web", 0},    {"app", 0, "db", 8082},     {"db", 8082, "app", 0},
             {"app", 0, "db", 8083},     {"db", 8083, "app", 0}};
  t.types = {"/auth", "/bid", "/browse", "/view"};
  t.truth_misses = 9;
  return t;
}

TopologyRun wide_topology() {
  TopologyRun t;
  t.hosts = {"lb", "web1", "web2", "app", "db"};
  const TopologyLink connections[] = {{"lb", 0, "web1", 8080},  {"lb", 0, "web2", 8080},
                                      {"web1", 0, "app", 9000}, {"web2", 0, "app", 9000},
                                      {"app", 0, "db", 5432},   {"app", 0, "db", 6379},
                                      {"web1", 0, "db", 6379},  {"web2", 0, "db", 6379}};
  for (const TopologyLink& c : connections) {
    t.links.push_back(c);
    t.links.push_back({c.dst_host, c.dst_port, c.src_host, c.src_port});
  }
  t.types = {"/checkout", "/search", "/view"};
  return t;
}

}  // namespace nabla::report::testing
