// Memory.cpp - plans where a plan's outputs live: zero-copy concatenation
// (outputs written as channels of a concatenation's buffer) and the
// storage budget that decides which buffers outlive a launch.
#include "core/Memory.h"

#include "base/Errors.h"
#include "kernels/Kernels.h"

#include <cstdlib>

namespace hpvm::rt {

int64_t keepStorageBytes() {
  if (const char* env = std::getenv("HPVM_RT_KEEP_BYTES")) {
    char* end = nullptr;
    long long v = std::strtoll(env, &end, 10);
    if (end != env && !*end && v >= 0)
      return v;
    reportWarning("hpvm_rt", std::string("ignoring HPVM_RT_KEEP_BYTES='") +
                                 env + "' (not a byte count)");
  }
  return int64_t(3) << 30;
}

/// Zero-copy concatenation (batch 1): the parts of a concatenation are
/// written by their producers straight into the concatenation's buffer,
/// at their channel offsets, and a concatenation of parts that already
/// lie one after another in one buffer (DenseNet's concatenation of all
/// earlier feature maps of a block, for every layer) is a view of them.
/// Each placed output is then channels of one concatenation's buffer, its
/// `whole`. The concatenations are visited last to first, so that a
/// concatenation feeding a later one (a tree of concatenations, or the
/// prefixes of a dense block's last one) finds its place taken already.
///
/// The plan only says where outputs should go; runConcat() copies every
/// part not found there when it runs (a producer that wrote another
/// layout). It places only what can be written once and then only read:
///  - a concatenation with fp32 numerics (rounding it would round its
///    parts) of batch-1 parts of whole channel blocks of the layout the
///    convolutions write (viewChannelBlock(): a contiguous run of an
///    nChw16c or nChw8c buffer), not a program output;
///  - a part that is another op's output, written by the group that
///    computes it (not in place), not a program output, and not placed
///    already (a part of two concatenations at different offsets is
///    copied into the second);
///  - and no group may then work in place on a placed output (it would
///    overwrite a part later concatenations read): such a group gets a
///    buffer of its own.
void planChannelViews(const Plan& p, const Trace& t, Schedule& s,
                      bool enabled) {
  const size_t n = p.ops.size();
  s.views.assign(n, ChannelView{});
  s.numViews = 0;
  if (!enabled)
    return;
  std::vector<int> groupOf(n, -1); // The group an op's output comes from.
  for (size_t gi = 0; gi < s.groups.size(); ++gi)
    groupOf[s.groups[gi].last] = static_cast<int>(gi);
  auto placeable = [&](int32_t c) {
    return c >= 0 && !p.isRootOut[c] && groupOf[c] >= 0 &&
           s.groups[groupOf[c]].inPlace == kNoOperand;
  };
  for (size_t gi = s.groups.size(); gi-- > 0;) {
    const Group& g = s.groups[gi];
    const TraceOp& op = p.ops[g.last];
    if (g.kind != HpvmOp::Concat || !placeable(g.last) || op.out[0] != 1 ||
        g.knob.precision != Precision::FP32)
      continue;
    std::vector<int64_t> at(op.numIn); // Each part's first channel.
    int64_t channel = 0;
    const int64_t block = viewChannelBlock();
    bool blocks = true;
    for (int k = 0; k < op.numIn; ++k) {
      at[k] = channel;
      const int64_t c = op.in[k] >= 0 ? p.ops[op.in[k]].out[1]
                                      : t.extShapes[-op.in[k] - 1][1];
      blocks = blocks && c % block == 0;
      channel += c;
    }
    if (!blocks)
      continue;
    ChannelView& self = s.views[g.last];
    if (self.whole < 0) {
      // Parts already one after another in one buffer: a view of them.
      const ChannelView first =
          op.in[0] >= 0 ? s.views[op.in[0]] : ChannelView{};
      bool view = first.whole >= 0;
      for (int k = 1; view && k < op.numIn; ++k) {
        const ChannelView& v =
            op.in[k] >= 0 ? s.views[op.in[k]] : ChannelView{};
        view = v.whole == first.whole && v.offset == first.offset + at[k];
      }
      if (view) {
        self = first;
        ++s.numViews;
        continue;
      }
      self = ChannelView{g.last, 0};
    }
    for (int k = 0; k < op.numIn; ++k) {
      const int32_t c = op.in[k];
      if (placeable(c) && s.views[c].whole < 0) {
        s.views[c] = ChannelView{self.whole, self.offset + at[k]};
        ++s.numViews;
      }
    }
  }
  for (Group& g : s.groups)
    if (g.inPlace != kNoOperand && s.views[g.inPlace].whole >= 0)
      g.inPlace = kNoOperand;
}

/// Which buffers each group's output uses, and which it frees after running
/// when keeping every intermediate buffer would take more than \p keepBytes.
void planStorage(const Plan& p, Schedule& s, int64_t keepBytes) {
  const size_t n = p.ops.size();
  // Storage: keep every buffer for the next launch unless that is too much
  // memory; then free each buffer after its last reader. A channel view
  // belongs to its whole.
  std::vector<int> owner(n, -1);
  int64_t bytes = 0;
  for (const Group& g : s.groups) {
    const ChannelView& v = s.views[g.last];
    if (g.inPlace != kNoOperand) {
      owner[g.last] = owner[g.inPlace];
    } else if (v.whole >= 0) {
      owner[g.last] = v.whole;
      if (v.whole == g.last)
        bytes += numElements(p.ops[g.last].out) * 4;
    } else if (!p.isRootOut[g.last]) {
      owner[g.last] = g.last;
      bytes += numElements(p.ops[g.last].out) * 4;
    }
  }
  if (bytes > keepBytes) {
    std::vector<int> lastUse(n, -1);
    for (size_t gi = 0; gi < s.groups.size(); ++gi)
      for (int m : s.groups[gi].members)
        for (int k = 0; k < p.ops[m].numIn; ++k) {
          int32_t c = p.ops[m].in[k];
          if (c >= 0 && owner[c] >= 0)
            lastUse[owner[c]] = static_cast<int>(gi);
        }
    for (size_t o = 0; o < n; ++o)
      if (lastUse[o] >= 0 && owner[o] == static_cast<int>(o))
        s.groups[lastUse[o]].release.push_back(static_cast<int>(o));
  }
}

} // namespace hpvm::rt
