// The rotations rotary_projections (graph/passes/rotary_projection.h) takes into a projection's
// epilogue, matched on one head group of the product: Llama's rotate_half written out, and
// opset 23's RotaryEmbedding as its expansion (graph/ops/composite.cpp) leaves it. Each
// matcher checks every value between the heads and the rotated result has no other reader.
#pragma once

#include <optional>

#include "graph/ir.h"

namespace braze::graph::passes::rotary {

// How one head group is rotated: Llama's rotate_half written out over T [B, h, S, D] with
// full tables, or RotaryEmbedding's expansion over P [B, S, h, D] with half tables.
struct Rotation {
  ValueId out = kNoValue;  // the rotated heads: [B, h, S, D], or [B, S, h, D] where seq_first
  ValueId cos = kNoValue, sin = kNoValue;  // [.., S, D] constants; seq_first: [b, S, 1, D/2]
  bool seq_first = false;    // RotaryEmbedding's expansion (its tables hold one angle a pair)
  bool interleaved = false;  // its pairs are (2t, 2t + 1), already neighbours in the product
};

// rotate_half on T [B, h, S, D]: out = T · cos + Concat(−T[…, D/2:], T[…, :D/2]) · sin, the
// tables [.., S, D] constants of T's type.
std::optional<Rotation> match_rotate_half(const Graph& g, const Users& users, ValueId t);

// RotaryEmbedding's expansion on P [B, S, h, D] (the whole head rotated, halves or
// interleaved pairs; the tables [b, S, 1, D/2] of P's type, constant or not).
std::optional<Rotation> match_rotary_op(const Graph& g, const Users& users, ValueId p);

// Whether two groups' rotations can be one over the merged product: the same form, and tables
// that are one value, equal constants, or the same op over such inputs (each RotaryEmbedding
// node gathers its tables itself).
bool same_rotation(const Graph& g, const Rotation& a, const Rotation& b);

bool is_op(const Node& n, const char* name);  // the default domain's op `name`
// The only consumer of v (no graph output), else kNoNode.
NodeId sole_user(const Graph& g, const Users& users, ValueId v);
// The constant operand of binary node n whose other operand is x, else kNoValue.
ValueId constant_beside(const Graph& g, const Node& n, ValueId x);

}  // namespace braze::graph::passes::rotary
