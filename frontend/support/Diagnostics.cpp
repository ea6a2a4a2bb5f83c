// Diagnostics.cpp - node context formatting, error lists and the bug
// reporter.
#include "support/Diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace hpvm::fe {

std::string nodeName(const Origin& origin) {
  std::string name = origin.name.empty() ? "#" + std::to_string(origin.index)
                                         : escapeName(origin.name);
  return "node '" + name + "' (" + escapeName(origin.opType) + ", #" +
         std::to_string(origin.index) + ")";
}

namespace {

/// The length of the well-formed UTF-8 sequence at \p s[i] of a character
/// past ASCII that prints (not a C1 control, U+0080 to U+009F), or 0.
size_t printableUtf8Length(const std::string& s, size_t i) {
  const auto at = [&](size_t k) {
    return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u;
  };
  const unsigned c = at(i);
  size_t length = 0;
  unsigned low = 0x80, high = 0xbf; // the second byte's range
  if (c >= 0xc2 && c <= 0xdf) {
    length = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    length = 3;
    low = c == 0xe0 ? 0xa0 : 0x80;  // no overlong form
    high = c == 0xed ? 0x9f : 0xbf; // no surrogate
  } else if (c >= 0xf0 && c <= 0xf4) {
    length = 4;
    low = c == 0xf0 ? 0x90 : 0x80;
    high = c == 0xf4 ? 0x8f : 0xbf; // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (at(i + 1) < low || at(i + 1) > high)
    return 0;
  for (size_t k = 2; k < length; ++k)
    if (at(i + k) < 0x80 || at(i + k) > 0xbf)
      return 0;
  if (c == 0xc2 && at(i + 1) <= 0x9f)
    return 0;
  return length;
}

} // namespace

std::string escapeName(const std::string& name) {
  std::string out;
  out.reserve(std::min(name.size(), kMaxNameBytes));
  for (size_t i = 0; i < name.size(); ++i) {
    if (out.size() >= kMaxNameBytes) {
      out += "...(" + std::to_string(name.size()) + " bytes)";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(name[i]);
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
      if (c >= 0x20 && c < 0x7f) {
        out += name[i];
      } else if (const size_t n = c > 0x7f ? printableUtf8Length(name, i) : 0;
                 n > 0) {
        out.append(name, i, n); // a character of a non-ASCII name
        i += n - 1;
      } else { // a control byte, or one that is not UTF-8
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\x%02x", c);
        out += buf;
      }
    }
  }
  return out;
}

std::string quotedList(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? ", '" : "'") + escapeName(names[i]) + "'";
  return s;
}

std::string nodeContext(const std::string& modelPath, const Origin& origin) {
  return modelPath + ": " + nodeName(origin);
}

namespace {
bool everyNode = false;
} // namespace

void ErrorList::listEveryNode(bool every) { everyNode = every; }

void ErrorList::add(const Origin& origin, const std::string& reason) {
  entries_.push_back(nodeName(origin) + ": " + reason);
  opTypes_.push_back(escapeName(origin.opType));
}

std::string ErrorList::message() const {
  if (empty())
    return "";
  std::string msg;
  for (const std::string& p : problems_)
    msg += (msg.empty() ? "" : "\n") + path_ + ": " + p;
  if (!entries_.empty())
    msg += (msg.empty() ? "" : "\n") + list();
  for (const std::string& n : notes_)
    msg += "\n" + n;
  return msg;
}

std::string ErrorList::list() const {
  if (entries_.size() == 1)
    return path_ + ": " + entries_.front();
  std::string msg =
      path_ + ": " + std::to_string(entries_.size()) + " unsupported nodes";
  if (entries_.size() <= kFlatErrors) {
    msg += ":";
    for (const std::string& entry : entries_)
      msg += "\n  " + entry;
    return msg;
  }
  // Op types in the order they first appear, with their entries.
  std::vector<std::string> types;
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < entries_.size(); ++i) {
    auto it = std::find(types.begin(), types.end(), opTypes_[i]);
    if (it == types.end()) {
      types.push_back(opTypes_[i]);
      members.emplace_back();
      it = types.end() - 1;
    }
    members[size_t(it - types.begin())].push_back(i);
  }
  msg += " (";
  for (size_t t = 0; t < types.size(); ++t)
    msg += (t ? ", " : "") + types[t] + " " + std::to_string(members[t].size());
  msg += "):";
  for (size_t t = 0; t < types.size(); ++t) {
    const std::vector<size_t>& group = members[t];
    msg += "\n  " + types[t] + ", " + std::to_string(group.size()) +
           (group.size() == 1 ? " node:" : " nodes:");
    // A group one line longer than the limit is shown whole.
    const size_t shown = everyNode || group.size() <= kShownPerGroup + 1
                             ? group.size()
                             : kShownPerGroup;
    for (size_t k = 0; k < shown; ++k)
      msg += "\n    " + entries_[group[k]];
    if (shown < group.size())
      msg += "\n    ... " + std::to_string(group.size() - shown) + " more " +
             types[t] + " nodes (-v lists every one)";
  }
  return msg;
}

void ErrorList::throwIfAny() const {
  if (!empty())
    throw UserError(message());
}

void reportBug(const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "torch2hpvm internal error at %s:%d: %s\n", file, line,
               msg.c_str());
  std::abort();
}

} // namespace hpvm::fe
