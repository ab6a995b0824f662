// Node attributes: a closed set of kinds, mirroring ONNX's (graphs excepted).
#pragma once

#include <braze/tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace braze::graph {

enum class AttrType { Int, Float, String, Ints, Floats, Strings, Tensor };

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, Tensor>;

// Sorted by name, so printing and hashing are deterministic.
using Attributes = std::map<std::string, AttrValue, std::less<>>;

AttrType attr_type(const AttrValue& v);
std::string_view attr_type_name(AttrType t);
std::string attr_value_str(const AttrValue& v);  // deterministic, "C" locale

}  // namespace braze::graph
