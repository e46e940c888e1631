#pragma once
// The files every page inlines, compiled into the library by
// cmake/EmbedFiles.cmake (report/CMakeLists.txt): the page template, its
// script and the vendored plotting library (third_party/vega/).
#include <string_view>

namespace nabla::report::assets {

extern const std::string_view template_html;
extern const std::string_view page_js;
extern const std::string_view vega_js;
extern const std::string_view vega_lite_js;
extern const std::string_view vega_embed_js;

}  // namespace nabla::report::assets
