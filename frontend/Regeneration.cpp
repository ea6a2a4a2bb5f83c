// Regeneration.cpp - regenerating an export in place: edit detection by
// the manifest's digests, git merge-file for edited text sources, backups,
// and carrying the user's files over.
#include "Regeneration.h"

#include "codegen/OutputFiles.h"
#include "support/Diagnostics.h"
#include "toolchain/Toolchain.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <unistd.h>

namespace hpvm::fe {

namespace fs = std::filesystem;

namespace {

bool isRegularFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(path, ec));
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(path, ec));
}

/// The first of P.orig, P.orig.1, ... free in both \p out and \p tmp.
std::string backupName(const std::string& out, const std::string& tmp,
                       const std::string& path) {
  std::string name = path + ".orig";
  for (int i = 1; exists(out + "/" + name) || exists(tmp + "/" + name); ++i)
    name = path + ".orig." + std::to_string(i);
  return name;
}

/// Three-way merges \p ours (replaced by the result) with \p theirs since
/// \p base; returns the number of conflicts.
int mergeFile(const std::string& path, const std::string& ours,
              const std::string& base, const std::string& theirs,
              const std::string& log, const std::string& shownPath,
              std::ostream* echo) {
  std::string git = findExecutable("git");
  if (git.empty())
    throw UserError(shownPath +
                        ": merging your edits needs 'git merge-file', and "
                        "git was not found on PATH (install git, or use "
                        "--force, which keeps your version as " +
                        path + ".orig)",
                    ExitToolchainError);
  std::vector<std::string> argv = {git,   "merge-file",
                                   "-L",  path + " (yours)",
                                   "-L",  path + " (previous generation)",
                                   "-L",  path + " (new generation)",
                                   ours,  base,
                                   theirs};
  // The standard markers whatever the user's git configuration says.
  int status =
      runCommand(argv, "", log, echo,
                 {"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
                  "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=merge.conflictStyle",
                  "GIT_CONFIG_VALUE_0=merge"});
  if (status < 0 || status > 127)
    throw UserError(shownPath + ": 'git merge-file' failed (" +
                        (status < 0 ? "signal " + std::to_string(-status)
                                    : "exit status " + std::to_string(status)) +
                        "):\n  " + formatCommand(argv) + "\nlast lines of " +
                        log + ":\n" + lastLines(log, 20),
                    ExitToolchainError);
  return status;
}

/// True when \p path holds one JSON document.
bool isJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return in && nlohmann::json::accept(in);
}

/// Copies \p from to \p to, creating \p to's directory.
void copyInto(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::create_directories(fs::path(to).parent_path(), ec);
  copyFileAtomic(from, to);
}

} // namespace

bool isMergeable(const std::string& relPath) {
  return relPath == "hpvm_c.cpp" || relPath == "CMakeLists.txt" ||
         relPath == "ops.json";
}

std::optional<PreviousExport> readPreviousExport(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json", std::ios::binary);
  if (!in)
    return std::nullopt;
  PreviousExport p;
  p.manifest.assign(std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>());
  nlohmann::json m =
      nlohmann::json::parse(p.manifest, nullptr, /*exceptions=*/false);
  if (!m.is_object() || !m.contains("tool") || !m["tool"].is_object() ||
      m["tool"].value("name", "") != "torch2hpvm-export")
    return std::nullopt;
  if (m.contains("files") && m["files"].is_array())
    for (const auto& f : m["files"])
      if (f.is_object() && f.contains("path") && f["path"].is_string())
        p.files[f["path"].get<std::string>()] = f.value("sha256", "");
  if (m.contains("conflicts") && m["conflicts"].is_array())
    for (const auto& c : m["conflicts"])
      if (c.is_string())
        p.conflicts.push_back(c.get<std::string>());
  p.binary = m.value("binary", "");
  return p;
}

bool changesFile(FileAction action) {
  switch (action) {
  case FileAction::Same:
  case FileAction::KeepEdits:
  case FileAction::KeepOrphan:
  case FileAction::Refuse:
    return false;
  default:
    return true;
  }
}

std::vector<std::string> conflictSideFiles(const std::string& path) {
  return {path + ".base", path + ".mine", path + ".new"};
}

std::vector<FilePlan> planRegeneration(const std::string& out,
                                       const PreviousExport* prev,
                                       const std::string& tmp,
                                       const FileDigests& generated, bool force,
                                       std::ostream* echo) {
  std::set<std::string> paths;
  for (const auto& [path, digest] : generated)
    paths.insert(path);
  if (prev)
    for (const auto& [path, digest] : prev->files)
      paths.insert(path);

  std::vector<FilePlan> plan;
  for (const std::string& path : paths) {
    FilePlan f;
    f.path = path;
    const std::string outPath = out + "/" + path;
    const std::string tmpPath = tmp + "/" + path;
    auto gen = generated.find(path);
    bool inNew = gen != generated.end();
    bool inOld = prev && prev->files.count(path);
    bool present = prev && isRegularFile(outPath);
    std::string ours = present ? sha256File(outPath) : "";
    std::string base = inOld ? prev->files.at(path) : "";
    std::string theirs = inNew ? gen->second : "";

    if (!inOld) {
      // A new file. Something of the user's may stand in its place.
      if (!(prev && exists(outPath)))
        f.action = FileAction::Add;
      else if (present && ours == theirs)
        f.action = FileAction::Same;
      else {
        f.edited = true;
        f.action = force ? FileAction::Backup : FileAction::Refuse;
        f.reason = "exists, but torch2hpvm did not generate it and the new "
                   "generation writes it";
      }
    } else if (!inNew) {
      // No longer generated: removed unless edited.
      if (!present)
        continue;
      if (base.empty() || ours == base)
        f.action = FileAction::Remove;
      else {
        f.edited = true;
        f.action = FileAction::KeepOrphan;
      }
    } else if (!present) {
      f.edited = true;
      f.action = FileAction::Restore;
    } else if (base.empty() || ours == base || ours == theirs) {
      // Untouched (an export that recorded no digest counts as untouched),
      // or edited into exactly the new generation.
      f.action = ours == theirs ? FileAction::Same : FileAction::Update;
    } else {
      f.edited = true;
      std::string baseFile = out + "/" + MergeBaseDir + "/" + path;
      if (force)
        f.action = FileAction::Backup;
      else if (theirs == base)
        f.action = FileAction::KeepEdits;
      else if (!isMergeable(path)) {
        f.action = FileAction::Refuse;
        f.reason = "edited since it was generated, and the new generation "
                   "changes it; only the text files (hpvm_c.cpp, "
                   "CMakeLists.txt, ops.json) are merged";
      } else if (!isRegularFile(baseFile) || sha256File(baseFile) != base) {
        f.action = FileAction::Refuse;
        f.reason = std::string("edited since it was generated, and the "
                               "previous generation (") +
                   MergeBaseDir + "/" + path +
                   ") is missing or changed, so the edits cannot be merged";
      } else {
        copyInto(outPath, tmpPath);
        f.conflicts = mergeFile(path, tmpPath, baseFile,
                                tmp + "/" + MergeBaseDir + "/" + path,
                                tmp + "/.torch2hpvm/merge.log", outPath, echo);
        f.action = f.conflicts ? FileAction::Conflict : FileAction::Merge;
        if (!f.conflicts && fs::path(path).extension() == ".json" &&
            !isJsonFile(tmpPath)) {
          // Merged line by line without a conflict, but not JSON any more
          // (a comma on a neighbouring line, say): refused, so the
          // regeneration stops before anything is written.
          f.action = FileAction::Refuse;
          f.reason = "edited since it was generated; your edits and the new "
                     "generation merge line by line, but the result is not "
                     "valid JSON, so merge them by hand";
        }
        if (f.conflicts) {
          std::vector<std::string> side = conflictSideFiles(path);
          copyInto(baseFile, tmp + "/" + side[0]);
          copyInto(outPath, tmp + "/" + side[1]);
          copyInto(tmp + "/" + MergeBaseDir + "/" + path, tmp + "/" + side[2]);
        }
      }
    }

    if (f.action == FileAction::Backup) {
      f.backup = backupName(out, tmp, path);
      copyInto(outPath, tmp + "/" + f.backup);
    } else if (f.action == FileAction::KeepEdits) {
      copyInto(outPath, tmpPath);
    }
    plan.push_back(f);
  }
  // git's log of the merges, needed only when one fails.
  std::error_code ec;
  fs::remove(tmp + "/.torch2hpvm/merge.log", ec);
  return plan;
}

void carryOverUserFiles(const std::string& out, const PreviousExport& prev,
                        const std::string& tmp,
                        const std::vector<FilePlan>& plan) {
  std::set<std::string> skip = {"manifest.json", "build.log"};
  for (const FilePlan& f : plan)
    if (f.action != FileAction::KeepOrphan)
      skip.insert(f.path);
  for (const std::string& c : prev.conflicts)
    for (const std::string& side : conflictSideFiles(c))
      skip.insert(side);

  std::error_code ec;
  fs::recursive_directory_iterator it(out, ec), end;
  if (ec)
    throw UserError("cannot read '" + out + "': " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec)
      throw UserError("cannot read '" + out + "': " + ec.message());
    std::string rel = fs::path(it->path()).lexically_relative(out).string();
    fs::file_status st = fs::symlink_status(it->path(), ec);
    if (it.depth() == 0 && (rel == ".torch2hpvm" || rel == "build")) {
      if (fs::is_directory(st))
        it.disable_recursion_pending();
      continue;
    }
    std::string to = tmp + "/" + rel;
    if (fs::is_directory(st)) {
      fs::create_directories(to, ec);
      if (ec)
        throw UserError("cannot create '" + to + "': " + ec.message());
      continue;
    }
    if (skip.count(rel))
      continue;
    // Only a conflict's side file can stand there: never overwrite the
    // user's file.
    if (exists(to))
      throw UserError(out + "/" + rel +
                      ": the regeneration writes a file of this name (the "
                      "side file of a conflict); move yours away and run "
                      "again");
    fs::create_directories(fs::path(to).parent_path(), ec);
    // A hard link: the old tree stays whole until the exchange.
    if (::link(it->path().c_str(), to.c_str()) == 0)
      continue;
    if (fs::is_symlink(st))
      fs::copy_symlink(it->path(), to, ec);
    else
      fs::copy_file(it->path(), to, ec);
    if (ec)
      throw UserError("cannot carry '" + it->path().string() + "' over to '" +
                      to + "': " + ec.message());
  }
}

} // namespace hpvm::fe
