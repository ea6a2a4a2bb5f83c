// Sanitizer.cpp - identifier sanitizing and text escaping for generated code.
#include "codegen/Sanitizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>

namespace hpvm::fe {

namespace {

// C and C++ keywords, alternative operator spellings, and lowercase names
// that the C library may define as macros or that generated code needs
// unshadowed (hpvm::, std::, size_t).
constexpr std::string_view ReservedWords[] = {"alignas",
                                              "alignof",
                                              "and",
                                              "and_eq",
                                              "asm",
                                              "auto",
                                              "bitand",
                                              "bitor",
                                              "bool",
                                              "break",
                                              "case",
                                              "catch",
                                              "char",
                                              "char8_t",
                                              "char16_t",
                                              "char32_t",
                                              "class",
                                              "compl",
                                              "concept",
                                              "const",
                                              "consteval",
                                              "constexpr",
                                              "constinit",
                                              "const_cast",
                                              "continue",
                                              "co_await",
                                              "co_return",
                                              "co_yield",
                                              "decltype",
                                              "default",
                                              "delete",
                                              "do",
                                              "double",
                                              "dynamic_cast",
                                              "else",
                                              "enum",
                                              "explicit",
                                              "export",
                                              "extern",
                                              "false",
                                              "float",
                                              "for",
                                              "friend",
                                              "goto",
                                              "if",
                                              "inline",
                                              "int",
                                              "long",
                                              "mutable",
                                              "namespace",
                                              "new",
                                              "noexcept",
                                              "not",
                                              "not_eq",
                                              "nullptr",
                                              "operator",
                                              "or",
                                              "or_eq",
                                              "private",
                                              "protected",
                                              "public",
                                              "register",
                                              "reinterpret_cast",
                                              "requires",
                                              "restrict",
                                              "return",
                                              "short",
                                              "signed",
                                              "sizeof",
                                              "static",
                                              "static_assert",
                                              "static_cast",
                                              "struct",
                                              "switch",
                                              "template",
                                              "this",
                                              "thread_local",
                                              "throw",
                                              "true",
                                              "try",
                                              "typedef",
                                              "typeid",
                                              "typename",
                                              "union",
                                              "unsigned",
                                              "using",
                                              "virtual",
                                              "void",
                                              "volatile",
                                              "wchar_t",
                                              "while",
                                              "xor",
                                              "xor_eq",
                                              "final",
                                              "override",
                                              "import",
                                              "module",
                                              "errno",
                                              "assert",
                                              "stdin",
                                              "stdout",
                                              "stderr",
                                              "offsetof",
                                              "setjmp",
                                              "va_arg",
                                              "va_start",
                                              "va_end",
                                              "va_copy",
                                              "std",
                                              "hpvm",
                                              "hpvm_rt",
                                              "main",
                                              "unix",
                                              "linux",
                                              "i386",
                                              "fortran"};

bool isIdentChar(unsigned char c) { return std::isalnum(c) || c == '_'; }

} // namespace

bool isReservedWord(std::string_view word) {
  if (std::find(std::begin(ReservedWords), std::end(ReservedWords), word) !=
      std::end(ReservedWords))
    return true;
  // Leading underscore, double underscore anywhere, and POSIX's *_t.
  if (!word.empty() && word.front() == '_')
    return true;
  if (word.find("__") != std::string_view::npos)
    return true;
  return word.size() >= 2 && word.substr(word.size() - 2) == "_t";
}

std::string shortHash(std::string_view text) {
  uint64_t hash = 14695981039346656037ull; // FNV-1a, 64 bits
  for (unsigned char c : text)
    hash = (hash ^ c) * 1099511628211ull;
  return fmt::format("{:08x}", static_cast<uint32_t>(hash ^ (hash >> 32)));
}

std::string boundedName(const std::string& name, size_t limit) {
  if (name.size() <= limit)
    return name;
  return name.substr(0, limit - 9) + "-" + shortHash(name);
}

std::string sanitizeIdentifier(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  bool pendingSep = false;
  for (unsigned char c : name) {
    if (isIdentChar(c) && c != '_') {
      if (pendingSep && !out.empty())
        out += '_';
      pendingSep = false;
      // Lowercase: the C library and the runtime headers spell their macros
      // in capitals and their functions in camelCase, so lowercase names
      // cannot collide with either.
      out += static_cast<char>(std::tolower(c));
    } else {
      pendingSep = true;
    }
  }
  if (out.empty())
    return "unnamed";
  if (std::isdigit(static_cast<unsigned char>(out.front())))
    out.insert(out.begin(), 'n');
  // Identifiers become file names (weights/<ident>.bin, 255 bytes at most)
  // and symbols: a long one is cut, with a hash of the whole name so that
  // names sharing their first characters stay apart.
  if (out.size() > kMaxIdentifierLength) {
    out.resize(kMaxIdentifierLength - 9);
    while (out.back() == '_')
      out.pop_back();
    out += "_" + shortHash(name);
  }
  // A suffix, not a trailing '_': "int_" + "_bytes" would hold "__".
  if (isReservedWord(out))
    out += "_v";
  return out;
}

IdentifierTable::IdentifierTable(std::vector<std::string> reserved)
    : used_(reserved.begin(), reserved.end()) {}

bool IdentifierTable::taken(const std::string& ident) const {
  return used_.count(ident) != 0 || isReservedWord(ident);
}

std::string IdentifierTable::claim(std::string_view name,
                                   const std::vector<std::string>& suffixes) {
  std::string base = sanitizeIdentifier(name);
  auto isFree = [&](const std::string& candidate) {
    if (taken(candidate))
      return false;
    return std::none_of(
        suffixes.begin(), suffixes.end(),
        [&](const std::string& s) { return taken(candidate + s); });
  };
  std::string candidate = base;
  for (int n = 2; !isFree(candidate); ++n)
    candidate = base + "_" + std::to_string(n);
  used_.insert(candidate);
  for (const std::string& s : suffixes)
    used_.insert(candidate + s);
  return candidate;
}

std::string escapeText(std::string_view text) {
  static const char Digits[] = "01234567";
  std::string out;
  out.reserve(text.size());
  auto octal = [&](unsigned char c) {
    out += '\\';
    out += Digits[(c >> 6) & 7];
    out += Digits[(c >> 3) & 7];
    out += Digits[c & 7];
  };
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    char next = i + 1 < text.size() ? text[i + 1] : '\0';
    char prev = i > 0 ? text[i - 1] : '\0';
    switch (c) {
    case '\n':
      out += "\\n";
      continue;
    case '\t':
      out += "\\t";
      continue;
    case '"':
      out += "\\\"";
      continue;
    case '\\':
      // Octal rather than "\\": an escape never ends in a backslash, so a
      // // comment can never be continued onto the next line.
      octal(c);
      continue;
    case '/':
      // "*/" would end a block comment, "/*" open one.
      if (prev == '*' || next == '*') {
        octal(c);
        continue;
      }
      break;
    case '?':
      // "??x" is a trigraph in older C/C++ dialects.
      if (next == '?') {
        out += "\\?";
        continue;
      }
      break;
    default:
      break;
    }
    if (c < 0x20 || c >= 0x7f)
      octal(c);
    else
      out += static_cast<char>(c);
  }
  return out;
}

std::string shellQuote(std::string_view arg) {
  if (!arg.empty() && std::all_of(arg.begin(), arg.end(), [](unsigned char c) {
        return std::isalnum(c) ||
               std::string_view("@%+=:,./_-").find(static_cast<char>(c)) !=
                   std::string_view::npos;
      }))
    return std::string(arg);
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  out += '\'';
  return out;
}

} // namespace hpvm::fe
