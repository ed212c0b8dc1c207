#pragma once
// Private: the bytes of a file quoted in a message (a tar header's field, a record's class text), so a
// NUL or a control byte shows instead of cutting or garbling the message.

#include <cstdio>
#include <string>
#include <string_view>

namespace fitscope::detail {

/// `bytes` between `quote`s: printable ASCII as is, any other byte, the quote and the backslash as
/// \xNN; only the first `max` bytes, with "..." after the closing quote when more were left out.
inline std::string quoted_bytes(std::string_view bytes, char quote = '\'', std::size_t max = std::string_view::npos) {
  std::string out(1, quote);
  for (std::size_t i = 0; i < bytes.size() && i < max; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != static_cast<unsigned char>(quote) && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  out += quote;
  return bytes.size() > max ? out + "..." : out;
}

}  // namespace fitscope::detail
