// HtmlEscape(): text made safe for HTML and SVG text and attribute values.
#ifndef BALLAST_AGENT_BASE_HTML_H_
#define BALLAST_AGENT_BASE_HTML_H_

#include <string>
#include <string_view>

namespace ballast::base {

// `text` with &, <, >, " and ' escaped.
inline std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace ballast::base

#endif  // BALLAST_AGENT_BASE_HTML_H_
