// Diagnostics.cpp - node context formatting, error lists and the bug
// reporter.
#include "support/Diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace hpvm::fe {

namespace {

/// "node 'conv1' (Conv, #3)" without the model path.
std::string nodeName(const Origin& origin) {
  std::string name = origin.name.empty() ? "#" + std::to_string(origin.index)
                                         : escapeName(origin.name);
  return "node '" + name + "' (" + escapeName(origin.opType) + ", #" +
         std::to_string(origin.index) + ")";
}

} // namespace

std::string escapeName(const std::string& name) {
  std::string out;
  out.reserve(std::min(name.size(), kMaxNameBytes));
  for (char ch : name) {
    if (out.size() >= kMaxNameBytes) {
      out += "...(" + std::to_string(name.size()) + " bytes)";
      break;
    }
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\'':
      out += "\\'";
      break;
    default:
      if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\x%02x", c);
        out += buf;
      } else {
        out += ch;
      }
    }
  }
  return out;
}

std::string nodeContext(const std::string& modelPath, const Origin& origin) {
  return modelPath + ": " + nodeName(origin);
}

void ErrorList::add(const Origin& origin, const std::string& reason) {
  entries_.push_back(nodeName(origin) + ": " + reason);
}

std::string ErrorList::message() const {
  if (entries_.empty())
    return "";
  if (entries_.size() == 1)
    return path_ + ": " + entries_.front();
  std::string msg =
      path_ + ": " + std::to_string(entries_.size()) + " unsupported nodes:";
  for (const std::string& entry : entries_)
    msg += "\n  " + entry;
  return msg;
}

void ErrorList::throwIfAny() const {
  if (!entries_.empty())
    throw UserError(message());
}

void reportBug(const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "torch2hpvm internal error at %s:%d: %s\n", file, line,
               msg.c_str());
  std::abort();
}

} // namespace hpvm::fe
