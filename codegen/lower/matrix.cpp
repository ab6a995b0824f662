// How the matrix ops (graph/ops/matrix.cpp) become CUDA.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "codegen/lower/families.h"
#include "graph/ops/matrix.h"
#include "graph/ops/helpers.h"

namespace braze::codegen {
namespace {

using namespace graph;
using namespace graph::ops;

std::string einsum_index(CudaIndexCtx& ctx) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.node().inputs.size(); ++i) shapes.push_back(ctx.in_shape(i));
  EinsumSpec spec = parse_einsum(ctx.node(), shapes);
  const ComputeType t = compute_type(ctx.in_dtype(0));
  const bool wrap = t == ComputeType::Int;
  std::vector<std::string> label(spec.sizes.size());
  for (size_t i = 0; i < spec.out_labels.size(); ++i)
    label[static_cast<size_t>(spec.out_labels[i])] = ctx.coord(i);
  std::vector<int> contracted;
  Shape csizes;
  for (int l = 0; l < static_cast<int>(spec.sizes.size()); ++l)
    if (std::find(spec.out_labels.begin(), spec.out_labels.end(), l) == spec.out_labels.end()) {
      contracted.push_back(l);
      csizes.push_back(spec.sizes[static_cast<size_t>(l)]);
    }
  auto product = [&] {
    std::string prod;
    for (size_t k = 0; k < shapes.size(); ++k) {
      std::vector<std::string> at;
      for (size_t dim = 0; dim < shapes[k].size(); ++dim)
        at.push_back(shapes[k][dim] == 1 ? "0LL"
                                         : label[static_cast<size_t>(spec.in_labels[k][dim])]);
      std::string v = ctx.load(k, at);
      prod = prod.empty() ? v
             : wrap ? fmt::format("(long long)((unsigned long long){} * (unsigned long long){})",
                                  prod, v)
                    : fmt::format("{} * {}", prod, v);
    }
    return prod;
  };
  if (contracted.empty()) return product();
  const int64_t count = checked_numel(csizes, ctx.node().describe() + " summation space");
  return ctx.accumulate(
      cuda_name(t), cuda_literal(t, 0), count, [&](const std::string& acc, const std::string& k) {
        std::vector<std::string> idx = cuda_unravel(k, csizes);
        for (size_t i = 0; i < contracted.size(); ++i)
          label[static_cast<size_t>(contracted[i])] =
              idx[i] == "0LL" ? idx[i] : ctx.let("long long", idx[i]);
        std::string p = product();
        return wrap ? fmt::format("(long long)((unsigned long long){} + (unsigned long long){})",
                                  acc, p)
                    : fmt::format("{} + {}", acc, p);
      });
}

}  // namespace

void lower_matrix_ops(LoweringTable& t) { t.add("Einsum").index = einsum_index; }

}  // namespace braze::codegen
