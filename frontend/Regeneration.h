// Regeneration.h - re-running an export on its own output directory: which
// generated files the user edited, three-way merges of edited text sources
// (git merge-file), backups under --force, and the user's files carried
// over into the new generation.
#ifndef TORCH2HPVM_FRONTEND_REGENERATION_H
#define TORCH2HPVM_FRONTEND_REGENERATION_H

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hpvm::fe {

/// Where an output directory keeps the generation its text sources were
/// last written from (the merge base), relative to the directory.
inline constexpr const char* MergeBaseDir = ".torch2hpvm/base";

/// True for the generated text files that are merged with the user's edits
/// on regeneration (hpvm_c.cpp, CMakeLists.txt, ops.json); every other
/// generated file (weights, datasets, tuner_confs.txt, a copy of --config)
/// is data, replaced when untouched and never merged.
bool isMergeable(const std::string& relPath);

/// What an output directory's manifest.json says about its last export.
struct PreviousExport {
  /// Generated file (relative path) -> its SHA-256 as generated ("" when
  /// the manifest does not record one).
  std::map<std::string, std::string> files;
  /// Files the last regeneration left with conflict markers.
  std::vector<std::string> conflicts;
  /// manifest.json's bytes.
  std::string manifest;
  /// The program, relative to the directory ("" with --no-build).
  std::string binary;
};

/// Reads \p dir's manifest.json; nullopt when \p dir holds none written by
/// torch2hpvm-export.
std::optional<PreviousExport> readPreviousExport(const std::string& dir);

/// What a regeneration does with one file.
enum class FileAction {
  Same,       ///< Generated as before and not edited: nothing changes.
  Add,        ///< Newly generated.
  Update,     ///< Not edited; replaced by its new generation.
  Restore,    ///< Deleted by the user; written again.
  Remove,     ///< No longer generated and not edited: removed.
  KeepEdits,  ///< Edited; the new generation is unchanged: the edits stay.
  KeepOrphan, ///< Edited and no longer generated: kept as the user's file.
  Merge,      ///< Edited and regenerated: merged cleanly.
  Conflict,   ///< Edited and regenerated: merged with conflict markers.
  Backup,     ///< --force: overwritten, the user's version backed up.
  Refuse,     ///< Edited and regenerated, and cannot be merged.
};

/// One file's fate.
struct FilePlan {
  std::string path; ///< Relative to the output directory.
  FileAction action = FileAction::Same;
  bool edited = false; ///< The user changed (or deleted) it.
  int conflicts = 0;   ///< Conflict: the number of conflicting hunks.
  std::string backup;  ///< Backup: the backup's relative path.
  std::string reason;  ///< Refuse: why, as a sentence.
};

/// True when \p action writes different bytes than the directory holds.
bool changesFile(FileAction action);

/// The new generation's files: relative path -> SHA-256.
using FileDigests = std::map<std::string, std::string>;

/// Regeneration of output directory \p out (which holds \p prev, or nothing
/// when \p prev is null) into \p tmp, which already holds the new
/// generation (files \p generated, and the merge base of its text sources
/// under MergeBaseDir). Decides every file's fate, and writes into \p tmp
/// the merges, kept edits, backups and conflict side files (P.base, P.mine,
/// P.new); \p out is only read. With \p force, edited files are backed up
/// instead of merged. Returns the plan, sorted by path. Throws UserError
/// (exit code 2) when git is needed and missing or fails.
std::vector<FilePlan> planRegeneration(const std::string& out,
                                       const PreviousExport* prev,
                                       const std::string& tmp,
                                       const FileDigests& generated, bool force,
                                       std::ostream* echo);

/// The conflict side files of \p path: P.base, P.mine, P.new.
std::vector<std::string> conflictSideFiles(const std::string& path);

/// Links (or copies) into \p tmp every entry of \p out that torch2hpvm did
/// not generate: the user's own files and directories, edited files that
/// are no longer generated. Skipped: manifest.json, MergeBaseDir's parent,
/// build/ and build.log (products of the previous generation), the
/// generated files and the side files of the previous conflicts. Throws
/// UserError, before anything is moved, when a file of the user's has the
/// name of a file \p tmp already holds (a new conflict's side file).
void carryOverUserFiles(const std::string& out, const PreviousExport& prev,
                        const std::string& tmp,
                        const std::vector<FilePlan>& plan);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_REGENERATION_H
