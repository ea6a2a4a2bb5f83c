// OptionTable.h - declarative option tables for the commands of a
// generated program: one row per option, the parser that applies them and
// the --help text they generate, plus the number parsers options use.
#ifndef HPVM_RT_COMMAND_OPTIONTABLE_H
#define HPVM_RT_COMMAND_OPTIONTABLE_H

#include "base/Errors.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace hpvm::rt {

/// One option of a declarative option table: its spellings, value name
/// (nullptr: a flag), help and what it sets in the options struct \p O.
template <class O> struct OptionSpec {
  const char* shortName; ///< "-c" or nullptr.
  const char* longName;  ///< "--batch-size".
  const char* metavar;   ///< "N", or nullptr for flags.
  const char* help;
  void (*apply)(O& o, std::string_view name, std::string_view v);
};

/// Most kernel threads a program accepts (--threads, HPVM_NUM_THREADS):
/// beyond it OpenMP fails to create them on ordinary machines.
constexpr int64_t kMaxThreads = 1024;

/// Parses \p value as an integer from \p min to \p max for \p option;
/// throws UserError ("bad value 'x' for --opt: expected an integer >= 1",
/// or "... from 0 to 1024" when \p max is given).
int64_t parseCount(std::string_view option, std::string_view value, int64_t min,
                   int64_t max = std::numeric_limits<int64_t>::max());

/// Parses \p value as a finite number >= \p min for \p option; throws
/// UserError.
double parseNumber(std::string_view option, std::string_view value, double min);

/// Parses argv[first..argc) against \p table into \p opts: options as
/// "--name value", "--name=value" or "-x value"; every other word goes to
/// \p positional. Throws UserError naming the option and what is wrong.
template <class O, size_t N, class Positional>
void parseOptionTable(int argc, const char* const* argv, int first,
                      const OptionSpec<O> (&table)[N], O& opts,
                      Positional&& positional) {
  for (int i = first; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      positional(arg);
      continue;
    }
    std::string_view name = arg, value;
    size_t eq = arg.find('=');
    bool inlineValue = arg.substr(0, 2) == "--" && eq != arg.npos;
    if (inlineValue) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    const OptionSpec<O>* spec = nullptr;
    for (const OptionSpec<O>& s : table)
      if ((s.shortName && name == s.shortName) || name == s.longName)
        spec = &s;
    if (!spec)
      throw UserError("unknown option '" + std::string(name) + "'");
    if (!spec->metavar) {
      if (inlineValue)
        throw UserError("option '" + std::string(spec->longName) +
                        "' takes no value");
    } else if (!inlineValue) {
      if (i + 1 >= argc)
        throw UserError("option '" + std::string(name) + "' needs a value (" +
                        spec->metavar + ")");
      value = argv[++i];
    }
    spec->apply(opts, spec->longName, value);
  }
}

/// The option lines of a --help text for \p table.
template <class O, size_t N>
std::string optionTableHelp(const OptionSpec<O> (&table)[N]) {
  std::string out;
  for (const OptionSpec<O>& spec : table) {
    std::string names = spec.shortName
                            ? std::string(spec.shortName) + ", " + spec.longName
                            : std::string("    ") + spec.longName;
    if (spec.metavar)
      names += std::string(" ") + spec.metavar;
    if (names.size() < 30)
      names.resize(30, ' ');
    out += "  " + names + " " + spec.help + "\n";
  }
  return out;
}

} // namespace hpvm::rt

#endif // HPVM_RT_COMMAND_OPTIONTABLE_H
