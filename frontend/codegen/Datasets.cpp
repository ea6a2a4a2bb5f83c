// Datasets.cpp - locate and check the tune and test sets.
#include "codegen/Datasets.h"

#include "support/Diagnostics.h"
#include "support/InputFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <vector>

namespace hpvm::fe {

namespace {

std::string plural(int64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

/// HPVM's labels file for \p inputPath (the last "input" in the file name
/// becomes "labels"), or "" when the name holds no "input".
std::string hpvmLabelsName(const std::string& inputPath) {
  std::filesystem::path p(inputPath);
  std::string file = p.filename().string();
  size_t at = file.rfind("input");
  if (at == std::string::npos)
    return "";
  file.replace(at, 5, "labels");
  return (p.parent_path() / file).string();
}

} // namespace

std::string defaultLabelsPath(const std::string& inputPath,
                              const std::string& role) {
  std::string path = hpvmLabelsName(inputPath);
  if (path.empty())
    throw UserError(
        "cannot derive the " + role + " labels file from '" + inputPath +
        "' (HPVM names them X_input.bin and X_labels.bin); give --" + role +
        "-labels FILE");
  return path;
}

Dataset checkDataset(const std::string& role, const std::string& inputPath,
                     const std::string& labelsPath, int64_t channels,
                     int64_t height, int64_t width, int64_t numClasses,
                     bool derive) {
  Dataset ds;
  ds.role = role;
  ds.inputPath = inputPath;
  // Labels are optional: a file HPVM's naming points to is used when it
  // exists (a model without classes has none); one given must exist.
  bool derived = labelsPath.empty();
  ds.labelsPath = !derived ? labelsPath
                  : derive ? hpvmLabelsName(inputPath)
                           : std::string();

  const int64_t inBytes = static_cast<int64_t>(
      InputFile(inputPath, role + " input '" + escapeName(inputPath) + "'")
          .size());
  const std::string image = std::to_string(channels) + "x" +
                            std::to_string(height) + "x" +
                            std::to_string(width);
  const std::optional<uint64_t> checked =
      tensorBytes({channels, height, width}, sizeof(float));
  if (channels <= 0 || height <= 0 || width <= 0 || !checked)
    throw UserError(role + " input '" + inputPath + "': the model's image " +
                    image + " has no valid size");
  const int64_t imageBytes = static_cast<int64_t>(*checked);
  if (inBytes == 0)
    throw UserError(role + " input '" + inputPath + "' is empty");
  if (inBytes % imageBytes != 0)
    throw UserError(role + " input '" + inputPath +
                    "': " + std::to_string(inBytes) +
                    " bytes is not a whole number of images for the model "
                    "input " +
                    image + " (" + std::to_string(imageBytes) +
                    " bytes of float32 per image)");
  ds.inputBytes = inBytes;
  ds.count = inBytes / imageBytes;

  if (derived &&
      (ds.labelsPath.empty() || ::access(ds.labelsPath.c_str(), F_OK) != 0)) {
    ds.labelsPath.clear(); // no labels
    return ds;
  }
  const InputFile labelsFile(
      ds.labelsPath, role + " labels '" + escapeName(ds.labelsPath) + "'");
  const int64_t labelBytes = static_cast<int64_t>(labelsFile.size());
  if (labelBytes != ds.count * 4)
    throw UserError(role + " labels '" + ds.labelsPath + "': expected " +
                    std::to_string(ds.count * 4) + " bytes (" +
                    plural(ds.count, "int32 label") + " for the " +
                    plural(ds.count, "image") + " of '" + inputPath +
                    "'), got " + std::to_string(labelBytes) + " bytes");

  std::vector<int32_t> labels(static_cast<size_t>(ds.count));
  labelsFile.readAt(0, labels.data(), static_cast<uint64_t>(labelBytes));
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= numClasses)
      throw UserError(role + " labels '" + ds.labelsPath + "': label " +
                      std::to_string(labels[i]) + " of image " +
                      std::to_string(i) + " is out of range (the model has " +
                      std::to_string(numClasses) +
                      (numClasses == 1 ? " class)" : " classes)"));
  return ds;
}

} // namespace hpvm::fe
