// Printable.h - how every tool of torch2hpvm prints an error message whose
// text may come from a user's file, path or library: control bytes other
// than line breaks escaped, long lines and long messages cut. Header-only:
// the exporter, the dataset tool and the generated programs share it.
#ifndef HPVM_RT_PRINTABLE_H
#define HPVM_RT_PRINTABLE_H

#include <cstdio>
#include <string>
#include <string_view>

namespace hpvm {

/// Longest line and whole message the tools print for one error.
constexpr size_t kMaxMessageLineBytes = 1000;
constexpr size_t kMaxMessageBytes = 4000;

/// \p text with control bytes other than '\n' escaped ("\x1b"), each line
/// cut after kMaxMessageLineBytes ("...(N more bytes)") and the whole after
/// \p maxBytes ("... (N more bytes of this message not shown)").
inline std::string printableMessage(std::string_view text,
                                    size_t maxBytes = kMaxMessageBytes) {
  std::string out;
  size_t lineStart = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= maxBytes) {
      out += "\n... (" + std::to_string(text.size() - i) +
             " more bytes of this message not shown)";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += '\n';
      lineStart = out.size();
    } else if (out.size() - lineStart >= kMaxMessageLineBytes) {
      size_t end = text.find('\n', i);
      if (end == std::string_view::npos)
        end = text.size();
      out += "...(" + std::to_string(end - i) + " more bytes)";
      i = end - 1;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

} // namespace hpvm

#endif // HPVM_RT_PRINTABLE_H
