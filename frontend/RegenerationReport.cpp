// RegenerationReport.cpp - see RegenerationReport.h.
#include "RegenerationReport.h"

#include "support/Diagnostics.h"

#include <ostream>
#include <utility>

namespace hpvm::fe {

namespace {

/// The line reporting \p f's fate in a regeneration, or "".
std::string regenerationLine(const FilePlan& f) {
  switch (f.action) {
  case FileAction::Merge:
    return f.path + ": merged your edits into the new generation cleanly";
  case FileAction::Conflict: {
    std::vector<std::string> side = conflictSideFiles(f.path);
    return "CONFLICT in " + f.path + ": " + std::to_string(f.conflicts) +
           (f.conflicts == 1 ? " conflict" : " conflicts") +
           " between your edits and the new generation; the three versions "
           "are written side by side as " +
           side[0] + " (previous generation), " + side[1] + " (yours) and " +
           side[2] + " (new generation)";
  }
  case FileAction::KeepEdits:
    return f.path + ": kept your edits (the new generation does not change "
                    "it)";
  case FileAction::KeepOrphan:
    return f.path + ": no longer generated; your edited version is kept";
  case FileAction::Backup:
    return f.path +
           ": overwritten by the new generation (--force); your "
           "version is kept as " +
           f.backup;
  case FileAction::Restore:
    return f.path + ": was deleted; written again";
  default:
    return "";
  }
}

/// --check's verb and detail for \p f ("" when it would not be listed).
std::pair<std::string, std::string> checkLine(const FilePlan& f) {
  std::string n = std::to_string(f.conflicts);
  switch (f.action) {
  case FileAction::Same:
    return {"", ""};
  case FileAction::Add:
    return {"add", ""};
  case FileAction::Update:
    return {"update", ""};
  case FileAction::Restore:
    return {"restore", "deleted"};
  case FileAction::Remove:
    return {"remove", ""};
  case FileAction::KeepEdits:
    return {"keep", "edited; the new generation does not change it"};
  case FileAction::KeepOrphan:
    return {"keep", "edited; no longer generated"};
  case FileAction::Merge:
    return {"merge", "edited; merges cleanly"};
  case FileAction::Conflict:
    return {"conflict",
            "edited; " + n + (f.conflicts == 1 ? " conflict" : " conflicts")};
  case FileAction::Backup:
    return {"replace", "edited; --force keeps it as " + f.backup};
  case FileAction::Refuse:
    return {"refuse", f.reason};
  }
  HPVM_UNREACHABLE("unknown file action");
}

} // namespace

void report(const PipelineStreams& s, const std::string& line) {
  if (s.report)
    *s.report << "torch2hpvm-export: " << line << std::endl;
}

void throwIfRefused(const std::vector<FilePlan>& plan, const std::string& out) {
  std::vector<const FilePlan*> refused;
  for (const FilePlan& f : plan)
    if (f.action == FileAction::Refuse)
      refused.push_back(&f);
  if (refused.empty())
    return;
  if (refused.size() == 1)
    throw UserError(out + "/" + refused[0]->path + ": " + refused[0]->reason +
                    "; move your version away, or use --force (which keeps "
                    "it as " +
                    refused[0]->path + ".orig)");
  std::string msg = out + ": " + std::to_string(refused.size()) +
                    " files cannot be regenerated:";
  for (const FilePlan* f : refused)
    msg += "\n  " + f->path + ": " + f->reason;
  throw UserError(msg + "\nmove your versions away, or use --force (which "
                        "keeps each as FILE.orig)");
}

void reportRegeneration(const PipelineStreams& streams,
                        const std::vector<FilePlan>& plan) {
  for (const FilePlan& f : plan)
    if (std::string line = regenerationLine(f); !line.empty())
      report(streams, line);
}

std::string regenerationSummary(const std::vector<FilePlan>& plan,
                                const std::string& out) {
  int changed = 0, merged = 0, conflicts = 0;
  for (const FilePlan& f : plan) {
    changed += changesFile(f.action);
    merged += f.action == FileAction::Merge;
    conflicts += f.action == FileAction::Conflict;
  }
  std::string line = "regenerated '" + out + "': " + std::to_string(changed) +
                     (changed == 1 ? " file" : " files") + " changed";
  if (merged || conflicts)
    line += " (" + std::to_string(merged) + " merged cleanly, " +
            std::to_string(conflicts) + " with conflicts)";
  return line;
}

int checkReport(const std::vector<FilePlan>& plan, const std::string& out,
                std::string& text) {
  int changed = 0, edited = 0;
  bool trouble = false;
  for (const FilePlan& f : plan) {
    changed += changesFile(f.action);
    edited += f.edited;
    trouble |=
        f.action == FileAction::Conflict || f.action == FileAction::Refuse;
    auto [verb, detail] = checkLine(f);
    if (verb.empty())
      continue;
    verb.resize(8, ' ');
    text += verb + " " + f.path + (detail.empty() ? "" : " (" + detail + ")") +
            "\n";
  }
  text += "'" + out + "': " + std::to_string(changed) +
          (changed == 1 ? " file" : " files") + " would change, " +
          std::to_string(edited) + (edited == 1 ? " carries" : " carry") +
          " edits" +
          (trouble ? "; a regeneration would stop on a conflict\n" : "\n");
  return trouble ? ExitConflict : changed ? ExitWouldChange : ExitOk;
}

} // namespace hpvm::fe
