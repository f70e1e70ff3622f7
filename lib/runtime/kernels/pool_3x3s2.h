#pragma once
// Max pooling over 3x3 windows at stride 2 with one row and column of padding before (ResNet's
// stem pool), float32, forward. The general loops of conv.cpp run one short loop per window
// offset and take the edge windows one by one (at batch 4, 2.5x the memory bound); here each
// input row is split once by column parity, NaN where a window passes the edge, so a window's
// nine elements sit at fixed unit-stride offsets and one vectorised loop over an output row takes
// them all. Same bits as the general loops
// (tests/unit/kernels_conv.cpp checks ties, signed zeros, NaN and edges). The grad takes the same
// rows for its search, vectorised over an output row, then adds in the general loops' order.
#include <cstdint>

#include "ops/conv_geometry.h"

namespace spopt::rt {

// Whether pool2d of this (non-adaptive, max) window may take maxPool3x3Stride2.
bool isMax3x3Stride2(const Window2d& w);

// Out = the window maxima of `planes` planes of X (NCHW).
void maxPool3x3Stride2(const Window2d& w, int64_t planes, const float* x, float* out);

// X@GRAD of maxPool3x3Stride2, given X, Out and Out@GRAD: each window's Out@GRAD added to its
// first element equal to Out, windows in row-major order, from zero.
void maxPoolGrad3x3Stride2(const Window2d& w, int64_t planes, const float* x, const float* out, const float* dy, float* dx);

}  // namespace spopt::rt
