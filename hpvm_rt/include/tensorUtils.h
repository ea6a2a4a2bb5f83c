// tensorUtils.h - HPVM's tensor utilities: weight and dataset readers,
// label readers and accuracy functions. Unlike HPVM's, this header only
// declares (it may be included in any number of translation units); it
// pulls in the standard headers HPVM programs rely on it for.
#ifndef HPVM_RT_TENSORUTILS_H
#define HPVM_RT_TENSORUTILS_H

#include "tensor.h"
#include "tensor_runtime.h"

#ifdef __cplusplus
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

extern "C" {
#endif

/// Reads a d1 x d2 x d3 x d4 float32 tensor from raw file \p file; the file
/// must hold exactly that many bytes.
struct Tensor* readTrainedWeights(const char* file, int data_type, long d1,
                                  long d2, long d3, long d4);
/// Reads images [start, end) of shape d2 x d3 x d4 from raw float32 file
/// \p file into a (end - start) x d2 x d3 x d4 tensor.
struct Tensor* readInputBatch(const char* file, long data_type, long start,
                              long end, long d2, long d3, long d4);
/// Reads \p n one-byte labels (freed by the caller with free()).
uint8_t* readLabels(const char* file, int n);
/// Reads \p n 32-bit labels from the start of \p file.
uint32_t* readLabels3(const char* file, int n);
/// Reads 32-bit labels [start, end) of \p file.
uint32_t* readLabelsBatch3(const char* file, int start, int end);

/// Top-1 accuracy in percent of \p result (N x C) against \p labels;
/// prints it and writes final_accuracy, as HPVM does.
float computeAccuracy3(uint32_t* labels, void* result);
/// Top-5 accuracy in percent of \p result against \p num_labels one-byte
/// labels.
float computeTop5Accuracy(uint8_t* labels, int num_labels, void* result,
                          unsigned num_classes);
/// Prints "**** Final Accuracy = A", writes A to final_accuracy and
/// remembers it for dumpExecutionAccuracies.
void dumpFinalAccuracy(float accuracy);
/// Writes every accuracy given to dumpFinalAccuracy, one per line, to
/// run_accuracies.txt.
void dumpExecutionAccuracies(void);
/// Writes the tensor's NCHW float32 data to \p file (raw, no header).
void dumpOutput(void* tensor, const char* file);

/// Prints the tensor's dimensions.
void printTensorDims(void* tensor);
/// Prints every element of the tensor.
void printTensorValues(void* tensor);
/// Sets every element to 1.
void fillTensorWithOnes(void* tensor);
/// Sets every element to \p value.
void fillTensorWithVal(void* tensor, float value);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // HPVM_RT_TENSORUTILS_H
