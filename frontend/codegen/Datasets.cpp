// Datasets.cpp - locate and check the tune and test sets, and write a
// .npy set as HPVM's bin files (through the dataset tool's readers).
#include "codegen/Datasets.h"

#include "support/Diagnostics.h"
#include "support/InputFile.h"

#include <hpvm_ds/Dataset.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
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

/// True when \p path starts with NumPy's magic string (a FIFO or device
/// is refused by InputFile, never read).
bool isNumpyFile(const std::string& path, const std::string& role) {
  const InputFile f(path, role + " input '" + escapeName(path) + "'");
  char magic[6] = {};
  if (f.size() < sizeof magic)
    return false;
  f.readAt(0, magic, sizeof magic);
  return std::memcmp(magic, "\x93NUMPY", sizeof magic) == 0;
}

/// The .npy set \p inputPath (+ \p labelsPath, "" for none) opened by the
/// dataset tool's reader; its errors become UserErrors of \p role. Rows of
/// a 2-D array are read as images of \p shape where the model's is known.
std::unique_ptr<ds::Source>
openNumpy(const std::string& role, const std::string& inputPath,
          const std::string& labelsPath, int64_t numClasses,
          std::optional<ds::ImageShape> shape = std::nullopt) {
  ds::OpenOptions o;
  o.format = "npy";
  o.labelsOptional = true;
  o.classes = labelsPath.empty() ? 0 : numClasses;
  std::vector<std::string> paths{inputPath};
  if (!labelsPath.empty())
    paths.push_back(labelsPath);
  try {
    return ds::openSource(paths, o);
  } catch (const ds::DatasetError& e) {
    std::string what = e.what();
    if (shape) {
      o.shape = shape;
      try {
        return ds::openSource(paths, o);
      } catch (const ds::DatasetError&) {
        // The first error says what is wrong with the file as it is.
      }
    }
    // The tool unflattens rows by its --shape, the exporter by the model's.
    const std::string toolHint = "give --shape C,H,W to unflatten its rows";
    if (const size_t at = what.find(toolHint); at != std::string::npos)
      what.replace(at, toolHint.size(),
                   shape ? "rows of " + std::to_string(shape->elems()) +
                               " values would be the model's " + shape->str() +
                               " images"
                         : "its rows are no images without the model's "
                           "input shape");
    throw UserError(role + " set: " + what);
  }
}

/// checkDataset() of a .npy set: \p ds has the model's image and the
/// labels path (if any) filled in.
Dataset checkNumpyDataset(Dataset ds, int64_t numClasses) {
  ds.numpy = true;
  const ds::ImageShape model{ds.channels, ds.height, ds.width};
  const std::unique_ptr<ds::Source> src =
      openNumpy(ds.role, ds.inputPath, ds.labelsPath, numClasses, model);
  const std::string& type = src->imageType();
  if (type != "float32" && type != "float64")
    throw UserError(ds.role + " input '" + ds.inputPath + "' holds " + type +
                    " values; the exporter takes the model's input as it is "
                    "(float32 or float64): convert it first, e.g. "
                    "torch2hpvm-dataset convert '" +
                    ds.inputPath + "' --scale 1/255 --name " + ds.role +
                    " -o DIR");
  const ds::ImageShape& is = src->shape();
  if (is.elems() != model.elems())
    throw UserError(ds.role + " input '" + ds.inputPath + "' holds images of " +
                    is.str() + ", the model input takes " + model.str());
  ds.count = src->count();
  if (ds.count <= 0)
    throw UserError(ds.role + " input '" + ds.inputPath + "' holds no images");
  ds.inputBytes = ds.count * is.elems() * int64_t(sizeof(float));
  if (!src->hasLabels())
    ds.labelsPath.clear();
  return ds;
}

} // namespace

std::optional<std::vector<int64_t>> numpyImageDims(const std::string& role,
                                                   const std::string& path) {
  // A file that is no readable .npy of images gives no dims: the dataset
  // check says what is wrong with it, once the model's image is known.
  try {
    if (path.empty() || !isNumpyFile(path, role))
      return std::nullopt;
    const std::unique_ptr<ds::Source> src = openNumpy(role, path, "", 0);
    const ds::ImageShape& is = src->shape();
    return std::vector<int64_t>{src->count(), is.c, is.h, is.w};
  } catch (const UserError&) {
    return std::nullopt;
  }
}

void writeNumpyAsBin(const Dataset& set, const std::string& inputTo,
                     const std::string& labelsTo, int64_t numClasses) {
  const std::unique_ptr<ds::Source> src =
      openNumpy(set.role, set.inputPath, set.labelsPath, numClasses,
                ds::ImageShape{set.channels, set.height, set.width});
  const int64_t chunk = ds::defaultChunk(src->shape());
  const int64_t elems = src->shape().elems();
  std::vector<float> images(static_cast<size_t>(chunk * elems));
  std::vector<int32_t> labels(static_cast<size_t>(chunk));
  std::ofstream in(inputTo, std::ios::binary | std::ios::trunc);
  std::ofstream lab;
  if (src->hasLabels())
    lab.open(labelsTo, std::ios::binary | std::ios::trunc);
  for (int64_t done = 0; done < src->count(); done += chunk) {
    const int64_t n = std::min(chunk, src->count() - done);
    try {
      src->read(n, images.data(), labels.data());
    } catch (const ds::DatasetError& e) {
      throw UserError(set.role + " set: " + e.what());
    }
    in.write(reinterpret_cast<const char*>(images.data()),
             std::streamsize(n * elems * int64_t(sizeof(float))));
    if (src->hasLabels())
      lab.write(reinterpret_cast<const char*>(labels.data()),
                std::streamsize(n * int64_t(sizeof(int32_t))));
  }
  in.close();
  if (!in)
    throw UserError("cannot write '" + inputTo + "': " + std::strerror(errno));
  if (src->hasLabels()) {
    lab.close();
    if (!lab)
      throw UserError("cannot write '" + labelsTo +
                      "': " + std::strerror(errno));
  }
}

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
  ds.channels = channels;
  ds.height = height;
  ds.width = width;
  // Labels are optional: a file HPVM's naming points to is used when it
  // exists (a model without classes has none); one given must exist.
  bool derived = labelsPath.empty();
  ds.labelsPath = !derived ? labelsPath
                  : derive ? hpvmLabelsName(inputPath)
                           : std::string();
  if (derived &&
      (ds.labelsPath.empty() || ::access(ds.labelsPath.c_str(), F_OK) != 0))
    ds.labelsPath.clear(); // no labels

  if (isNumpyFile(inputPath, role))
    return checkNumpyDataset(ds, numClasses);
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

  if (ds.labelsPath.empty())
    return ds;
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
