// AttentionMatchers.h - matching the attention blocks torch.onnx writes
// (Swin's window attention, nn.MultiheadAttention's self-attention,
// multi-head attention written out by hand) and replacing each by one
// HPVM attention op (with 1 x 1 Convs for the projections it holds).
#ifndef TORCH2HPVM_FRONTEND_PASSES_ATTENTIONMATCHERS_H
#define TORCH2HPVM_FRONTEND_PASSES_ATTENTIONMATCHERS_H

#include "ir/Graph.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hpvm::fe {

/// torchvision's (0.14) shifted_window_attention as torch.onnx writes it
/// for a channel-last N x H x W x C input x, the zero Pad and full Slices
/// gone (the windows tile the image): torch.roll by -shift (skipped when
/// the shift is 0), Reshape to N x H/wh x wh x W/ww x ww x C, Transpose,
/// Reshape to windows N*nW x T x C (T = wh*ww), MatMul by qkv.weight^T and
/// Add qkv.bias, Reshape to N*nW x T x 3 x heads x C/heads, Transpose to
/// 3 x N*nW x heads x T x C/heads, Gathers of the queries (times
/// (C/heads)^-0.5), keys (Transposed) and values, MatMul, Add of the
/// relative position bias (1 x heads x T x T), for shifted windows a
/// Reshape to N x nW x heads x T x T, Add of the mask (nW x 1 x T x T)
/// and Reshape back, Softmax over the last axis, MatMul by the values,
/// Transpose and Reshape to N*nW x T x C, the output projection (MatMul,
/// Add), the windows put back (Reshape, Transpose, Reshape), and
/// torch.roll by +shift.
struct WindowAttentionMatch {
  std::vector<Node*> nodes; ///< Every matched node; the last is the exit.
  int64_t N = 0, H = 0, W = 0, C = 0; ///< The input's dims (channel-last).
  int64_t windowH = 0, windowW = 0, heads = 0, shiftH = 0, shiftW = 0;
  Value *qkvWeight = nullptr, *qkvBias = nullptr; ///< C x 3C, 3C.
  Value *projWeight = nullptr, *projBias = nullptr;
  Value *bias = nullptr, *mask = nullptr; ///< mask: nullptr if unshifted.
  /// nodes[0, qkvEnd) make the queries, keys and values, nodes[projBegin,
  /// end) the output projection and what follows it.
  size_t qkvEnd = 0, projBegin = 0;
};

/// Matches the window attention reading channel-last \p x; false if the
/// nodes from there differ from what the exporter writes in any way.
bool matchWindowAttention(const Graph& g, Value* x, WindowAttentionMatch& m);

/// Replaces matched window attention \p m (its input already
/// channel-first, N x C x H x W) by a 1 x 1 Conv to queries, keys and
/// values, window_attention, and a 1 x 1 Conv for the output projection.
void replaceWindowAttention(Graph& g, const WindowAttentionMatch& m);

/// nn.MultiheadAttention's self-attention as torch.onnx (PyTorch 1.13)
/// writes it for a B x T x D input x (batch_first, as torchvision's ViT
/// uses it): Transpose to T x B x D, MatMul by in_proj_weight^T (D x 3D),
/// Add in_proj_bias, Slices of the queries, keys and values, each
/// Reshaped to T x B*h x D/h and Transposed (the keys to B*h x D/h x T),
/// queries Div sqrt(D/h), MatMul, Softmax over the last axis, MatMul by
/// the values, Transpose and Reshape to T*B x D, Gemm by out_proj, Reshape
/// to T x B x D and Transpose back to B x T x D.
struct SelfAttention {
  std::vector<Node*> nodes; ///< Every matched node; the last is the exit.
  Value* x = nullptr;
  int64_t batch = 0, tokens = 0, dim = 0, heads = 0;
  /// How the tokens are held channel-first: B x D x tokenRows x
  /// tokenCols, row-major (T x 1 unless the caller says otherwise).
  int64_t tokenRows = 0, tokenCols = 1;
  Value *inWeight = nullptr, *inBias = nullptr; ///< D x 3D, 3D.
  Value *outWeight = nullptr, *outBias = nullptr;
  bool outTransposed = false; ///< Gemm transB: outWeight is D_out x D_in.
};

/// Matches the self-attention that starts with Transpose \p t0; false if
/// the nodes from there differ from what the exporter writes in any way.
bool matchSelfAttention(const Graph& g, Node* t0, SelfAttention& m);

/// Replaces matched self-attention \p m (its input already channel-first,
/// B x D x tokenRows x tokenCols) by a 1 x 1 Conv to queries, keys and values,
/// attention, and a 1 x 1 Conv for the output projection.
void replaceSelfAttention(Graph& g, const SelfAttention& m);

/// Multi-head attention written out by hand on B x T x D tokens, in the
/// two forms torch.onnx writes for the code people write:
///  - timm's: one Linear to 3D features, Reshape to B x T x 3 x heads x d,
///    Transpose (2, 0, 3, 1, 4), the queries, keys and values taken along
///    axis 0 by Gather (qkv[0]) or by Slice and Squeeze (unbind: a Split,
///    which the loader makes Slices);
///  - a Linear each (BERT-style): each Reshaped to B x T x heads x d and
///    Transposed (0, 2, 1, 3) (the keys (0, 2, 3, 1) where torch.onnx
///    merged the transpose of k^T into it);
/// then the scores q @ k^T (the keys Transposed (0, 1, 3, 2)), scaled by
/// any factor (a Mul or Div of the queries, of the scores or of both, or
/// none), a constant added or not (BEiT's relative position bias, LeViT's
/// attention biases, a mask: T x T, heads x T x T or 1 x heads x T x T),
/// Softmax over the last axis, MatMul by the values, Transpose (0, 2, 1,
/// 3) and Reshape to B x T x D. The projections around it are ordinary
/// Linears.
struct HeadsAttention {
  std::vector<Node*> nodes; ///< Every matched node; the last is the exit.
  /// What the heads are cut from: one B x T x 3D value (queries, keys and
  /// values one after another) or three B x T x D ones.
  std::vector<Value*> sources;
  int64_t batch = 0, dim = 0, heads = 0;
  /// The scale of the scores over the attention op's own d^-0.5 (timm's
  /// qk_scale, a temperature; 1 for the usual scale): the queries are
  /// multiplied by it first.
  double queryScale = 1;
  /// The constant added to the scores (nullptr: none), query-major,
  /// broadcast over the images and, with one T x T, over the heads.
  Value* bias = nullptr;
};

/// Matches the multi-head attention that \p start (a Reshape of tokens
/// into heads) begins; false if the nodes around it differ from either
/// form in any way.
bool matchHeadsAttention(const Graph& g, Node* start, HeadsAttention& m);

/// Replaces matched attention \p m by one attention op reading its sources
/// (held channel-first, B x features x \p rows x \p cols; three are
/// concatenated first; the queries scaled first by a Mul where the scale
/// is not d^-0.5) and writing B x D x rows x cols: `attention`, or with a
/// bias `window_attention` of one window of all rows x cols tokens.
void replaceHeadsAttention(Graph& g, const HeadsAttention& m, int64_t rows,
                           int64_t cols);

} // namespace hpvm::fe

#endif // TORCH2HPVM_FRONTEND_PASSES_ATTENTIONMATCHERS_H
