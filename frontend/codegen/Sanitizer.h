// Sanitizer.h - the one identifier sanitizer and the one text escaper: every
// string that comes from a model or the command line passes through one of
// them before it reaches generated source.
#ifndef TORCH2HPVM_FRONTEND_CODEGEN_SANITIZER_H
#define TORCH2HPVM_FRONTEND_CODEGEN_SANITIZER_H

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hpvm::fe {

/// Turns arbitrary names into C/C++ identifiers that are valid, not keywords,
/// not reserved (no leading underscore, no "__"), and unique within one
/// table. Each claimed identifier can also reserve derived names (suffixes),
/// e.g. "conv1_weight" and "conv1_weight_bytes" together.
class IdentifierTable {
public:
  /// Creates a table in which \p reserved (e.g. names the template uses
  /// itself) are already taken.
  explicit IdentifierTable(std::vector<std::string> reserved = {});

  /// Returns a fresh identifier derived from \p name; \p name itself and
  /// name + each of \p suffixes are all unused before and claimed after.
  std::string claim(std::string_view name,
                    const std::vector<std::string>& suffixes = {});

  /// True if \p ident is already claimed or reserved.
  bool taken(const std::string& ident) const;

private:
  std::set<std::string> used_;
};

/// The C-safe form of \p name without uniqueness: letters, digits and '_'
/// only, runs of invalid characters collapsed to one '_', no leading or
/// trailing '_', lowercase, a leading digit prefixed with 'n', keywords and
/// reserved names suffixed with "_v", "unnamed" when nothing is left. The
/// result never contains "__" and never ends in '_', so derived names
/// (ident + "_bytes", ident + "_2") are valid too. A result longer than
/// kMaxIdentifierLength is cut to that length, its last 8 characters a hash
/// of the whole name ("..._1f2e3d4c").
std::string sanitizeIdentifier(std::string_view name);

/// The longest identifier sanitizeIdentifier() returns: short enough that
/// every file name derived from one (weights/<ident>.bin, ident_2) stays
/// far below the 255 bytes a file name may have.
constexpr size_t kMaxIdentifierLength = 64;

/// 8 lowercase hex digits hashing \p text (FNV-1a): the suffix that keeps
/// apart names cut to a bounded length.
std::string shortHash(std::string_view text);

/// \p name, or when longer than \p limit bytes, its first bytes and
/// "-" + shortHash(name): exactly \p limit bytes (\p limit > 9).
std::string boundedName(const std::string& name, size_t limit);

/// True if \p word is a C or C++ keyword or a name the standard reserves.
bool isReservedWord(std::string_view word);

/// Escapes \p text so that it can be placed both inside a C++ string literal
/// ("...") and inside a // or /* */ comment without changing the program:
/// backslash, quote, control characters, non-ASCII bytes, "*/", "/*" and "??"
/// are written as escape sequences (octal for bytes, so that the string
/// literal keeps the exact bytes). Printable ASCII stays readable.
std::string escapeText(std::string_view text);

/// Quotes \p arg for a POSIX shell when it needs quoting (for messages and
/// -v output, never executed): "a b" -> 'a b', "it's" -> 'it'\''s'.
std::string shellQuote(std::string_view arg);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_CODEGEN_SANITIZER_H
