// Origin.h - where an IR node came from in the ONNX model: the name, op type
// and position every message and comment uses.
#ifndef TORCH2HPVM_FRONTEND_SUPPORT_ORIGIN_H
#define TORCH2HPVM_FRONTEND_SUPPORT_ORIGIN_H

#include <string>

namespace hpvm::fe {

/// Where a node came from in the ONNX model, for comments and messages.
struct Origin {
  std::string name;   ///< ONNX node name, or "#<index>" when it had none.
  std::string opType; ///< ONNX op_type.
  int index = -1;     ///< Position in the ONNX graph's node list.
};

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_SUPPORT_ORIGIN_H
