// QuantizedOps.h - pre-quantized models (ONNX Runtime's QDQ and QOperator
// formats): the quantization parameters of QuantizeLinear and
// DequantizeLinear, their folding on constants, and the pass that writes
// QLinearConv and QLinearMatMul as DequantizeLinear, the float op and
// QuantizeLinear. An integer activation is computed as the float values it
// stands for: QuantizeLinear becomes the quantize op (those values), the
// DequantizeLinear reading it nothing.
#ifndef TORCH2HPVM_FRONTEND_PASSES_QUANTIZEDOPS_H
#define TORCH2HPVM_FRONTEND_PASSES_QUANTIZEDOPS_H

#include "ir/Graph.h"

#include <memory>
#include <string>
#include <vector>

namespace hpvm::fe {

/// One QuantizeLinear's or DequantizeLinear's constant parameters: a scale
/// and zero point per tensor (one element) or per slice along \p axis.
struct QuantParams {
  std::vector<float> scale;
  std::vector<int64_t> zero;
  int64_t axis = 1;         ///< Resolved (non-negative) when per axis.
  DataType type;            ///< Of the integers: Uint8, Int8 or Int32.
  int64_t lo = 0, hi = 255; ///< The integer type's range.
  bool perTensor() const { return scale.size() == 1; }
};

/// The parameters of QuantizeLinear or DequantizeLinear node \p n (opset
/// \p opset) whose input has rank \p rank; "" on success, else why not
/// (run-time scales, an unsupported type, blocks, mismatched sizes).
std::string quantParams(const Node* n, int64_t opset, size_t rank,
                        QuantParams& out);

/// DequantizeLinear / QuantizeLinear of constants, evaluated as ONNX
/// defines them; nullptr when \p n's operands are not all constant or its
/// parameters are not valid.
std::shared_ptr<const TensorData> foldDequantizeLinear(const Node* n,
                                                       int64_t opset);
std::shared_ptr<const TensorData> foldQuantizeLinear(const Node* n,
                                                     int64_t opset);

/// The quantize node (a lowered QuantizeLinear) whose values \p v are,
/// directly or through max pooling (which picks one of them); nullptr if
/// none.
const Node* quantizeSource(const Value* v);

/// Rewrites every QLinearConv as DequantizeLinear (input, weights, bias at
/// the input scale times the weight scale), Conv and QuantizeLinear, and
/// every QLinearMatMul likewise with MatMul; the constants' dequantization
/// then folds. ONNX Runtime's dynamic quantization (DynamicQuantizeLinear
/// read by ConvInteger or MatMulInteger, Cast, and a Mul by the scales; or
/// by a DequantizeLinear) becomes Conv or MatMul of the float values the
/// integers stand for (a DynamicQuantizeLinear node of output -1).
void expandQuantizedOps(Graph& g);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_QUANTIZEDOPS_H
