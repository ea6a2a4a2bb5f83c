// TestMain.cpp - doctest's main() for every test executable in tests/.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
