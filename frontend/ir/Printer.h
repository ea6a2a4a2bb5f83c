// Printer.h - the IR as text (--dump-ir), and the formatting of shapes,
// scalars and producers the messages share.
#ifndef TORCH2HPVM_FRONTEND_IR_PRINTER_H
#define TORCH2HPVM_FRONTEND_IR_PRINTER_H

#include "ir/Graph.h"

#include <string>
#include <vector>

namespace hpvm::fe {

/// The IR as text, one line per node, e.g.
/// "%3 = Conv(%input: 1x1x28x28, %conv1.weight: 32x1x5x5) -> 1x32x28x28
/// [pads 2 2 strides 1 1]  # Conv_0".
std::string dumpIr(const Graph& g);

/// "1x32x28x28" ("?" for a symbolic dimension, "scalar" for rank 0).
std::string formatShape(const std::vector<int64_t>& shape);

/// A scalar operand as C source text: integers in decimal, reals in the
/// shortest form that reads back to the same double ("1e-05", "6", "0.001").
std::string formatScalar(const Scalar& s);

/// Producer description for messages: "node 'x' (Relu)" or "the graph
/// input".
std::string describeProducer(const Value* v);

/// \p f rounded to the shortest decimal that reads back as the same float,
/// as a double (1e-5f becomes 1e-05, not 9.99999974737875e-06).
double shortestFloat(float f);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_IR_PRINTER_H
