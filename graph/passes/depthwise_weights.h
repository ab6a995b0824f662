// Depthwise convolution weights stored channels-last (#19). A depthwise Conv (one input and
// one output channel a group) whose X comes channels-first through a Transpose from a
// channels-last value (conv_as_matmul's plan: sink_transposes leaves that Transpose in front of
// the ops that read channels-first) reads its constant W [C, 1, k…] as Transpose(W'), W'
// [k…, 1, C] made here at compile time. The pointwise schedule then computes a vector of
// channels at a time (codegen/lower/conv_pool.cpp, depthwise_lanes) and each tap's weights
// for those channels are one vector load, like its inputs, where W's layout puts them a
// window apart. fold_constants leaves such a Transpose alone (is_depthwise_weight). A Conv
// that fold_conv_affine would still fold an op into keeps its W until that is done. Runs
// after sink_transposes.
#pragma once

#include "graph/ir.h"

namespace braze::graph::passes {

// Whether node `t` is a Transpose this pass made: of a constant, read only as the W of live
// depthwise Convs.
bool is_depthwise_weight(const Graph& g, const Users& users, NodeId t);

int store_depthwise_weights_channels_last(Graph& g);

}  // namespace braze::graph::passes
