// RunModel.h - the support routine behind every generated program's main():
// command line, datasets, batching, accuracy, timing, configurations.
//
// The generated HPVM-C keeps only what is specific to the model: node
// functions, the root graph, the launch struct, weight loading and one
// launch per batch. Everything else is here, compiled and tested once.
#ifndef HPVM_RT_RUNMODEL_H
#define HPVM_RT_RUNMODEL_H

#include <cstdint>
#include <functional>
#include <string>

namespace hpvm_rt {

/// One graph output of the model: its name (ONNX's) and its shape per
/// image, as the model declares it (rank 0 to 4, batch left out).
struct OutputInfo {
  const char* name;
  int rank;
  int64_t dims[4];
};

/// What the generated program tells the runtime about its model.
struct ModelInfo {
  /// Model name (file stem), for messages and JSON reports.
  const char* name;
  /// Directory holding weights/ and the dataset files, baked in at export
  /// time: absolute, or relative to the directory holding the program
  /// (torch2hpvm-export writes "../", as its programs are OUT/build/<model>);
  /// "" is the working directory. Overridden at run time by --model-dir.
  const char* modelDir;
  /// Input image shape (per image).
  int64_t channels, height, width;
  /// Output values per image: the classes of a classifier; with several
  /// outputs, all of them, in order (each image's row holds its outputs
  /// one after another).
  int64_t numClasses;
  /// Images in the tune and test sets (checked against the files).
  int64_t tuneCount, testCount;
  /// Default batch size; 0 means the whole set in one batch (HPVM).
  int64_t defaultBatch;
  /// Baked-in default configuration file, relative to modelDir, or "" for
  /// exact FP32 everywhere.
  const char* defaultConfig;
  /// Number of HPVM tensor ops in the program (config lines are checked
  /// against the recorded graph).
  int64_t numOps;
  /// Program kind: 0 = normal run, 1 = HPVM tuner inspect protocol (FIFOs).
  int inspect;
  /// The graph outputs (hpvm_rt extension; programs of older exporters
  /// leave them 0: one output of numClasses values). Output 0 is
  /// runBatch's result; outputOf(k) is output k of the last runBatch.
  int numOutputs;
  const OutputInfo* outputs;
  void* (*outputOf)(int k);
};

/// Loads every weight; called once, with modelDir (ending in '/').
using LoadWeightsFn = std::function<void(const std::string& modelDir)>;
/// Runs the DFG on one input batch tensor and returns the output tensor.
using RunBatchFn = std::function<void*(void* input)>;

/// A generated program's model: its facts, its weight loader and its batch
/// runner.
struct Model {
  ModelInfo info;
  LoadWeightsFn loadWeights;
  RunBatchFn runBatch;
};

/// The program's model, defined by every generated program (hpvm_c.cpp,
/// tensor_c.cpp): its main() runs it with runModel(), and its shared library
/// (lib<model>.so) through the C entry points of hpvm_rt/Library.h.
const Model& programModel();

/// Parses argv (see --help), loads weights, runs the chosen dataset in
/// batches (a final partial batch included), reports accuracy and timing,
/// writes final_accuracy and profile files. Returns the process exit code.
int runModel(int argc, char** argv, const ModelInfo& info,
             const LoadWeightsFn& loadWeights, const RunBatchFn& runBatch);
/// runModel() on \p model's parts.
int runModel(int argc, char** argv, const Model& model);

} // namespace hpvm_rt

#endif // HPVM_RT_RUNMODEL_H
