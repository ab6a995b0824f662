#include "graph/ops/families.h"
#include "graph/ops/helpers.h"

namespace braze::graph {
void register_conv_pool_ops(std::vector<OpDef>& r) {}
}  // namespace braze::graph
