#include "nabla/coordinator/demo_load.hh"

#include <csignal>
#include <fstream>
#include <sstream>

#include "nabla/common/netns.hh"
#include "nabla/coordinator/text_table.hh"

namespace nabla::coordinator {
namespace {

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string mix_flag(const ServiceModel& model) {
  std::string s;
  for (const auto& [url, weight] : model.mix) {
    if (!s.empty()) s += ',';
    std::ostringstream w;
    w << weight;
    s += url + "=" + w.str();
  }
  return s;
}

}  // namespace

DemoLoadResult run_demo_load(const DemoBinaries& bin, DemoTestbed& tb, const std::string& db_path,
                             bool quick, const std::function<bool()>& interrupted) {
  DemoLoadResult r;
  const common::NetNamespace& client = tb.testbed().host(tb.model().client_host).ns;
  // Older builds have no `nabla load`: say so instead of failing the demo.
  const common::CommandResult help = common::run_command({bin.nabla, "load", "--help"}, &client);
  if (help.exit_code != 0) {
    r.ran = true;
    r.json = {{"skipped", "this nabla has no `load` command"}};
    r.summary = "  nabla load: skipped (this build has no `nabla load`)";
    return r;
  }
  const std::string out_path = tb.work_dir() + "/nabla-load.json";
  const std::string err_path = tb.log_dir() + "/nabla-load.log";
  std::vector<std::string> argv = {bin.nabla, "load",  "--target", tb.target(),
                                   "--rate",  "1000",  "--mix",    mix_flag(tb.model()),
                                   "--db",    db_path, "--json"};
  (void)quick;
  int rc = -1;
  {
    common::ChildProcess load(argv, &client, out_path);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
    for (;;) {
      rc = load.wait(std::chrono::milliseconds(200));
      if (rc != -1) break;
      if (interrupted() || std::chrono::steady_clock::now() > deadline) {
        load.signal(SIGTERM);
        rc = load.wait(std::chrono::seconds(10));
        break;
      }
    }
  }
  const std::string text = read_file(out_path);
  { std::ofstream(err_path) << text; }
  const auto brace = text.find('{');
  json j =
      brace == std::string::npos ? json(nullptr) : json::parse(text.substr(brace), nullptr, false);
  if (rc != 0 || j.is_discarded() || j.is_null()) {
    r.json = {{"error", "nabla load exited " + std::to_string(rc)}, {"output", text}};
    r.summary = "  nabla load: failed (exit " + std::to_string(rc) + ")";
    return r;
  }
  r.ran = true;
  r.json = j;
  r.summary = "  nabla load: " + j.dump();
  return r;
}

}  // namespace nabla::coordinator
