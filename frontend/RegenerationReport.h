// RegenerationReport.h - what torch2hpvm-export says about a regeneration:
// each file's fate, the summary, --check's report and the refusal error.
#ifndef TORCH2HPVM_FRONTEND_REGENERATIONREPORT_H
#define TORCH2HPVM_FRONTEND_REGENERATIONREPORT_H

#include "Pipeline.h"
#include "Regeneration.h"

#include <string>
#include <vector>

namespace hpvm::fe {

/// Regeneration messages, printed whatever the terminal.
void report(const PipelineStreams& s, const std::string& line);

/// One UserError naming every file a regeneration cannot handle.
void throwIfRefused(const std::vector<FilePlan>& plan, const std::string& out);

/// Reports each file of \p plan whose fate is worth a line (merged, in
/// conflict, kept, backed up, restored).
void reportRegeneration(const PipelineStreams& streams,
                        const std::vector<FilePlan>& plan);

/// "regenerated '<out>': 3 files changed (1 merged cleanly, 1 with
/// conflicts)"; the parenthesis only when something was merged.
std::string regenerationSummary(const std::vector<FilePlan>& plan,
                                const std::string& out);

/// --check's report of \p plan into \p text: one line per file that would
/// change or carries edits ("<verb> <path> (<detail>)"), then a summary.
/// Returns the exit status: ExitOk when no file would change, ExitConflict
/// when a file would conflict or be refused, else ExitWouldChange.
int checkReport(const std::vector<FilePlan>& plan, const std::string& out,
                std::string& text);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_REGENERATIONREPORT_H
