// Datasets.cpp - locate and check the tune and test sets.
#include "codegen/Datasets.h"

#include "Diagnostics.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <vector>

namespace hpvm::fe {

namespace {

/// Size of regular file \p path, or -1 with errno set.
int64_t fileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return -1;
  if (!S_ISREG(st.st_mode)) {
    errno = EISDIR;
    return -1;
  }
  return st.st_size;
}

std::string plural(int64_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

} // namespace

std::string defaultLabelsPath(const std::string& inputPath,
                              const std::string& role) {
  std::filesystem::path p(inputPath);
  std::string file = p.filename().string();
  size_t at = file.rfind("input");
  if (at == std::string::npos)
    throw UserError(
        "cannot derive the " + role + " labels file from '" + inputPath +
        "' (HPVM names them X_input.bin and X_labels.bin); give --" + role +
        "-labels FILE");
  file.replace(at, 5, "labels");
  return (p.parent_path() / file).string();
}

Dataset checkDataset(const std::string& role, const std::string& inputPath,
                     const std::string& labelsPath, int64_t channels,
                     int64_t height, int64_t width, int64_t numClasses) {
  Dataset ds;
  ds.role = role;
  ds.inputPath = inputPath;
  bool derived = labelsPath.empty();
  ds.labelsPath = derived ? defaultLabelsPath(inputPath, role) : labelsPath;

  int64_t inBytes = fileSize(inputPath);
  if (inBytes < 0)
    throw UserError("cannot read " + role + " input '" + inputPath +
                    "': " + std::strerror(errno));
  int64_t imageBytes = channels * height * width * 4;
  std::string image = std::to_string(channels) + "x" + std::to_string(height) +
                      "x" + std::to_string(width);
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

  int64_t labelBytes = fileSize(ds.labelsPath);
  if (labelBytes < 0) {
    if (derived)
      throw UserError(role + " labels file '" + ds.labelsPath +
                      "' not found (derived from '" + inputPath + "'; give --" +
                      role + "-labels FILE)");
    throw UserError("cannot read " + role + " labels '" + ds.labelsPath +
                    "': " + std::strerror(errno));
  }
  if (labelBytes != ds.count * 4)
    throw UserError(role + " labels '" + ds.labelsPath + "': expected " +
                    std::to_string(ds.count * 4) + " bytes (" +
                    plural(ds.count, "int32 label") + " for the " +
                    plural(ds.count, "image") + " of '" + inputPath +
                    "'), got " + std::to_string(labelBytes) + " bytes");

  std::vector<int32_t> labels(static_cast<size_t>(ds.count));
  std::FILE* f = std::fopen(ds.labelsPath.c_str(), "rb");
  size_t got = f ? std::fread(labels.data(), 4, labels.size(), f) : 0;
  if (f)
    std::fclose(f);
  if (got != labels.size())
    throw UserError("cannot read " + role + " labels '" + ds.labelsPath + "'");
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
