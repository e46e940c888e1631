#include "nabla/coordinator/demo.hh"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "nabla/common/clock.hh"
#include "nabla/common/netns.hh"
#include "nabla/coordinator/demo_load.hh"
#include "nabla/coordinator/predict.hh"
#include "nabla/coordinator/text_table.hh"
#include "nabla/db/store.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int signo) {
  g_signal = signo;
}

// Catches SIGINT, SIGTERM and SIGHUP for the demo's lifetime (so cleanup
// runs instead of the process dying with namespaces and daemons behind),
// restoring the previous handlers afterwards.
class SignalGuard {
 public:
  SignalGuard() {
    g_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalGuard() {
    for (std::size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

bool interrupted() {
  return g_signal != 0;
}

// Waits for a child, forwarding a caught signal to it once (SIGTERM, after
// a short grace in case the terminal's SIGINT already reached it) and
// killing it after `limit`. Returns its exit code.
int supervise(common::ChildProcess& child, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::optional<std::chrono::steady_clock::time_point> stop_sent;
  for (;;) {
    const int rc = child.wait(std::chrono::milliseconds(200));
    if (rc != -1) return rc;
    const auto now = std::chrono::steady_clock::now();
    if ((interrupted() || now > deadline) && !stop_sent) {
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

std::string fmt(std::optional<double> v, int digits = 3) {
  return v ? format_number(*v, digits) : "-";
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

DemoCampaign demo_campaign(const ServiceModel& model, bool quick, std::uint64_t seed) {
  DemoCampaign c;
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
        campaign_link_label("tcp", web.host, 0, model.tier("app").host, model.tier("app").port),
        campaign_link_label("tcp", model.tier("app").host, 0, db.host, db.port)};
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
  }
  const std::size_t k =
      std::max<std::size_t>(1, nonzero_truths(true_gradients(model), c.only_links));
  c.confidence = 1.0 - 0.05 / static_cast<double>(k);
  return c;
}

GradientCheck check_gradient(std::string link, std::string type, std::optional<double> truth,
                             std::optional<double> value, std::optional<double> ci_low,
                             std::optional<double> ci_high,
                             std::optional<double> link_throughput_change,
                             double link_throughput_se) {
  GradientCheck c;
  c.link = std::move(link);
  c.type = std::move(type);
  c.truth = truth;
  c.value = value;
  c.ci_low = ci_low;
  c.ci_high = ci_high;
  c.link_throughput_change = link_throughput_change;
  c.link_throughput_se = link_throughput_se;
  std::vector<std::string> why;
  if (!truth) {
    why.push_back("no truth for this link");
  } else if (!value) {
    why.push_back("not measured");
  } else {
    const double tol = 0.10 * std::max(std::abs(*truth), 1.0);
    if (std::abs(*value - *truth) > tol) why.push_back("off by more than 10%");
    if (!ci_low || !ci_high) {
      why.push_back("no CI");
    } else if (*truth < *ci_low || *truth > *ci_high) {
      why.push_back("CI misses the truth");
    }
    if (link_throughput_change &&
        std::abs(*link_throughput_change) - 2 * link_throughput_se >= 0.05)
      why.push_back("throughput changed by >= 5%");
  }
  for (const auto& w : why) c.why += (c.why.empty() ? "" : "; ") + w;
  c.pass = why.empty();
  return c;
}

namespace {

struct PhaseRate {
  std::int64_t n = 0;
  double rate_rps = 0;
};

// Completed requests per second over the intended send times of a phase
// kind (per link for active phases; link id 0 for training). A link whose
// active phase was repeated has several phases: their requests and spans add
// up (the gap between them is not part of any).
std::map<std::int64_t, PhaseRate> phase_rates(db::Database& db, std::int64_t run_id,
                                              const char* kind) {
  db::Statement st(db,
                   "SELECT coalesce(p.link_id, 0), count(*), min(s.send_ns), max(s.send_ns) "
                   "FROM samples s JOIN phases p ON p.id = s.phase_id "
                   "WHERE s.run_id = ? AND p.kind = ? GROUP BY p.id");
  st.bind(1, run_id);
  st.bind(2, kind);
  std::map<std::int64_t, std::pair<std::int64_t, double>> gaps;  // link -> (gaps, span s)
  std::map<std::int64_t, PhaseRate> out;
  while (st.step()) {
    const std::int64_t link = st.column_int64(0);
    const std::int64_t n = st.column_int64(1);
    out[link].n += n;
    if (n > 1) {
      gaps[link].first += n - 1;
      gaps[link].second += static_cast<double>(st.column_int64(3) - st.column_int64(2)) / 1e9;
    }
  }
  for (auto& [link, r] : out) {
    const auto& [n, span_s] = gaps[link];
    if (n > 0 && span_s > 0) r.rate_rps = static_cast<double>(n) / span_s;
  }
  return out;
}

}  // namespace

std::vector<GradientCheck> check_run_gradients(db::Database& db, std::int64_t run_id,
                                               const TruthTable& truth) {
  const auto training = phase_rates(db, run_id, "training");
  const auto active = phase_rates(db, run_id, "active");
  db::Statement st(db,
                   "SELECT l.proto, l.src_host, l.src_port, l.dst_host, l.dst_port, tt.name, "
                   "g.value, g.ci_low, g.ci_high, g.throughput_change, g.link_id FROM gradients g "
                   "JOIN links l ON l.id = g.link_id "
                   "JOIN transaction_types tt ON tt.id = g.type_id WHERE g.run_id = ?");
  st.bind(1, run_id);
  std::vector<GradientCheck> out;
  std::set<std::pair<std::string, std::string>> seen;
  while (st.step()) {
    const std::string label = campaign_link_label(
        st.column_text(0), st.column_text(1), static_cast<int>(st.column_int64(2)),
        st.column_text(3), static_cast<int>(st.column_int64(4)));
    const std::string type = st.column_text(5);
    std::optional<double> t;
    if (const auto l = truth.find(label); l != truth.end()) {
      if (const auto g = l->second.find(type); g != l->second.end()) t = g->second;
    }
    std::optional<double> change;
    double se = 0;
    const auto a = active.find(st.column_int64(10));
    const auto tr = training.find(0);
    if (a != active.end() && tr != training.end() && a->second.rate_rps > 0 &&
        tr->second.rate_rps > 0) {
      change = a->second.rate_rps / tr->second.rate_rps - 1;
      se = std::sqrt(1.0 / static_cast<double>(a->second.n) +
                     1.0 / static_cast<double>(tr->second.n));
    }
    seen.insert({label, type});
    GradientCheck c = check_gradient(label, type, t, st.column_double(6), st.optional_double(7),
                                     st.optional_double(8), change, se);
    c.throughput_change = st.optional_double(9);
    out.push_back(std::move(c));
  }
  for (const auto& [label, by_type] : truth) {
    for (const auto& [type, g] : by_type) {
      if (!seen.count({label, type}))
        out.push_back(
            check_gradient(label, type, g, std::nullopt, std::nullopt, std::nullopt, std::nullopt));
    }
  }
  std::sort(out.begin(), out.end(), [](const GradientCheck& a, const GradientCheck& b) {
    return std::tie(a.link, a.type) < std::tie(b.link, b.type);
  });
  return out;
}

namespace {

struct RunOutcome {
  std::int64_t run_id = 0;
  std::string status;
  std::optional<std::string> error;
};

std::optional<RunOutcome> find_demo_run(const std::string& db_path, std::int64_t since_ns) {
  if (!fs::exists(db_path)) return std::nullopt;
  db::Store store = db::Store::open(db_path, common::realtime_ns());
  db::Statement st(store.database(),
                   "SELECT id, status, error FROM runs WHERE kind = 'demo' AND started_ns >= ? "
                   "ORDER BY id DESC LIMIT 1");
  st.bind(1, since_ns);
  if (!st.step()) return std::nullopt;
  return RunOutcome{st.column_int64(0), st.column_text(1), st.optional_text(2)};
}

void print_checks(const std::vector<GradientCheck>& checks, std::ostream& out) {
  TextTable table({"link", "type", "truth", "measured", "CI low", "CI high", "thruput", "verdict"});
  for (const auto& c : checks) {
    table.add_row(
        {c.link, c.type, fmt(c.truth), fmt(c.value), fmt(c.ci_low), fmt(c.ci_high),
         c.link_throughput_change ? format_number(*c.link_throughput_change * 100, 2) + "%" : "-",
         c.pass ? "PASS" : "FAIL: " + c.why});
  }
  table.print(out);
}

json checks_json(const std::vector<GradientCheck>& checks) {
  json arr = json::array();
  auto opt = [](std::optional<double> v) { return v ? json(*v) : json(nullptr); };
  for (const auto& c : checks) {
    arr.push_back({{"link", c.link},
                   {"type", c.type},
                   {"truth", opt(c.truth)},
                   {"value", opt(c.value)},
                   {"ci_low", opt(c.ci_low)},
                   {"ci_high", opt(c.ci_high)},
                   {"throughput_change", opt(c.throughput_change)},
                   {"link_throughput_change", opt(c.link_throughput_change)},
                   {"link_throughput_se", c.link_throughput_se},
                   {"pass", c.pass},
                   {"why", c.why}});
  }
  return arr;
}

}  // namespace

int run_demo(const DemoOptions& opt, std::ostream& out, std::ostream& err) {
  if (::geteuid() != 0) {
    err << "nabla demo: needs root (network namespaces, iptables, NFQUEUE); run it as root, "
           "e.g. sudo nabla demo\n";
    return 1;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t started_ns = common::realtime_ns();
  SignalGuard signals;
  const std::string db_path = fs::absolute(opt.db_path).string();
  std::ostream& log = opt.json ? err : out;
  json result = {{"db", db_path}, {"quick", opt.quick}, {"seed", opt.seed}};
  int exit_code = 0;
  try {
    const DemoBinaries bin = DemoBinaries::find();
    common::sweep_stale_namespaces();
    DemoTestbedOptions tbo;
    tbo.seed = opt.seed;
    tbo.log_dir = opt.keep_logs;
    tbo.interrupted = interrupted;
    log << "nabla demo: building the testbed (hosts client, web, app, db) and starting the "
           "tiers and both daemons on every host...\n"
        << std::flush;
    DemoTestbed tb(bin, rubis_demo_service(), tbo);
    for (const TierDef& t : tb.model().tiers) {
      log << "  tier " << t.name << " on " << t.host << " " << tb.address(t.host) << ":" << t.port
          << "\n";
    }
    const DemoCampaign campaign = demo_campaign(tb.model(), opt.quick, opt.seed);
    const std::string toml_path = tb.work_dir() + "/campaign.toml";
    {
      std::ofstream f(toml_path);
      f << demo_campaign_toml(tb, campaign);
      if (!f) throw std::runtime_error("cannot write " + toml_path);
    }
    if (opt.keep_logs)
      fs::copy_file(toml_path, *opt.keep_logs + "/campaign.toml",
                    fs::copy_options::overwrite_existing);
    log << "nabla demo: running the campaign (" << (opt.quick ? "quick: 2 links" : "every link")
        << ", " << campaign.bins << " bins, " << campaign.rate_rps << " requests/s, per-gradient "
        << format_number(campaign.confidence * 100, 4) << "% CIs)...\n"
        << std::flush;
    const std::string run_log = tb.log_dir() + "/nabla-run.log";
    int run_rc = -1;
    {
      common::ChildProcess run({bin.nabla, "run", toml_path, "--db", db_path, "--kind", "demo"},
                               &tb.testbed().host(tb.model().client_host).ns,
                               opt.json ? run_log : std::string());
      run_rc = supervise(run, std::chrono::seconds(opt.quick ? 240 : 900));
    }
    result["nabla_run_exit"] = run_rc;
    if (interrupted()) throw DemoInterrupted();
    const auto outcome = find_demo_run(db_path, started_ns);
    if (!outcome) {
      if (opt.json) err << tail_of_file(run_log, 20);
      throw std::runtime_error("`nabla run` (exit " + std::to_string(run_rc) +
                               ") stored no demo run in " + db_path);
    }
    result["run_id"] = outcome->run_id;
    result["status"] = outcome->status;
    if (run_rc != 0 || outcome->status != "complete") {
      if (opt.json) err << tail_of_file(run_log, 20);
      throw std::runtime_error("`nabla run` failed (exit " + std::to_string(run_rc) + "), run " +
                               std::to_string(outcome->run_id) + " " + outcome->status +
                               (outcome->error ? ": " + *outcome->error : ""));
    }
    std::vector<GradientCheck> checks;
    {
      db::Store store = db::Store::open(db_path, common::realtime_ns());
      TruthTable truth = true_gradients(tb.model());
      if (campaign.only_links) {
        std::erase_if(truth, [&](const auto& kv) {
          return std::find(campaign.only_links->begin(), campaign.only_links->end(), kv.first) ==
                 campaign.only_links->end();
        });
      }
      checks = check_run_gradients(store.database(), outcome->run_id, truth);
    }
    const auto passed =
        std::count_if(checks.begin(), checks.end(), [](const GradientCheck& c) { return c.pass; });
    result["gradients"] = checks_json(checks);
    result["passed"] = passed;
    result["failed"] = static_cast<std::int64_t>(checks.size()) - passed;
    if (!opt.json) {
      out << "\nnabla demo: measured gradients beside the truth (run " << outcome->run_id
          << "; PASS = within 10% of max(truth, 1), CI contains the truth, the link's "
             "throughput not changed by 5% or more)\n";
      print_checks(checks, out);
      out << passed << "/" << checks.size() << " PASS\n" << std::flush;
    }
    if (passed != static_cast<std::int64_t>(checks.size())) exit_code = kDemoExitAccuracyFail;

    log << "\nnabla demo: one tail-latency measurement (nabla load)...\n" << std::flush;
    const DemoLoadResult load = run_demo_load(bin, tb, db_path, opt.quick, interrupted);
    result["load"] = load.json;
    if (interrupted()) throw DemoInterrupted();
    if (!opt.json) out << load.summary << "\n";
    if (!load.ran) exit_code = exit_code ? exit_code : 1;
    log << "\nnabla demo: stored in " << db_path << " (run " << outcome->run_id << "). Try:\n"
        << "  nabla runs show " << outcome->run_id << " --db " << db_path << "\n"
        << "  nabla predict --run " << outcome->run_id << " --db " << db_path
        << " --set \"app->db=+10ms\"\n"
        << "nabla demo: removing the testbed (namespaces, daemons, tiers, key)...\n"
        << std::flush;
  } catch (const DemoInterrupted&) {
    // `nabla run` stores its run as failed when it can stop in time; if it
    // had to be killed, opening the database read-write marks the run whose
    // process is gone as failed (db::Store::recover_interrupted_runs).
    try {
      if (fs::exists(db_path)) db::Store::open(db_path, common::realtime_ns());
    } catch (const std::exception& e) {
      err << "nabla demo: cannot update " << db_path << ": " << e.what() << "\n";
    }
    err << "nabla demo: interrupted; cleaned up\n";
    exit_code = kDemoExitInterrupted;
  } catch (const std::exception& e) {
    err << "nabla demo: error: " << e.what() << "\n";
    exit_code = 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result["exit_code"] = exit_code;
  result["duration_s"] = seconds;
  if (opt.json) {
    out << result.dump(2) << "\n";
  } else if (exit_code == 0 || exit_code == kDemoExitAccuracyFail) {
    out << "nabla demo: done in " << format_number(seconds, 3) << " s"
        << (exit_code ? " (some gradients FAIL: exit 3)" : "") << "\n";
  }
  return exit_code;
}

void register_demo_command(CLI::App& app) {
  auto opts = std::make_shared<DemoOptions>();
  auto code = std::make_shared<int>(0);
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Build a namespace testbed with a RUBiS-like service, measure every link gradient, "
      "compare with the truth, run one tail measurement, clean up (needs root)");
  cmd->add_flag(
      "--quick", opts->quick,
      "Two links, N = 128 bins, M = 5 training chunks (about 1.5 minutes; the CI smoke test)");
  cmd->add_option("--db", opts->db_path, "Run history database")->capture_default_str();
  cmd->add_flag("--json", opts->json, "Print one JSON document (progress goes to stderr)");
  cmd->add_option("--keep-logs", opts->keep_logs,
                  "Keep the daemons', tiers' and nabla run's logs and the campaign file in DIR");
  cmd->add_option("--seed", opts->seed, "Master seed of the campaign and the tiers")
      ->capture_default_str();
  cmd->callback([opts, code] {
    *code = run_demo(*opts, std::cout, std::cerr);
    if (*code != 0) throw CLI::RuntimeError(*code);
  });
}

}  // namespace nabla::coordinator
