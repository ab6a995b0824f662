// Builds a float32 test model op by op (the convolution cases' graphs): random weights scaled
// by 1 / √fan-in, as a trained net's are, so that activations stay near 1 and a half type's
// rounding stays within its tolerance; each op's output shape inferred as it is added.
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "graph/op_context.h"
#include "graph/registry.h"
#include "tests/test_util.h"

namespace braze::test {

struct ModelBuilder {
  graph::Graph g;
  uint64_t seed;

  explicit ModelBuilder(uint64_t first_seed) : seed(first_seed) {}

  // A float32 constant of shape s, fan-in the product of its dims after the first.
  graph::ValueId weight(const Shape& s) {
    Tensor t = test::random(DType::Float32, s, ++seed);
    int64_t fan_in = 1;
    for (size_t d = 1; d < s.size(); ++d) fan_in *= s[d];
    const double scale = 1.0 / std::sqrt(static_cast<double>(fan_in));
    for (int64_t i = 0; i < t.numel(); ++i) t.set_f64(i, t.get_f64(i) * scale);
    return g.add_constant(g.unique_name("c"), t);
  }
  graph::ValueId op(const char* type, std::vector<graph::ValueId> ins,
                    graph::Attributes attrs = {}) {
    graph::ValueId y = g.add_value(g.unique_name(std::string(type) + "_y"), DType::Float32, {});
    graph::infer_node(
        g, g.add_node(&graph::op(type), g.unique_name(type), std::move(ins), {y}, attrs, 18));
    return y;
  }
  graph::ValueId input(const Shape& s) {
    const graph::ValueId x = g.add_value("x", DType::Float32, s);
    g.add_input(x);
    return x;
  }
};

}  // namespace braze::test
