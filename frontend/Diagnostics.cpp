// Diagnostics.cpp - node context formatting and the bug reporter.
#include "Diagnostics.h"

#include <cstdio>
#include <cstdlib>

namespace hpvm::fe {

std::string nodeContext(const std::string& modelPath, const Origin& origin) {
  std::string name =
      origin.name.empty() ? "#" + std::to_string(origin.index) : origin.name;
  return modelPath + ": node '" + name + "' (" + origin.opType + ", #" +
         std::to_string(origin.index) + ")";
}

void reportBug(const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "torch2hpvm internal error at %s:%d: %s\n", file, line,
               msg.c_str());
  std::abort();
}

} // namespace hpvm::fe
