// Pipeline.h - the export, stage by stage: load, lower, check datasets,
// lay out, render, write into a temporary sibling directory, build, and
// move into place.
#ifndef TORCH2HPVM_FRONTEND_PIPELINE_H
#define TORCH2HPVM_FRONTEND_PIPELINE_H

#include "Options.h"

#include <iosfwd>
#include <string>

namespace hpvm::fe {

/// Where the export's messages go.
struct PipelineStreams {
  std::ostream* progress = nullptr; ///< Stage lines (on a terminal), or null.
  std::ostream* ir = nullptr;       ///< --dump-ir output, or null.
  std::ostream* commands = nullptr; ///< -v command echo, or null.
  /// What a regeneration did with the user's edits, or null.
  std::ostream* report = nullptr;
};

/// What an export produced.
struct ExportResult {
  std::string outDir; ///< Absolute output directory.
  std::string binary; ///< Absolute path of the built program, "" with
                      ///< --no-build.
  /// --check: what a regeneration would do, one line per file, and a
  /// summary line.
  std::string checkReport;
  /// The exit status: ExitOk, or --check's ExitWouldChange / ExitConflict.
  int status = 0;
};

/// Runs the whole export described by \p opts. Nothing is written when the
/// model, the options or the datasets are rejected; the output directory
/// appears (or replaces the old one) only once complete. On an existing
/// export this is a regeneration: edited files are kept, merged or (with
/// --force) backed up; with --check nothing is written and the result says
/// what would happen. Throws UserError (exit code 1, 2 for toolchain
/// failures, 3 when a regeneration left conflicts, after writing them).
ExportResult runExport(const Options& opts, const PipelineStreams& streams);

/// Writes the operator table for --list-ops ("rst" or "json") to \p out.
void listOps(const std::string& format, std::ostream& out);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PIPELINE_H
