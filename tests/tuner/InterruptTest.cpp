// InterruptTest.cpp - Ctrl-C during tune-search: while an InterruptGuard
// lives, SIGINT and SIGTERM are blocked in the computing threads (the
// caller and OpenMP's team), a signal sent to the process sets the flag
// checkInterrupt() throws on, and the guard puts the mask back.
#include "tuner/TuneInterrupt.h"

#include <doctest/doctest.h>

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <initializer_list>
#include <thread>

using namespace hpvm::rt::tuner;

namespace {

bool blockedHere(int sig) {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, sig) == 1;
}

/// True once checkInterrupt() throws, waiting up to two seconds.
bool interruptedSoon() {
  for (int i = 0; i < 200; ++i) {
    try {
      checkInterrupt();
    } catch (const Interrupted&) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

} // namespace

TEST_CASE("InterruptGuard: signals never reach the computing threads, and "
          "one sent to the process is seen by checkInterrupt") {
  REQUIRE_FALSE(blockedHere(SIGINT));
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    InterruptGuard guard;
    CHECK_NOTHROW(checkInterrupt());
    CHECK(blockedHere(SIGINT));
    CHECK(blockedHere(SIGTERM));
    int unblocked = 0;
#pragma omp parallel num_threads(2) reduction(+ : unblocked)
    unblocked += !blockedHere(SIGINT) || !blockedHere(SIGTERM);
    CHECK(unblocked == 0);
    REQUIRE(kill(getpid(), sig) == 0);
    CHECK(interruptedSoon());
  }
  CHECK_FALSE(blockedHere(SIGINT));
  CHECK_FALSE(blockedHere(SIGTERM));
  int blocked = 0;
#pragma omp parallel num_threads(2) reduction(+ : blocked)
  blocked += blockedHere(SIGINT);
  CHECK(blocked == 0);
}
