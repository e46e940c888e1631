#include "nabla/coordinator/demo.hh"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "nabla/campaign/spec.hh"
#include "nabla/common/clock.hh"
#include "nabla/common/link_label.hh"
#include "nabla/common/netns.hh"
#include "nabla/common/stop_signals.hh"
#include "nabla/common/units.hh"
#include "nabla/coordinator/report_command.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/db/reads.hh"
#include "nabla/db/store.hh"
#include "nabla/testbed/demo_load.hh"

namespace nabla::coordinator {

using testbed::DemoCampaign;
using testbed::TruthTable;
using tier::ServiceModel;
using tier::TierDef;

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Waits for a child, forwarding a caught signal to it once (SIGTERM, after
// a short grace in case the terminal's SIGINT already reached it) and
// killing it after `limit`. Returns its exit code.
int supervise(common::ChildProcess& child, std::chrono::seconds limit,
              const common::StopSignals& stop) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::optional<std::chrono::steady_clock::time_point> stop_sent;
  for (;;) {
    const int rc = child.wait(std::chrono::milliseconds(200));
    if (rc != -1) return rc;
    const auto now = std::chrono::steady_clock::now();
    if ((stop.stopped() || now > deadline) && !stop_sent) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      if (child.running()) child.signal(SIGTERM);
      stop_sent = now;
    }
    if (stop_sent && now - *stop_sent > std::chrono::seconds(20)) {
      child.signal(SIGKILL);
      return child.wait(std::chrono::seconds(5));
    }
  }
}

std::string tail_of_file(const std::string& path, std::size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (std::size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size();
       ++i)
    out += "  | " + lines[i] + "\n";
  return out;
}

// Number of gradients with a non-zero truth the campaign will measure.
std::size_t nonzero_truths(const TruthTable& truth,
                           const std::optional<std::vector<std::string>>& only) {
  std::size_t n = 0;
  for (const auto& [label, by_type] : truth) {
    if (only && std::find(only->begin(), only->end(), label) == only->end()) continue;
    for (const auto& [type, g] : by_type) n += g != 0;
  }
  return n;
}

}  // namespace

DemoCampaign demo_campaign(const ServiceModel& model, bool quick, std::uint64_t seed,
                           const std::string& schedule) {
  DemoCampaign c;
  c.schedule = schedule;
  c.name = quick ? "demo-quick" : "demo";
  c.seed = seed;
  // 600 requests/s over an even mix: the least frequent type (25%) fills a
  // bin of k requests in ~k*6.7 ms, so training plus one active phase per
  // link fits the time budget, and the machine (2 shared cores here) keeps
  // enough idle CPU for the injector to release packets on time. 64
  // connections keep the client's own backlog empty: with a few connections
  // at one request each, a delayed /view would hold a connection and make
  // every other type wait behind it at the client, coupling all types.
  c.rate_rps = 600;
  c.connections = 64;
  // The amplitude cap only binds on a busy machine, where d * sigma(FFT^0)
  // exceeds it (on a quiet one training picks ~4 ms and every gradient
  // lands within a few percent); the adaptive sub-phase then divides it by
  // the rough gradient (3 for /view on app -> db), so the cap sets the SNR.
  // Too low a cap leaves app -> db at a low SNR on a loaded machine; too high
  // a cap swings web -> app enough to bias its gradient low; 15 ms sits
  // between. The tiers' 32 workers do not queue at it.
  c.max_amplitude = "15ms";
  if (quick) {
    const TierDef& web = model.tier("web");
    const TierDef& db = model.tier("db");
    c.only_links = std::vector<std::string>{
        common::campaign_link_label("tcp", web.host, 0, model.tier("app").host,
                                    model.tier("app").port),
        common::campaign_link_label("tcp", model.tier("app").host, 0, db.host, db.port)};
    // N = 128 with M = 5 training chunks instead of the full demo's 256 and 7:
    // the gradient's noise falls with sqrt(N), while M only sets how well
    // the training spectrum (amplitude choice, FFT^0) is known.
    c.bins = 128;
    c.chunks = 5;
    c.requests_per_bin = 4;
    c.discover_for = "1500ms";
    // No repeated phases: --quick is the CI smoke test and must stay inside
    // its 2 minutes, and a repeat costs ~11 s per link, more than that budget
    // can spare.
    c.repeats = 0;
  } else {
    // N = 256: a gradient's noise falls with sqrt(N), and N = 128 leaves too
    // little margin for all 32 gradients to stay within +-10% when an active
    // phase meets a noisy spell. M = 7 keeps the training at 7 x 256 bins; the
    // baseline spectrum's share of the noise is 1/M. About 7.5 minutes in all,
    // inside the full demo's 10-minute budget.
    c.bins = 256;
    c.chunks = 7;
    c.requests_per_bin = 5;
    c.discover_for = "2s";
    // No [gradient] precision: with it (0.1, 3 repeats) the narrower CIs
    // of a busy machine excluded the truth of app <-> db:8082 /view, which
    // read 3.05-3.12 there (docs/method.md, "Where the demo's bias under
    // load came from").
  }
  if (schedule == "simultaneous") {
    c.chunks = static_cast<int>(campaign::kSimultaneousChunks);
    // --quick keeps N = 256 too: both links' two phases then cost what one
    // sequential link's phases do, and at N = 128 most of the quick demo's
    // gradients came out too imprecise for the acceptance test's +-10%
    // check (3 of 8 in one run).
    c.bins = 256;
  }
  const std::size_t k =
      std::max<std::size_t>(1, nonzero_truths(testbed::true_gradients(model), c.only_links));
  c.confidence = 1.0 - 0.05 / static_cast<double>(k);
  return c;
}

namespace {

// One measurement point of `nabla load --json`: the object itself (one
// rate), or the first point of a sweep ({"sweep": [...]}).
const json& load_point(const json& j) {
  if (j.contains("sweep") && j["sweep"].is_array() && !j["sweep"].empty()) return j["sweep"][0];
  return j;
}

std::string ms(const json& v) {
  return v.is_number() ? format_number(v.get<double>() / 1e6, 4) : std::string("-");
}

}  // namespace

// "nabla load: verdict ok at 998 requests/s; p99 1.23 ms, 95% CI [1.2, 1.3] ms"
// (plus the reasons of an n/a) from `nabla load --json` output.
std::string summarize_load(const json& j) {
  const json& p = load_point(j);
  std::string s = "  nabla load: verdict " + p.value("verdict", std::string("?"));
  if (p.contains("throughput_rps") && p["throughput_rps"].is_number()) {
    s += " at " + format_number(p["throughput_rps"].get<double>(), 4) + " requests/s";
  }
  if (p.contains("percentiles")) {
    for (const json& x : p["percentiles"]) {
      if (!x.contains("p") || (x["p"] != 99 && x["p"] != 90)) continue;
      s += "; p" + format_number(x["p"].get<double>()) + " " +
           ms(x.value("value_ns", json(nullptr))) + " ms, 95% CI [" +
           ms(x.value("ci_low_ns", json(nullptr))) + ", " +
           ms(x.value("ci_high_ns", json(nullptr))) + "] ms";
    }
  }
  if (p.contains("reasons") && p["reasons"].is_array()) {
    for (const json& reason : p["reasons"]) {
      if (reason.is_string()) s += "\n    reason: " + reason.get<std::string>();
    }
  }
  // Each point carries the run it was stored in (a sweep's points all the same).
  if (p.contains("run_id")) s += "\n    stored as run " + p["run_id"].dump();
  return s;
}

namespace {

std::string load_summary(const testbed::DemoLoadResult& r) {
  if (r.skipped) return "  nabla load: skipped (this build has no `nabla load`)";
  if (!r.ran) return "  nabla load: failed (exit " + std::to_string(r.exit_code) + ")";
  return summarize_load(r.json);
}

// One `nabla demo` invocation: its options, where it prints, and the result
// its steps fill in.
struct DemoRun {
  const DemoOptions& opt;
  const common::StopSignals& stop;
  std::ostream& out;
  std::ostream& err;
  std::ostream& log;  // progress: stderr with --json, else stdout
  std::string db_path;
  std::int64_t started_ns = 0;
  json result;
  int exit_code = 0;
};

std::string write_campaign_file(const testbed::DemoTestbed& tb, const testbed::DemoCampaign& c,
                                const DemoOptions& opt) {
  const std::string toml_path = tb.work_dir() + "/campaign.toml";
  {
    std::ofstream f(toml_path);
    f << testbed::demo_campaign_toml(tb, c);
    if (!f) throw std::runtime_error("cannot write " + toml_path);
  }
  if (opt.keep_logs)
    fs::copy_file(toml_path, *opt.keep_logs + "/campaign.toml",
                  fs::copy_options::overwrite_existing);
  return toml_path;
}

// Runs `nabla run --kind demo` inside the client namespace and returns the
// id of the complete run it stored; throws when it stored none or failed.
std::int64_t run_campaign(DemoRun& d, const testbed::DemoBinaries& bin, testbed::DemoTestbed& tb,
                          const testbed::DemoCampaign& campaign) {
  const std::string toml_path = write_campaign_file(tb, campaign, d.opt);
  d.log << "nabla demo: running the campaign (" << (d.opt.quick ? "quick: 2 links" : "every link")
        << ", " << campaign.bins << " bins, " << campaign.rate_rps << " requests/s, per-gradient "
        << format_number(campaign.confidence * 100, 4) << "% CIs)...\n"
        << std::flush;
  const std::string run_log = tb.log_dir() + "/nabla-run.log";
  int run_rc = -1;
  {
    common::ChildProcess run({bin.nabla, "run", toml_path, "--db", d.db_path, "--kind", "demo"},
                             &tb.testbed().host(tb.model().client_host).ns,
                             d.opt.json ? run_log : std::string());
    run_rc = supervise(run, std::chrono::seconds(d.opt.quick ? 240 : 900), d.stop);
  }
  d.result["nabla_run_exit"] = run_rc;
  if (d.stop.stopped()) throw testbed::DemoInterrupted();
  std::optional<db::RunInfo> run;
  if (fs::exists(d.db_path)) {
    db::Store store = db::Store::open(d.db_path, common::realtime_ns());
    run = db::newest_run_of_kind(store.database(), db::RunKind::kDemo, d.started_ns);
  }
  if (!run) {
    if (d.opt.json) d.err << tail_of_file(run_log, 20);
    throw std::runtime_error("`nabla run` (exit " + std::to_string(run_rc) +
                             ") stored no demo run in " + d.db_path);
  }
  const std::string status(db::to_string(run->status));
  d.result["run_id"] = run->id;
  d.result["status"] = status;
  if (run_rc != 0 || run->status != db::RunStatus::kComplete) {
    if (d.opt.json) d.err << tail_of_file(run_log, 20);
    throw std::runtime_error("`nabla run` failed (exit " + std::to_string(run_rc) + "), run " +
                             std::to_string(run->id) + " " + status +
                             (run->error ? ": " + *run->error : ""));
  }
  return run->id;
}

// The run's gradients beside the truth of the links the campaign measured.
void check_gradients(DemoRun& d, const testbed::DemoTestbed& tb,
                     const testbed::DemoCampaign& campaign, std::int64_t run_id) {
  std::vector<GradientCheck> checks;
  {
    db::Store store = db::Store::open(d.db_path, common::realtime_ns());
    testbed::TruthTable truth = testbed::true_gradients(tb.model());
    if (campaign.only_links) {
      std::erase_if(truth, [&](const auto& kv) {
        return std::find(campaign.only_links->begin(), campaign.only_links->end(), kv.first) ==
               campaign.only_links->end();
      });
    }
    checks = check_run_gradients(store.database(), run_id, truth);
  }
  const auto passed =
      std::count_if(checks.begin(), checks.end(), [](const GradientCheck& c) { return c.pass; });
  d.result["gradients"] = gradient_checks_json(checks);
  d.result["passed"] = passed;
  d.result["failed"] = static_cast<std::int64_t>(checks.size()) - passed;
  if (!d.opt.json) {
    d.out << "\nnabla demo: measured gradients beside the truth (run " << run_id
          << "; PASS = within 10% of max(truth, 1), CI contains the truth, the link's "
             "throughput not changed by 5% or more)\n";
    print_gradient_checks(checks, d.out);
    d.out << passed << "/" << checks.size() << " PASS\n" << std::flush;
  }
  if (passed != static_cast<std::int64_t>(checks.size())) d.exit_code = kDemoExitAccuracyFail;
}

void run_load_step(DemoRun& d, const testbed::DemoBinaries& bin, testbed::DemoTestbed& tb) {
  d.log << "\nnabla demo: one tail-latency measurement (nabla load)...\n" << std::flush;
  const testbed::DemoLoadResult load =
      testbed::run_demo_load(bin, tb, d.db_path, d.opt.quick, [&d] { return d.stop.stopped(); });
  d.result["load"] = load.json;
  if (d.stop.stopped()) throw testbed::DemoInterrupted();
  if (!d.opt.json) d.out << load_summary(load) << "\n";
  if (!load.ran) d.exit_code = d.exit_code ? d.exit_code : 1;
}

// --report FILE: the campaign run's page. A page that cannot be written is
// reported and leaves the demo's result as it is.
void write_demo_report(DemoRun& d, std::int64_t run_id) {
  try {
    d.result["report"] = write_report({{run_id}, d.db_path, *d.opt.report_path}, d.log);
  } catch (const std::exception& e) {
    d.err << "nabla demo: cannot write the report: " << e.what() << "\n";
  }
}

// Steps 1 to 4 of demo.hh; the testbed goes (step 5) when this returns or
// throws.
void run_demo_steps(DemoRun& d) {
  const testbed::DemoBinaries bin = testbed::DemoBinaries::find();
  common::sweep_stale_namespaces();
  testbed::DemoTestbedOptions tbo;
  tbo.seed = d.opt.seed;
  tbo.log_dir = d.opt.keep_logs;
  tbo.interrupted = [&d] { return d.stop.stopped(); };
  d.log << "nabla demo: building the testbed (hosts client, web, app, db) and starting the "
           "tiers and both daemons on every host...\n"
        << std::flush;
  testbed::DemoTestbed tb(bin, testbed::rubis_demo_service(), tbo);
  for (const tier::TierDef& t : tb.model().tiers) {
    d.log << "  tier " << t.name << " on " << t.host << " " << tb.address(t.host) << ":" << t.port
          << "\n";
  }
  testbed::DemoCampaign campaign =
      demo_campaign(tb.model(), d.opt.quick, d.opt.seed, d.opt.schedule);
  campaign.verify = d.opt.verify;
  campaign.amplitudes = d.opt.amplitudes;
  const std::int64_t run_id = run_campaign(d, bin, tb, campaign);
  check_gradients(d, tb, campaign, run_id);
  run_load_step(d, bin, tb);
  const std::int64_t ids[] = {run_id};
  if (d.opt.report_path) write_demo_report(d, run_id);
  d.log << "\nnabla demo: stored in " << d.db_path << " (run " << run_id << "). Try:\n"
        << "  nabla runs show " << run_id << " --db " << d.db_path << "\n"
        << "  " << report_command_line(ids, d.db_path) << "\n"
        << "  nabla predict --run " << run_id << " --db " << d.db_path
        << " --set \"app->db=+10ms\"\n"
        << "nabla demo: removing the testbed (namespaces, daemons, tiers, key)...\n"
        << std::flush;
}

void report_interrupted(DemoRun& d) {
  // `nabla run` stores its run as failed when it can stop in time; if it
  // had to be killed, opening the database read-write marks the run whose
  // process is gone as failed (db::Store::recover_interrupted_runs).
  try {
    if (fs::exists(d.db_path)) db::Store::open(d.db_path, common::realtime_ns());
  } catch (const std::exception& e) {
    d.err << "nabla demo: cannot update " << d.db_path << ": " << e.what() << "\n";
  }
  d.err << "nabla demo: interrupted; cleaned up\n";
  d.exit_code = kDemoExitInterrupted;
}

}  // namespace

int run_demo(const DemoOptions& opt, std::ostream& out, std::ostream& err) {
  if (::geteuid() != 0) {
    err << "nabla demo: needs root (network namespaces, iptables, NFQUEUE); run it as root, "
           "e.g. sudo nabla demo\n";
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  // Caught, not blocked, for the demo's lifetime: the testbed's processes
  // must not inherit a blocked SIGTERM. Cleanup then runs instead of the
  // process dying with namespaces and daemons behind.
  const common::StopSignals signals(common::StopSignals::Mode::kHandle, {SIGINT, SIGTERM, SIGHUP});
  const std::string db_path = fs::absolute(opt.db_path).string();
  DemoRun d{opt,
            signals,
            out,
            err,
            opt.json ? err : out,
            db_path,
            common::realtime_ns(),
            {{"db", db_path}, {"quick", opt.quick}, {"seed", opt.seed}},
            0};
  try {
    run_demo_steps(d);
  } catch (const testbed::DemoInterrupted&) {
    report_interrupted(d);
  } catch (const std::exception& e) {
    err << "nabla demo: error: " << e.what() << "\n";
    d.exit_code = 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  d.result["exit_code"] = d.exit_code;
  d.result["duration_s"] = seconds;
  if (opt.json) {
    out << d.result.dump(2) << "\n";
  } else if (d.exit_code == 0 || d.exit_code == kDemoExitAccuracyFail) {
    out << "nabla demo: done in " << format_number(seconds, 3) << " s"
        << (d.exit_code ? " (some gradients FAIL: exit 3)" : "") << "\n";
  }
  return d.exit_code;
}

void register_demo_command(CLI::App& app) {
  auto opts = std::make_shared<DemoOptions>();
  auto code = std::make_shared<int>(0);
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "run the whole tool on this machine: testbed, gradients against the truth, tail "
      "latency (root)");
  cmd->add_flag("--quick", opts->quick, "Two links (about 1.5 minutes; the CI smoke test)");
  cmd->add_option("--db", opts->db_path, "Run history database")->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print one JSON document (progress goes to stderr)");
  cmd->add_option("--keep-logs", opts->keep_logs,
                  "Keep the daemons', tiers' and nabla run's logs and the campaign file in DIR");
  cmd->add_option("--seed", opts->seed, "Master seed of the campaign and the tiers")
      ->capture_default_str();
  cmd->add_option("--schedule", opts->schedule,
                  "Measure the links one after another or all at once (docs/method.md)")
      ->check(CLI::IsMember({"sequential", "simultaneous"}))
      ->capture_default_str();
  cmd->add_option("--report", opts->report_path,
                  "Also write the campaign run's HTML report (nabla report) to FILE");
  cmd->add_flag("--verify", opts->verify,
                "After each link's active phase, hold its amplitude on, off, on, off and "
                "report that step's gradient beside the spectral one (implies --schedule "
                "sequential)");
  cmd->add_option("--amplitudes", opts->amplitudes,
                  "Measure every link at each of these amplitudes, e.g. 500us,1ms,4ms (implies "
                  "--schedule sequential)")
      ->delimiter(',');
  cmd->callback([opts, code, cmd] {
    opts->schedule_given = cmd->count("--schedule") > 0;
    if (opts->verify || !opts->amplitudes.empty()) {
      if (opts->schedule_given && opts->schedule != "sequential") {
        throw CLI::ValidationError("--verify and --amplitudes need --schedule sequential");
      }
      opts->schedule = "sequential";
    }
    for (const std::string& a : opts->amplitudes) {
      try {
        if (common::parse_duration_ns(a) <= 0) throw std::invalid_argument("must be > 0");
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("--amplitudes: '" + a + "': " + e.what());
      }
    }
    *code = run_demo(*opts, std::cout, std::cerr);
    if (*code != 0) throw CLI::RuntimeError(*code);
  });
}

}  // namespace nabla::coordinator
