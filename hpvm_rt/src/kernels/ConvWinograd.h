// ConvWinograd.h - exact fp32 3x3 convolutions at stride 1, of any
// dilation, as Winograd's minimal filtering F(4x4, 3x3), on the CPUs for
// which oneDNN has no Winograd kernel (below AVX-512: its jit:avx2 direct
// kernel is all it offers there).
//
// Each 4x4 tile of output pixels is computed from a 6x6 patch of input:
// the patch transformed (Bt d B), multiplied point by point with the
// transformed filter (G g Gt) and summed over the input channels, the 36
// products transformed back (At m A). The sums over channels of all tiles
// are 36 matrix products, one per point of the 6x6 patch (tiles x C times
// C x K), which oneDNN's batched matmul computes: 36 products of 2*C
// flops per tile of 16 pixels against 16 * 9 of 2*C for the direct
// convolution, 4x fewer. A dilated window is the same convolution on each
// of the dh x dw phase grids of the output (pixels dh rows and dw columns
// apart): a tile's pixels and its patch's are spread by the dilation.
//
// Activations are nChw8c, as oneDNN's AVX2 kernels lay them out on either
// side; the bias and batch norm are folded into the transformed filter,
// the activation, residual and second activation applied as each tile is
// written. The sums are rounded differently from the direct kernel's, as
// in oneDNN's own Winograd kernels on AVX-512 (within 1e-5 relative).
#ifndef HPVM_RT_KERNELS_CONVWINOGRAD_H
#define HPVM_RT_KERNELS_CONVWINOGRAD_H

#include "base/KnobSpec.h"
#include "kernels/Kernels.h"
#include "kernels/TensorImpl.h"

namespace hpvm::rt::kern {

/// True where runConvWinograd computes this convolution faster than the
/// direct kernel would: the CPU's level is avx2, the exact fp32 knob, a
/// 3x3 window at stride 1 (any dilation), no groups, no gate, 32 or more
/// input and output channels in blocks of 8, and enough tiles and products
/// per image (ConvWinograd.cpp's kMinTiles, kMinFlops; per image, so that
/// an image's result does not depend on its batch).
bool convWinogradApplies(const KnobSpec& knob, const ConvArgs& a,
                         const PostOps& post, const Dims4& xd, const Dims4& wd,
                         const Dims4& yd);

/// The convolution as above, on any CPU (x86-64-v3): x read as nChw8c
/// (reordered once if stored otherwise), y written as nChw8c. Requires a
/// 3x3 window at stride 1, no groups, no gate, C and K multiples of 8, a
/// residual (if any) of y's dims. An image's tiles go through the matmul
/// in rounds of \p roundTiles (0: as many as fill a few MiB).
void runConvWinograd(const Tensor* x, const Tensor* w, const ConvArgs& a,
                     const PostOps& post, Tensor* y, const Dims4& xd,
                     const Dims4& wd, const Dims4& yd, int64_t roundTiles = 0);

} // namespace hpvm::rt::kern

#endif // HPVM_RT_KERNELS_CONVWINOGRAD_H
