// `nabla report` in a real browser: a page of three stored runs (a campaign
// against the campaign's fakes, a load sweep and a fault experiment,
// tests/unit/report/stored_runs.hh) written by the nabla binary, loaded from file:// by
// headless Chromium with the network disabled. Checks: the page's script
// reports success and no error reaches the console; one rendered chart per
// link and per expected plot; and a screenshot that is not blank.
//
// The link graph's readability, at 1400 px wide, on a run shaped like
// `nabla demo`'s (4 hosts, 8 links) and on a 5-host, 16-link one: a probe
// script added to a copy of the page reads every text element of the graph's
// SVG with getBoundingClientRect; no two may overlap, every host, process and
// link label must be there, and a screenshot of the whole page
// is written to the build directory (report-graph-*.png) to be looked at.
//
// Needs no root; needs `chromium` and Graphviz's `dot` (scripts/install-deps.sh). Without it the
// test skips, unless NABLA_REQUIRE_ROOT=1 (CI), where it fails.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "nabla/common/netns.hh"
#include "nabla/db/reads.hh"
#include "nabla/db/store.hh"
#include "nabla_test_support.hh"
#include "stored_runs.hh"

namespace {

namespace fs = std::filesystem;
using nabla::common::CommandResult;

// ---------------------------------------------------------------- PNG

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at])) << 24) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 1])) << 16) |
         (static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 2])) << 8) |
         static_cast<std::uint32_t>(static_cast<unsigned char>(s[at + 3]));
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

struct Image {
  std::uint32_t width = 0, height = 0, channels = 0;
  std::vector<std::uint8_t> pixels;  // rows of width * channels bytes
};

// Reverses the per-row filters of a non-interlaced 8-bit PNG (spec 9.2).
void unfilter(const std::vector<std::uint8_t>& raw, Image& img) {
  const std::size_t stride = img.width * img.channels;
  img.pixels.assign(stride * img.height, 0);
  for (std::size_t y = 0; y < img.height; ++y) {
    const std::uint8_t filter = raw[y * (stride + 1)];
    const std::uint8_t* in = &raw[y * (stride + 1) + 1];
    std::uint8_t* out = &img.pixels[y * stride];
    const std::uint8_t* up = y > 0 ? out - stride : nullptr;
    for (std::size_t x = 0; x < stride; ++x) {
      const int a = x >= img.channels ? out[x - img.channels] : 0;
      const int b = up ? up[x] : 0;
      const int c = up && x >= img.channels ? up[x - img.channels] : 0;
      const int predictor = filter == 1   ? a
                            : filter == 2 ? b
                            : filter == 3 ? (a + b) / 2
                            : filter == 4 ? paeth(a, b, c)
                                          : 0;
      out[x] = static_cast<std::uint8_t>(in[x] + predictor);
    }
  }
}

// Chromium's screenshots: 8-bit RGB or RGBA, not interlaced.
Image decode_png(const std::string& file) {
  if (file.size() < 8 || file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    throw std::runtime_error("not a PNG");
  }
  Image img;
  std::string idat;
  for (std::size_t at = 8; at + 8 <= file.size();) {
    const std::uint32_t length = be32(file, at);
    const std::string type = file.substr(at + 4, 4);
    if (type == "IHDR") {
      img.width = be32(file, at + 8);
      img.height = be32(file, at + 12);
      const int depth = file[at + 16], color = file[at + 17], interlace = file[at + 20];
      if (depth != 8 || (color != 2 && color != 6) || interlace != 0) {
        throw std::runtime_error("unsupported PNG format");
      }
      img.channels = color == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat += file.substr(at + 8, length);
    }
    at += 12 + length;
  }
  std::vector<std::uint8_t> raw((img.width * img.channels + 1) * img.height);
  uLongf raw_size = raw.size();
  if (::uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()),
                   idat.size()) != Z_OK ||
      raw_size != raw.size()) {
    throw std::runtime_error("PNG data does not inflate to its size");
  }
  unfilter(raw, img);
  return img;
}

// Standard deviation of the grey level (0-255) over the image.
double grey_stddev(const Image& img) {
  double sum = 0, sum_sq = 0;
  const std::size_t n = static_cast<std::size_t>(img.width) * img.height;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* p = &img.pixels[i * img.channels];
    const double grey = 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
    sum += grey;
    sum_sq += grey * grey;
  }
  const double mean = sum / static_cast<double>(n);
  return std::sqrt(std::max(0.0, sum_sq / static_cast<double>(n) - mean * mean));
}

// ---------------------------------------------------------------- browser

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class ReportInBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nabla-report-browser-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Headless Chromium with no network: every host resolves to nothing and
  // any request would go to a proxy on a closed port. A throwaway profile.
  CommandResult chromium(std::vector<std::string> args) {
    std::vector<std::string> argv{nabla::testing::program_on_path("chromium"),
                                  "--headless=new",
                                  "--no-sandbox",
                                  "--disable-gpu",
                                  "--no-first-run",
                                  "--disable-extensions",
                                  "--disable-background-networking",
                                  "--disable-component-update",
                                  "--disable-sync",
                                  "--proxy-server=127.0.0.1:9",
                                  "--host-resolver-rules=MAP * ~NOTFOUND",
                                  "--user-data-dir=" + (dir_ / "profile").string(),
                                  "--enable-logging=stderr",
                                  "--v=0",
                                  "--virtual-time-budget=30000",
                                  "--window-size=" + window_};
    argv.insert(argv.end(), args.begin(), args.end());
    return nabla::common::run_command(argv, nullptr, std::chrono::seconds(60));
  }

  fs::path dir_;
  std::string window_ = "1200,2000";
};

TEST_F(ReportInBrowser, RendersEveryChartOfAStoredRunOfflineWithoutErrors) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("chromium");
  const std::string db = (dir_ / "runs.db").string();
  const std::int64_t campaign = nabla::report::testing::store_fake_campaign_run(db);
  const std::int64_t load = nabla::report::testing::store_load_sweep_run(db);
  const std::int64_t experiment = nabla::report::testing::store_experiment_run(db);
  const std::string page = (dir_ / "report.html").string();
  const CommandResult wrote = nabla::common::run_command(
      {NABLA_PATH, "report", std::to_string(campaign), std::to_string(load),
       std::to_string(experiment), "--db", db, "-o", page});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.stderr_text;
  ASSERT_NE(wrote.stdout_text.find("wrote " + page), std::string::npos) << wrote.stdout_text;

  const auto started = std::chrono::steady_clock::now();
  const CommandResult dom = chromium({"--dump-dom", "file://" + page});
  ASSERT_EQ(dom.exit_code, 0) << dom.stderr_text;
  const std::string& html = dom.stdout_text;
  // The page's own verdict: every chart rendered, nothing thrown or logged.
  EXPECT_NE(html.find("data-nabla-render=\"ok\""), std::string::npos) << html.substr(
      html.find("nabla-errors") == std::string::npos ? 0 : html.find("nabla-errors"), 2000);
  EXPECT_EQ(count_of(dom.stderr_text, "Uncaught"), 0u) << dom.stderr_text;
  EXPECT_EQ(count_of(dom.stderr_text, ":CONSOLE"), 0u) << dom.stderr_text;
  // Two links: a series, a spectrum and a gradient chart each; one graph,
  // one injections chart; a load sweep: percentiles, load curve, histogram;
  // the experiment: one chart per SLO term (p99, errors).
  const std::pair<const char*, std::size_t> expected[] = {
      {"link-graph", 1},      {"link-series", 2},    {"link-spectrum", 2},
      {"link-gradients", 2},  {"injections", 1},     {"tail-percentiles", 1},
      {"tail-load-curve", 1}, {"tail-histogram", 1}, {"experiment-slo", 2}};
  std::size_t charts = 0;
  for (const auto& [kind, n] : expected) {
    EXPECT_EQ(count_of(html, std::string("data-kind=\"") + kind + "\""), n) << kind;
    charts += n;
  }
  EXPECT_EQ(count_of(html, "data-rendered=\"1\""), charts - 1);  // the graph is SVG from dot
  EXPECT_GE(count_of(html, "<svg"), charts);
  // The experiment: one section, its six window terms, the failed one marked.
  EXPECT_EQ(count_of(html, "class=\"experiment\""), 1u);
  EXPECT_EQ(count_of(html, "<tr data-verdict="), 6u);
  EXPECT_EQ(count_of(html, "<tr data-verdict=\"fail\""), 1u);
  // The sweep's curve: each percentile a line with its CI as a band.
  const auto curve = html.find("data-kind=\"tail-load-curve\"");
  ASSERT_NE(curve, std::string::npos);
  const std::string curve_box = html.substr(curve, html.find("nabla-chart", curve) - curve);
  EXPECT_NE(curve_box.find("mark-area"), std::string::npos);
  EXPECT_NE(curve_box.find("mark-line"), std::string::npos);
  // The controller's checks: six per rate point, the 4000 rps point failing
  // iid and the CI width.
  EXPECT_EQ(count_of(html, "class=\"tail-checks\""), 1u);
  EXPECT_EQ(count_of(html, "<tr data-outcome="), 12u);
  EXPECT_EQ(count_of(html, "<tr data-outcome=\"fail\""), 2u);
  EXPECT_EQ(count_of(html, "class=\"note tail-checks-note\""), 0u);

  const fs::path shot = fs::path(NABLA_SCREENSHOT_DIR) / "report-campaign-and-load.png";
  const CommandResult screenshot = chromium({"--screenshot=" + shot.string(), "file://" + page});
  ASSERT_EQ(screenshot.exit_code, 0) << screenshot.stderr_text;
  const Image img = decode_png(read_file(shot));
  EXPECT_EQ(img.width, 1200u);
  EXPECT_EQ(img.height, 2000u);
  // A blank (or single-colour) page has a deviation of 0; text and charts on
  // white give tens of grey levels.
  EXPECT_GT(grey_stddev(img), 8.0);
  std::cout << "chromium: two loads and renders in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::steady_clock::now() - started)
                   .count()
            << " ms\n";
}

// ---------------------------------------------------------------- graph

// Added to a copy of the page: once the page has rendered, the box of every
// text element of the link graph (CSS px), what it belongs to (a host's
// cluster, a process node, a link's edge by its id), and the graph's box,
// written as JSON into <pre id="graph-probe">.
constexpr const char* kGraphProbe = R"(<script>
(function () {
  function probe() {
    const root = document.documentElement;
    if (root.getAttribute('data-nabla-render') === 'pending') { setTimeout(probe, 50); return; }
    const svg = document.querySelector('.nabla-graph svg');
    const out = { render: root.getAttribute('data-nabla-render'), texts: [], graph: null,
      page_height: document.documentElement.scrollHeight };
    if (svg) {
      const g = svg.getBoundingClientRect();
      out.graph = { left: g.left, top: g.top + window.scrollY, right: g.right, bottom: g.bottom + window.scrollY };
      for (const t of svg.querySelectorAll('text')) {
        const r = t.getBoundingClientRect();
        const edge = t.closest('g.edge');
        out.texts.push({ text: t.textContent, left: r.left, top: r.top, right: r.right, bottom: r.bottom,
          kind: t.closest('g.cluster') ? 'host' : edge ? 'edge' : t.closest('g.node') ? 'node' : 'other',
          link: edge ? edge.id : '' });
      }
    }
    const pre = document.createElement('pre');
    pre.id = 'graph-probe';
    pre.textContent = JSON.stringify(out);
    document.body.append(pre);
  }
  probe();
})();
</script>)";

std::string unescape_html(std::string text) {
  const std::pair<const char*, const char*> entities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&nbsp;", " "}, {"&amp;", "&"}};
  for (const auto& [entity, c] : entities) {
    for (auto at = text.find(entity); at != std::string::npos; at = text.find(entity, at + 1)) {
      text.replace(at, std::string(entity).size(), c);
    }
  }
  return text;
}

struct TextBox {
  std::string text, kind, link;
  double left = 0, top = 0, right = 0, bottom = 0;
};

// Overlap of more than half a CSS pixel both ways (rounding aside).
bool overlap(const TextBox& a, const TextBox& b) {
  const double w = std::min(a.right, b.right) - std::max(a.left, b.left);
  const double h = std::min(a.bottom, b.bottom) - std::max(a.top, b.top);
  return w > 0.5 && h > 0.5;
}

std::string box_text(const TextBox& b) {
  std::ostringstream out;
  out << "[" << b.left << ", " << b.top << " .. " << b.right << ", " << b.bottom << "]";
  return out.str();
}

std::string process_name(const std::string& host, int port) {
  return host + ":" + (port > 0 ? std::to_string(port) : "*");
}

// What the graph must show: host names, process names, and per link (by its
// SVG id "link_N") the lines "type 1.23" of its stored gradients.
struct ExpectedGraph {
  std::set<std::string> hosts, processes;
  std::map<std::string, std::multiset<std::string>> link_lines;
};

ExpectedGraph expected_graph(const std::string& db_path, std::int64_t run) {
  nabla::db::Store store = nabla::db::Store::open_read_only(db_path);
  ExpectedGraph e;
  for (const nabla::db::LinkRow& l : nabla::db::run_links(store.database(), run)) {
    e.hosts.insert({l.link.src_host, l.link.dst_host});
    e.processes.insert(process_name(l.link.src_host, l.link.src_port));
    e.processes.insert(process_name(l.link.dst_host, l.link.dst_port));
    e.link_lines["link_" + std::to_string(l.id)];
  }
  for (const nabla::db::GradientRow& g : nabla::db::run_gradients(store.database(), run)) {
    char value[32];
    const double v = std::abs(g.gradient.value) < 0.005 ? 0.0 : g.gradient.value;
    std::snprintf(value, sizeof value, "%.2f", v);
    e.link_lines["link_" + std::to_string(g.link.id)].insert(g.type + " " + value);
  }
  return e;
}

class GraphInBrowser : public ReportInBrowser {
 protected:
  // Writes the run's page, loads a probed copy at 1400 px and returns the
  // probe's answer.
  nlohmann::json probe_graph(const std::string& db, std::int64_t run) {
    const std::string page = (dir_ / "graph.html").string();
    const CommandResult wrote = nabla::common::run_command(
        {NABLA_PATH, "report", std::to_string(run), "--db", db, "-o", page});
    EXPECT_EQ(wrote.exit_code, 0) << wrote.stderr_text;
    std::string html = read_file(page);
    const auto body = html.rfind("</body>");
    EXPECT_NE(body, std::string::npos);
    html.insert(body, kGraphProbe);
    probed_ = (dir_ / "probed.html").string();
    std::ofstream(probed_) << html;
    window_ = "1400,2000";
    const CommandResult dom = chromium({"--dump-dom", "file://" + probed_});
    EXPECT_EQ(dom.exit_code, 0) << dom.stderr_text;
    const std::string open = "<pre id=\"graph-probe\">";
    const auto start = dom.stdout_text.find(open);
    if (start == std::string::npos) {
      ADD_FAILURE() << "no probe output";
      return nullptr;
    }
    const auto end = dom.stdout_text.find("</pre>", start);
    return nlohmann::json::parse(
        unescape_html(dom.stdout_text.substr(start + open.size(), end - start - open.size())));
  }

  // A screenshot 1400 px wide of the whole page.
  void screenshot(const nlohmann::json& probe, const std::string& name) {
    const int height = probe["page_height"].get<int>();
    std::cout << "graph at y " << probe["graph"]["top"] << " .. " << probe["graph"]["bottom"]
              << " of " << height << " px\n";
    window_ = "1400," + std::to_string(height);
    const fs::path shot = fs::path(NABLA_SCREENSHOT_DIR) / name;
    const CommandResult r = chromium({"--screenshot=" + shot.string(), "file://" + probed_});
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
    const Image img = decode_png(read_file(shot));
    EXPECT_EQ(img.width, 1400u);
    EXPECT_EQ(img.height, static_cast<std::uint32_t>(height));
    EXPECT_GT(grey_stddev(img), 8.0);
    std::cout << "screenshot: " << shot.string() << "\n";
  }

  void expect_readable(const std::string& db, std::int64_t run, const std::string& shot_name) {
    const nlohmann::json probe = probe_graph(db, run);
    ASSERT_TRUE(probe.is_object());
    EXPECT_EQ(probe["render"], "ok");
    ASSERT_TRUE(probe["graph"].is_object()) << "the page has no graph SVG";
    std::vector<TextBox> boxes;
    for (const nlohmann::json& t : probe["texts"]) {
      boxes.push_back(
          {t["text"], t["kind"], t["link"], t["left"], t["top"], t["right"], t["bottom"]});
    }
    for (std::size_t i = 0; i < boxes.size(); ++i) {
      for (std::size_t j = i + 1; j < boxes.size(); ++j) {
        EXPECT_FALSE(overlap(boxes[i], boxes[j]))
            << "'" << boxes[i].text << "' (" << boxes[i].kind << " " << boxes[i].link
            << ") overlaps '" << boxes[j].text << "' (" << boxes[j].kind << " " << boxes[j].link
            << "): " << box_text(boxes[i]) << " and " << box_text(boxes[j]);
      }
    }
    const ExpectedGraph want = expected_graph(db, run);
    std::set<std::string> hosts, processes;
    std::map<std::string, std::multiset<std::string>> lines;
    for (const TextBox& b : boxes) {
      if (b.kind == "host") hosts.insert(b.text);
      if (b.kind == "node") processes.insert(b.text);
      if (b.kind == "edge") lines[b.link].insert(b.text);
      // Readable once the SVG is scaled to the page: no text under 8 px tall.
      EXPECT_GE(b.bottom - b.top, 8.0) << b.text;
    }
    double smallest = 1e9;
    for (const TextBox& b : boxes) smallest = std::min(smallest, b.bottom - b.top);
    std::cout << boxes.size() << " text elements, the smallest " << smallest << " px tall\n";
    EXPECT_EQ(hosts, want.hosts);
    EXPECT_EQ(processes, want.processes);
    EXPECT_EQ(lines, want.link_lines);
    screenshot(probe, shot_name);
  }

  std::string probed_;
};

TEST_F(GraphInBrowser, DemoShapedRunsGraphHasNoOverlappingText) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("chromium");
  NABLA_REQUIRE_PROGRAM_OR_SKIP("dot");
  const std::string db = (dir_ / "runs.db").string();
  const std::int64_t run = nabla::report::testing::store_topology_run(
      db, nabla::report::testing::demo_shaped_topology());
  expect_readable(db, run, "report-graph-demo.png");
}

TEST_F(GraphInBrowser, FiveHostSixteenLinkGraphHasNoOverlappingText) {
  NABLA_REQUIRE_PROGRAM_OR_SKIP("chromium");
  NABLA_REQUIRE_PROGRAM_OR_SKIP("dot");
  const std::string db = (dir_ / "runs.db").string();
  const auto topology = nabla::report::testing::wide_topology();
  ASSERT_EQ(topology.hosts.size(), 5u);
  ASSERT_EQ(topology.links.size(), 16u);
  const std::int64_t run = nabla::report::testing::store_topology_run(db, topology);
  expect_readable(db, run, "report-graph-wide.png");
}

}  // namespace
