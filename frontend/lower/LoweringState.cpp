// LoweringState.cpp - the operand checks the lowering functions share.
#include "lower/LoweringState.h"

namespace hpvm::fe {

std::string needActivation(const Value* v, const char* role, bool allow2d) {
  if (v->isConstant())
    return std::string(role) + " '" + escapeName(v->name) +
           "' is a constant; torch2hpvm needs it computed from the input";
  if (v->shape.empty())
    return std::string(role) + " '" + escapeName(v->name) +
           "' has an unknown shape (dynamic shapes are not supported)";
  if (v->shape.size() == 4 || (allow2d && v->shape.size() == 2)) {
    for (size_t d = 1; d < v->shape.size(); ++d)
      if (v->shape[d] < 0)
        return std::string(role) + " '" + escapeName(v->name) + "' has shape " +
               formatShape(v->shape) +
               "; only its batch dimension may be unknown (dynamic shapes "
               "are not supported)";
    return "";
  }
  return std::string(role) + " '" + escapeName(v->name) + "' has shape " +
         formatShape(v->shape) + "; only 4-D (N, C, H, W)" +
         (allow2d ? " or 2-D (N, K)" : "") + " tensors are supported";
}

std::string needConstant(const Value* v, const char* role) {
  if (v->isConstant())
    return "";
  return std::string(role) + " '" + escapeName(v->name) +
         "' is computed at run time by " + describeProducer(v) +
         "; only constant " + role + "s are supported";
}

std::string asymmetricPads(const Axis& a, const char* axisName) {
  return std::string("asymmetric pads (") + axisName + " " +
         std::to_string(a.padBegin) + " before, " + std::to_string(a.padEnd) +
         " after) cannot be expressed with HPVM's symmetric padding";
}

} // namespace hpvm::fe
