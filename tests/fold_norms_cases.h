// A post-norm block whose LayerNormalization folds into the two products reading it
// (graph/passes/fold_norms.h), for the codegen and GPU tests of the wgmma schedule's row
// statistics.
#pragma once

#include <string>

#include <fmt/format.h>

#include "graph/passes/cse.h"
#include "graph/passes/dce.h"
#include "graph/passes/fold_norms.h"
#include "graph/passes/pipeline.h"
#include "graph/passes/precision.h"
#include "tests/test_util.h"

namespace braze::test {

inline std::string constant(const char* name, int rows, int cols, unsigned seed, double scale) {
  std::string v;
  for (int i = 0; i < rows * cols; ++i) {
    seed = seed * 1103515245u + 12345u;
    v += fmt::format("{}{:.4f}", i ? ", " : "",
                     scale * (static_cast<double>((seed >> 8) % 2000) / 1000 - 1));
  }
  return rows == 1
             ? fmt::format("{} = Constant <value = float[{}] {{{}}}> ()\n", name, cols, v)
             : fmt::format("{} = Constant <value = float[{},{}] {{{}}}> ()\n", name, rows, cols, v);
}

// x [2, 128, k] → h = LN(x) → y1 = h W1 + b1 (a projection) and y2 = GELU-free h W2 + h (a
// product with h as its residual): two products reading LN(x), one element-wise reader.
inline std::string post_norm_block(int k, int n) {
  return fmt::format(R"(<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,128,{0}] x) => (float[2,128,{1}] y1, float[2,128,{0}] y2) {{
      {2}{3}{4}{5}{6}
      h = LayerNormalization <axis = -1, epsilon = 1e-5> (x, gm, bt)
      p1 = MatMul(h, w1)  y1 = Add(p1, b1)  p2 = MatMul(h, w2)  y2 = Add(p2, h) }})",
                     k, n, constant("gm", 1, k, 7, 1.5), constant("bt", 1, k, 8, 0.5),
                     constant("w1", k, n, 9, 0.1), constant("b1", 1, n, 10, 0.5),
                     constant("w2", k, k, 11, 0.1));
}

// The block in `half` after the pipeline and precision conversion, not folded.
inline graph::Graph half_post_norm_block(int k, int n, DType half) {
  graph::Graph g = graph_from_text(post_norm_block(k, n));
  graph::passes::run_pipeline(g);
  graph::passes::convert_precision(g, half);
  graph::passes::run_pipeline(g);
  return g;
}

// The same after the fold.
inline graph::Graph folded_post_norm_block(int k, int n, DType half) {
  graph::Graph g = half_post_norm_block(k, n, half);
  if (graph::passes::fold_norms_into_products(g) != 1)
    throw InternalError("the post-norm block's LayerNormalization did not fold");
  graph::passes::eliminate_common_subexpressions(g);
  graph::passes::eliminate_dead_code(g);
  return g;
}

}  // namespace braze::test
