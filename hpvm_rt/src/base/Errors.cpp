// Errors.cpp - reportError() and reportWarning(): how hpvm_rt's errors and
// warnings reach the user.
#include "base/Errors.h"

#include "hpvm_rt/Printable.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <cstdlib>
#include <new>

namespace hpvm::rt {

int reportError(const std::string& tool, std::exception_ptr error) noexcept {
  std::fflush(stdout);
  const char* name = tool.c_str();
  try {
    std::rethrow_exception(error);
  } catch (const UserError& e) {
    std::fprintf(stderr, "%s: error: %s\n", name,
                 printableMessage(e.what()).c_str());
    return kExitUserError;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", name);
    return kExitUserError;
  } catch (const InternalError& e) {
    std::fprintf(stderr, "%s: internal error at %s:%d: %s\n", name, e.file(),
                 e.line(), e.message().c_str());
  } catch (const dnnl::error& e) {
    std::fprintf(stderr,
                 "%s: internal error: oneDNN failed with status %d: %s\n", name,
                 static_cast<int>(e.status), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: uncaught exception: %s\n", name,
                 e.what());
  } catch (...) {
    std::fprintf(stderr,
                 "%s: internal error: uncaught exception of unknown type\n",
                 name);
  }
  std::fprintf(stderr,
               "%s: note: this is a bug in hpvm_rt, not a problem with the "
               "model, its files or the command line; please report it\n",
               name);
  std::fflush(stderr);
  std::abort();
}

void reportWarning(const std::string& tool, const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "%s: warning: %s\n", tool.c_str(),
               printableMessage(message).c_str());
}

} // namespace hpvm::rt
