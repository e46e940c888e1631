#include "nabla/report/report.hh"

#include <string_view>

#include "nabla/db/reads.hh"
#include "page_model.hh"
#include "report_assets.hh"

namespace nabla::report {
namespace {

using detail::json;

// The report format's version, for readers of the data block.
constexpr int kDataVersion = 1;

json run_page(db::Database& db, const detail::StoredRun& run) {
  json header = detail::run_header(run);
  json answer = detail::answer_section(db, run, header);
  header["status_line"] = answer["status"];
  json page{{"answer", std::move(answer)},
            {"header", std::move(header)},
            {"missing", detail::missing_parts(run)},
            {"gradients", detail::gradients_json(run)},
            {"graph", nullptr},
            {"links", json::array()},
            {"training", nullptr},
            {"injections", detail::injections_section(run)},
            {"tail", detail::tail_section(db, run)},
            {"experiments", detail::experiments_section(db, run)},
            {"predictions",
             "none stored: nabla predict computes what-if predictions from a run's gradients "
             "when asked (nabla predict --run " +
                 std::to_string(run.info.id) + "), and the database keeps no prediction rows"}};
  if (!run.links.empty()) {
    page["graph"] = detail::link_graph_section(run);
    page["links"] = detail::link_sections(db, run);
    page["training"] = detail::training_section(db, run);
  }
  return page;
}

json base_data(const ReportOptions& options) {
  return {{"nabla_report", kDataVersion},
          {"generated", options.generated_utc},
          {"db", options.db_path},
          {"runs", json::array()},
          {"comparison", nullptr}};
}

void replace_once(std::string& text, std::string_view marker, std::string_view with) {
  const auto at = text.find(marker);
  if (at == std::string::npos) {
    throw std::logic_error("report template lacks the marker " + std::string(marker));
  }
  text.replace(at, marker.size(), with);
}

}  // namespace

json build_report_data(db::Database& db, std::span<const std::int64_t> run_ids,
                       const ReportOptions& options) {
  if (run_ids.empty()) throw std::invalid_argument("a report needs at least one run id");
  std::vector<detail::StoredRun> runs;
  for (const std::int64_t id : run_ids) {
    if (!db::find_run(db, id)) {
      throw NoSuchRun("no run " + std::to_string(id) + " in '" + options.db_path + "'");
    }
    runs.push_back(detail::read_stored_run(db, id));
  }
  json data = base_data(options);
  for (const detail::StoredRun& run : runs) data["runs"].push_back(run_page(db, run));
  if (runs.size() >= 2) data["comparison"] = detail::comparison_section(runs[0], runs[1]);
  return data;
}

std::string script_safe_json(const json& data) {
  const std::string text = data.dump();
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    // '<' appears only inside JSON strings, where "\/" and "\u0021" are
    // valid escapes of '/' and '!'.
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') {
      out += "<\\/";
      ++i;
    } else if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '!') {
      out += "<\\u0021";
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string render_report_html(const json& data) {
  std::string page(assets::template_html);
  auto script = [](std::string_view js) { return "<script>" + std::string(js) + "</script>\n"; };
  replace_once(
      page, "<!-- nabla:libraries -->",
      script(assets::vega_js) + script(assets::vega_lite_js) + script(assets::vega_embed_js));
  replace_once(page, "<!-- nabla:data -->",
               "<script type=\"application/json\" id=\"nabla-data\">" + script_safe_json(data) +
                   "</script>");
  replace_once(page, "<!-- nabla:page -->", script(assets::page_js));
  return page;
}

}  // namespace nabla::report
