// ReportTest.cpp - the plot step of tune-search: the plotting script runs
// with the interpreter --plot-python names, and a failure is not fatal.
#include "tuner/TuneReport.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace hpvm::rt::tuner;

namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

} // namespace

TEST_CASE("the plot runs its script with the --plot-python interpreter") {
  char dirTemplate[] = "/tmp/hpvm_plot_XXXXXX";
  REQUIRE(::mkdtemp(dirTemplate) != nullptr);
  const std::string dir = dirTemplate;
  // A shell script standing in for plot_tuning.py: it writes both images.
  const std::string script = dir + "/plot.sh";
  std::ofstream(script) << "touch \"$2\" \"$3\"\n";
  TuneOptions opts;
  opts.plotScript = script;
  opts.plotPython = "/bin/sh";
  opts.jsonFile = dir + "/record.json";
  opts.plotStem = dir + "/front";
  drawPlot(opts);
  CHECK(exists(dir + "/front.png"));
  CHECK(exists(dir + "/front.svg"));
  // An interpreter that cannot run leaves no plot and returns.
  opts.plotPython = dir + "/no-such-python";
  opts.plotStem = dir + "/other";
  drawPlot(opts);
  CHECK_FALSE(exists(dir + "/other.png"));
  for (const char* name : {"/plot.sh", "/front.png", "/front.svg"})
    ::unlink((dir + name).c_str());
  ::rmdir(dir.c_str());
}
