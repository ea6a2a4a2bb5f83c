// Main.cpp - entry point of torch2hpvm-dataset (see hpvm_ds/Tool.h).
#include "hpvm_ds/Tool.h"

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  std::vector<std::string> args(argv + 1, argv + argc);
  return hpvm::ds::runTool(args, std::cout, std::cerr);
}
