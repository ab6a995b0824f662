// External weights: large ones at 64-byte-aligned offsets are tensors over the mapped file
// (frontend/mapped_file.h), the rest are read; either way each holds the file's bytes, and a
// write to a mapped weight stays in this process (the file keeps its bytes).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "frontend/onnx_proto.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// y = Add(Add(x, big), small): big (32768 floats at offset 0, mapped) and small (32768 floats
// at offset 131076, not 64-byte aligned: read), both from weights.bin.
TEST(ExternalData, MappedAndReadWeightsHoldTheFilesBytes) {
  const fs::path d =
      fs::temp_directory_path() / ("braze_external_test_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  constexpr int64_t kN = 32768;
  constexpr uint64_t kSmallAt = kN * 4 + 4;
  std::vector<float> big(kN), small(kN);
  for (int64_t i = 0; i < kN; ++i)
    big[i] = 0.5f * static_cast<float>(i), small[i] = -static_cast<float>(i) - 1;
  {
    std::ofstream out(d / "weights.bin", std::ios::binary);
    out.write(reinterpret_cast<const char*>(big.data()), kN * 4);
    out.write("pad!", 4);
    out.write(reinterpret_cast<const char*>(small.data()), kN * 4);
  }
  onnx::ModelProto m = frontend::parse_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[32768] x) => (float[32768] y) {
      a = Add(x, big)  y = Add(a, small) })");
  auto external = [&](const char* name, uint64_t offset) {
    onnx::TensorProto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(kN);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : {std::pair<std::string, std::string>{"location", "weights.bin"},
                        {"offset", std::to_string(offset)},
                        {"length", std::to_string(kN * 4)}}) {
      auto* kv = t->add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    }
  };
  external("big", 0);
  external("small", kSmallAt);
  std::ofstream(d / "model.onnx", std::ios::binary) << m.SerializeAsString();
  const std::string before = file_bytes(d / "weights.bin");

  frontend::ImportResult r = frontend::import_model_file(d / "model.onnx");
  const graph::Graph& g = r.graph;
  const Tensor* b = nullptr;
  const Tensor* s = nullptr;
  for (size_t i = 0; i < g.num_values(); ++i) {
    const graph::Value& v = g.value(static_cast<graph::ValueId>(i));
    if (v.name == "big") b = v.constant.get();
    if (v.name == "small") s = v.constant.get();
  }
  ASSERT_TRUE(b && s);
  EXPECT_EQ(std::memcmp(b->raw(), big.data(), kN * 4), 0);
  EXPECT_EQ(std::memcmp(s->raw(), small.data(), kN * 4), 0);
  // A write to the weight (the mapping is private) leaves the file as it was.
  static_cast<float*>(const_cast<Tensor*>(b)->raw())[7] = 1234.f;
  EXPECT_EQ(file_bytes(d / "weights.bin"), before);

  // A file shorter than the weights it should hold is an error naming it.
  fs::resize_file(d / "weights.bin", kN * 4 + 100);
  test::expect_user_error([&] { frontend::import_model_file(d / "model.onnx"); },
                          {"weights.bin", "too short"});
  fs::remove_all(d);
}

}  // namespace
}  // namespace braze
