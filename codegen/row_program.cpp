#include "codegen/row_program.h"

#include <braze/error.h>

#include <cmath>

#include <fmt/format.h>

namespace braze::codegen {

// Replaces {name} fields of a row-program template.
std::string substitute(const std::string& templ, const std::map<std::string, std::string>& fields,
                       const graph::Node& n) {
  std::string out;
  for (size_t i = 0; i < templ.size(); ++i) {
    if (templ[i] != '{') {
      out += templ[i];
      continue;
    }
    size_t j = templ.find('}', i);
    BRAZE_CHECK(j != std::string::npos, n.describe() + ": unclosed field in row program");
    std::string name = templ.substr(i + 1, j - i - 1);
    auto it = fields.find(name);
    BRAZE_CHECK(it != fields.end(),
                n.describe() + ": row program uses unknown field {" + name + "}");
    out += it->second;
    i = j;
  }
  return out;
}

std::string identity_of(Combine combine, ComputeType type) {
  bool flt = is_floating(type);
  switch (combine) {
    case Combine::Sum:
      return cuda_literal(type, 0);
    case Combine::Prod:
      return cuda_literal(type, 1);
    case Combine::Max:
      return flt ? cuda_literal(type, -INFINITY) : cuda_literal(type, -1e300);
    case Combine::Min:
      return flt ? cuda_literal(type, INFINITY) : cuda_literal(type, 1e300);
    default:
      throw InternalError("identity_of: an arg reduction keeps an index, not a value");
  }
}

std::string combiner(Combine combine, ComputeType type) {
  switch (combine) {
    case Combine::Sum:
      return fmt::format("[]({0} a, {0} b) {{ return a + b; }}", type);
    case Combine::Prod:
      return fmt::format("[]({0} a, {0} b) {{ return a * b; }}", type);
    case Combine::Max:
      return fmt::format("[]({0} a, {0} b) {{ return braze_max(a, b); }}", type);
    case Combine::Min:
      return fmt::format("[]({0} a, {0} b) {{ return braze_min(a, b); }}", type);
    default:
      throw InternalError("combiner: an arg reduction compares (braze_arg_better)");
  }
}

bool uses_field(const CudaRowProgram& p, const std::string& name) {
  std::string f = "{" + name + "}";
  for (const auto& pass : p.passes)
    if (pass.map.find(f) != std::string::npos) return true;
  for (const auto& o : p.outputs)
    if (o.expr.find(f) != std::string::npos) return true;
  return false;
}

}  // namespace braze::codegen
