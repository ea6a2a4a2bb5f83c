// LowerToHpvm.cpp - the pass pipeline lowerToHpvm(): the passes in order,
// verify() and the --dump-ir hook after each one.
#include "LowerToHpvm.h"

#include "ir/Verify.h"
#include "lower/Lowering.h"
#include "passes/AnchorMaps.h"
#include "passes/ConstantFolding.h"
#include "passes/FeatureSequences.h"
#include "passes/Fusions.h"
#include "passes/LayoutRegions.h"
#include "passes/QuantizedOps.h"
#include "passes/Simplify.h"
#include "passes/TokenOrder.h"
#include "passes/TokenStages.h"
#include "support/Diagnostics.h"

namespace hpvm::fe {

void lowerToHpvm(Graph& g, const PipelineOptions& opts) {
  auto run = [&](const char* name, void (*pass)(Graph&)) {
    pass(g);
    verify(g);
    if (opts.afterPass)
      opts.afterPass(name, g);
  };
  verify(g);
  run("eliminate-dead-nodes", eliminateDeadNodes);
  run("expand-quantized-ops", expandQuantizedOps);
  run("fold-constants", foldConstants);
  run("remove-identities", removeIdentities);
  run("eliminate-dead-nodes", eliminateDeadNodes);
  run("fold-pads", foldPads);
  run("alias-reshapes", aliasReshapes);
  run("fuse-channel-shuffles", fuseChannelShuffles);
  run("fuse-layer-norms", fuseLayerNorms);
  run("make-tokens-batch-first", makeTokensBatchFirst);
  run("make-anchor-maps-images", makeAnchorMapsImages);
  run("make-sequences-images", makeSequencesImages);
  run("make-tokens-channel-first", makeTokensChannelFirst);
  run("fuse-gelus", fuseGelus);
  run("fuse-silus", fuseSilus);
  run("make-channel-first", makeChannelFirst);
  for (const GraphOutput& o : g.outputs)
    if (o.value == g.input || o.value->isConstant())
      throw UserError(g.source.path + ": the output '" + escapeName(o.name) +
                      "' is " +
                      (o.value == g.input ? "the input itself" : "a constant") +
                      (g.outputs.size() == 1
                           ? "; the model computes nothing"
                           : "; every output must be computed by the model"));
  run("lower", lowerNodes);
  run("eliminate-dead-nodes", eliminateDeadNodes);
  checkOperandRanges(g, opts.maxBytes);
}
} // namespace hpvm::fe
