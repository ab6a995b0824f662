// Bad input to the importer: each gets a clear UserError saying what and where, never a
// crash, a hang or an out-of-bounds read.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <fstream>

#include "graph/text.h"
#include "frontend/model_checks.h"
#include "frontend/onnx_proto.h"
#include "frontend/tensor_io.h"
#include "graph/passes/pipeline.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

// y = Add(x, w) with w an initializer of 4 floats.
onnx::ModelProto small_model() {
  return frontend::parse_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[4] y)
    <float[4] w = {1, 2, 3, 4}> { y = Add(x, w) })");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_ERROR_HAS(call, text) \
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, text, error_of([&] { call; }))

TEST(ImportErrors, MissingFile) {
  EXPECT_ERROR_HAS(frontend::import_model_file("/nonexistent/model.onnx"), "no such file");
}

TEST(ImportErrors, EmptyFile) {
  fs::path d = test::temp_dir("import_test", "empty");
  write(d / "model.onnx", "");
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "empty");
}

TEST(ImportErrors, TruncatedFile) {
  std::string bytes = small_model().SerializeAsString();
  fs::path d = test::temp_dir("import_test", "truncated");
  write(d / "model.onnx", bytes.substr(0, bytes.size() / 2));
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "not an ONNX model");
}

TEST(ImportErrors, NotOnnx) {
  fs::path d = test::temp_dir("import_test", "text");
  write(d / "model.onnx", "this is a text file, not a protobuf\n");
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "not an ONNX model");
}

TEST(ImportErrors, UnsupportedOpsAreListedTogether) {
  onnx::ModelProto m = frontend::parse_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
    g (float[4] x) => (float[4] y) {
      a = Foo(x)
      b = Foo(a)
      c = com.example.Bar(b)
      y = Relu(c)
    })");
  std::string err = error_of([&] { frontend::import_model_proto(m, {}); });
  EXPECT_NE(err.find("2 unsupported ops"), std::string::npos) << err;
  EXPECT_NE(err.find("Foo (ai.onnx, opset 17): nodes 'Foo_0', 'Foo_1'"), std::string::npos) << err;
  EXPECT_NE(err.find("Bar (com.example, opset 1): node 'Bar_2'"), std::string::npos) << err;
  EXPECT_THROW(frontend::import_model_proto(m, {}), UnsupportedError);
}

// Ops that passes make (Im2Col, domain "braze") are not part of what a model may say.
TEST(ImportErrors, InternalOpsAreUnsupported) {
  onnx::ModelProto m = frontend::parse_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17, "braze" : 1]>
    g (float[1,1,4,4] x) => (float[1,4,9] y) {
      y = braze.Im2Col <kernel_shape = [2, 2]> (x)
    })");
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}), "Im2Col (braze, opset 1)");
}

TEST(ImportErrors, UnsupportedOpset) {
  onnx::ModelProto m = small_model();
  m.mutable_opset_import(0)->set_version(6);  // Add took a broadcast attribute before opset 7
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}),
                   "Add (ai.onnx, opset 6: braze imports this op from opset 7)");
  m.mutable_opset_import(0)->set_version(25);
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}), "opsets 1 to 24");
}

TEST(ImportErrors, RawDataSizeDisagreesWithDims) {
  onnx::ModelProto m = small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_raw_data(std::string(12, '\0'));  // 3 floats for dims [4]
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}),
                   "initializer 'w': raw_data holds 12 bytes but dims [4]");
}

TEST(ImportErrors, NegativeDims) {
  onnx::ModelProto m = small_model();
  m.mutable_graph()->mutable_initializer(0)->set_dims(0, -4);
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}), "negative dimension");
}

TEST(ImportErrors, DimsWhoseProductOverflows) {
  onnx::ModelProto m = small_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  for (int i = 0; i < 4; ++i) w->add_dims(int64_t{1} << 20);
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}), "overflows");
  w->clear_dims();
  w->add_dims(int64_t{1} << 40);  // fits int64 but not in memory: a clear limit, no allocation
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}), "limit");
}

TEST(ImportErrors, ExternalDataMustStayInTheModelFolder) {
  fs::path d = test::temp_dir("import_test", "external");
  fs::path outside = test::temp_dir("import_test", "external_outside");
  write(d / "weights.bin", std::string(16, '\0'));
  write(outside / "secret.bin", std::string(16, '\0'));
  fs::create_symlink(outside / "secret.bin", d / "link.bin");
  auto with_location = [&](const std::string& loc) {
    onnx::ModelProto m = small_model();
    auto* w = m.mutable_graph()->mutable_initializer(0);
    w->clear_float_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = w->add_external_data();
    kv->set_key("location");
    kv->set_value(loc);
    write(d / "model.onnx", m.SerializeAsString());
  };
  with_location("weights.bin");
  EXPECT_NO_THROW(frontend::import_model_file(d / "model.onnx"));
  with_location((outside / "secret.bin").string());
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "is absolute");
  with_location("../external_outside/secret.bin");
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "leaves the model's folder");
  with_location("link.bin");
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "through a symlink");
  with_location("model.onnx");  // the model's own bytes read as weights gave NaN outputs
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "is the model file itself");
  with_location("./model.onnx");
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "is the model file itself");
  with_location("missing.bin");
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "cannot");
}

// Subgraphs within subgraphs: If nodes `levels` deep, each with its then_branch.
std::string nested_ifs(int levels) {
  onnx::ModelProto m = small_model();
  onnx::GraphProto inner = m.graph();
  for (int i = 0; i < levels; ++i) {
    onnx::GraphProto outer = m.graph();
    onnx::NodeProto* n = outer.add_node();
    n->set_op_type("If");
    n->add_input("x");
    n->add_output("z" + std::to_string(i));
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = std::move(inner);
    inner = std::move(outer);
  }
  *m.mutable_graph() = std::move(inner);
  return m.SerializeAsString();
}

TEST(ImportErrors, NestingDeeperThanTheLimit) {
  EXPECT_ERROR_HAS(frontend::import_model_bytes(nested_ifs(2)),
                   "unsupported op");  // If: parsed, then refused
  EXPECT_ERROR_HAS(frontend::import_model_bytes(nested_ifs(50)),
                   "nests messages more than 100 levels deep");
  EXPECT_ERROR_HAS(frontend::import_model_bytes(nested_ifs(1000)),
                   "nested more than 1000 levels deep?");
}

// A model file over protobuf's 2 GiB: refused from its size, before it is read (a sparse file:
// no disk space used).
TEST(ImportErrors, ModelFileOverTwoGiB) {
  fs::path d = test::temp_dir("import_test", "huge_file");
  write(d / "model.onnx", small_model().SerializeAsString());
  fs::resize_file(d / "model.onnx", (uint64_t{2} << 30) + (uint64_t{100} << 20));
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "the model file is 2.10 GiB");
  EXPECT_ERROR_HAS(frontend::import_model_file(d / "model.onnx"), "external data");
  fs::remove_all(d);
}

// More nodes than braze imports (subgraphs counted): refused by count, before any is read.
TEST(ImportErrors, MoreNodesThanTheLimit) {
  onnx::ModelProto m = small_model();
  onnx::GraphProto* g = m.mutable_graph();
  onnx::NodeProto relu;
  relu.set_op_type("Relu");
  relu.add_input("y");
  relu.add_output("r");
  for (int64_t i = 0; i < frontend::kMaxNodes; ++i) *g->add_node() = relu;
  EXPECT_ERROR_HAS(frontend::import_model_bytes(m.SerializeAsString()),
                   "the model has 200001 nodes (subgraphs included); braze imports at most 200000");
}

// Ranks over braze's limit: declared on an input, or computed by the model (a Reshape to a
// ConstantOfShape of a hundred thousand ones; the fuzzer's find was 4 million, which kept
// every pass busy for seconds).
TEST(ImportErrors, RankOverTheLimit) {
  std::string dims = "1";
  for (size_t i = 1; i <= kMaxRank; ++i) dims += ",1";
  EXPECT_ERROR_HAS(frontend::import_model_bytes(frontend::parse_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[)" + dims + R"(] x) => (float[)" + dims + R"(] y) { y = Relu(x) })")
                                                    .SerializeAsString()),
                   "input 'x' has rank 65; braze handles tensors of rank at most 64");
  const auto import_and_passes = [](const std::string& text) {
    graph::Graph g =
        frontend::import_model_bytes(frontend::parse_model_text(text).SerializeAsString()).graph;
    graph::passes::run_pipeline(g);
  };
  EXPECT_ERROR_HAS(import_and_passes(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (float y) {
      n = Constant <value = int64[1] {100000}> ()
      ones = ConstantOfShape <value = int64[1] {1}> (n)
      r = Reshape(x, ones)
      y = ReduceSum <keepdims = 0> (r) })"),
                   "output 0 has rank 100000; braze handles tensors of rank at most 64");
}

TEST(ImportErrors, GraphWithACycle) {
  onnx::ModelProto m = frontend::parse_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[4] y) {
      a = Add(x, b)
      b = Relu(a)
      y = Relu(b)
    })");
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}), "cycle");
}

TEST(ImportErrors, UndefinedValue) {
  onnx::ModelProto m = frontend::parse_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[4] y) { y = Add(x, nowhere) })");
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}), "reads 'nowhere'");
}

TEST(ImportErrors, WrongAttributeType) {
  onnx::ModelProto m = frontend::parse_model_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[4] x) => (float[4] y) { y = LeakyRelu <alpha = 2> (x) })");
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}),
                   "attribute 'alpha' should be of type float");
}

TEST(ImportErrors, UnknownOrMisplacedAttributes) {
  auto with = [](const std::string& body) {
    return frontend::parse_model_text(R"(
      <ir_version: 8, opset_import: ["" : 17]>
      g (float[4,4] x) => (float[4,4] y) { )" +
                                      body + " }");
  };
  EXPECT_ERROR_HAS(frontend::import_model_proto(with("y = Add <perm = [1, 0]> (x, x)"), {}),
                   "unknown attribute 'perm' (Add at opset 17 takes none)");
  EXPECT_ERROR_HAS(frontend::import_model_proto(with("y = Transpose <axis = 1> (x)"), {}),
                   "unknown attribute 'axis' (Transpose at opset 17 takes perm)");
  onnx::ModelProto m = with("y = Transpose <perm = [1, 0]> (x)");
  EXPECT_NO_THROW(frontend::import_model_proto(m, {}));
  onnx::AttributeProto* a = m.mutable_graph()->mutable_node(0)->mutable_attribute(0);
  a->set_name("");
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}), "an attribute has no name");
  a->set_name("perm");
  *m.mutable_graph()->mutable_node(0)->add_attribute() = *a;
  EXPECT_ERROR_HAS(frontend::import_model_proto(m, {}), "attribute 'perm' is given twice");
  // What older opsets had is known at those opsets (BatchNormalization's spatial, opsets 7 and 8).
  const std::string bn = R"(
    g (float[2,4,3] x, float[4] s, float[4] b, float[4] m, float[4] v) => (float[2,4,3] y) {
      y = BatchNormalization <spatial = 1> (x, s, b, m, v) })";
  EXPECT_NO_THROW(frontend::import_model_proto(
      frontend::parse_model_text(R"(<ir_version: 3, opset_import: ["" : 7]>)" + bn), {}));
  EXPECT_ERROR_HAS(
      frontend::import_model_proto(
          frontend::parse_model_text(R"(<ir_version: 8, opset_import: ["" : 15]>)" + bn), {}),
      "unknown attribute 'spatial'");
}

TEST(ImportErrors, NamesThatAreNotUtf8) {
  auto bad = [](const std::function<void(onnx::ModelProto&)>& spoil) {
    onnx::ModelProto m = small_model();
    spoil(m);
    return m;
  };
  const std::string not_utf8 = "ab\xAB";
  EXPECT_ERROR_HAS(
      frontend::import_model_proto(
          bad([&](auto& m) { m.mutable_graph()->mutable_node(0)->set_name(not_utf8); }), {}),
      "node 0: its name is not valid UTF-8 (byte 0xAB at offset 2)");
  EXPECT_ERROR_HAS(
      frontend::import_model_proto(bad([&](auto& m) {
                                     auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
                                     a->set_name(not_utf8);
                                     a->set_type(onnx::AttributeProto::INT);
                                   }),
                                   {}),
      "node 0: the name of attribute 0 is not valid UTF-8");
  EXPECT_ERROR_HAS(
      frontend::import_model_proto(
          bad([&](auto& m) { m.mutable_graph()->mutable_input(0)->set_name(not_utf8); }), {}),
      "the name of graph input 0 is not valid UTF-8");
  EXPECT_ERROR_HAS(
      frontend::import_model_proto(
          bad([&](auto& m) { m.mutable_graph()->mutable_initializer(0)->set_name(not_utf8); }), {}),
      "the name of initializer 0 is not valid UTF-8");
}

TEST(ImportErrors, Utf8Validation) {
  using graph::invalid_utf8_at;
  constexpr size_t ok = std::string_view::npos;
  EXPECT_EQ(invalid_utf8_at("plain ascii"), ok);
  EXPECT_EQ(invalid_utf8_at("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), ok);  // é € 😀
  EXPECT_EQ(invalid_utf8_at("a\x80"), 1u);             // a lone continuation byte
  EXPECT_EQ(invalid_utf8_at("\xC0\xAF"), 0u);          // an overlong '/'
  EXPECT_EQ(invalid_utf8_at("\xE0\x80\xAF"), 0u);      // overlong in three bytes
  EXPECT_EQ(invalid_utf8_at("\xED\xA0\x80"), 0u);      // a surrogate
  EXPECT_EQ(invalid_utf8_at("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(invalid_utf8_at("xy\xE2\x82"), 2u);        // cut short
  EXPECT_EQ(invalid_utf8_at(std::string_view("a\0b", 3)), ok);
}

TEST(ImportErrors, ShapesForUnknownInput) {
  frontend::ImportOptions o;
  o.shapes["nope"] = {4};
  EXPECT_ERROR_HAS(frontend::import_model_proto(small_model(), o), "'nope', which is not an input");
  o.shapes.clear();
  o.shapes["x"] = {5};
  EXPECT_ERROR_HAS(frontend::import_model_proto(small_model(), o), "model fixes it to 4");
}

TEST(ImportErrors, ShapeSpecSyntax) {
  EXPECT_ERROR_HAS(frontend::parse_shape_spec("x1x2"), "not NAME:DIMS");
  EXPECT_ERROR_HAS(frontend::parse_shape_spec("x:1xq"), "not a dimension");
  EXPECT_ERROR_HAS(frontend::parse_shape_spec("x:2x"), "ends without a dimension");
  EXPECT_EQ(frontend::parse_shape_spec("a:1x128,b:7").at("a"), (Shape{1, 128}));
  EXPECT_EQ(frontend::parse_shape_spec("s:").at("s"), Shape{});
}

TEST(ImportSymbolicDims, DefaultToOneWithANote) {
  frontend::ImportResult r = test::import_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[batch, 4] x) => (float[batch, 4] y) { y = Relu(x) })");
  EXPECT_EQ(r.graph.value(r.graph.inputs()[0]).shape, (Shape{1, 4}));
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("'batch'"), std::string::npos);
  frontend::ImportOptions o;
  o.shapes["x"] = {8, 4};
  frontend::ImportResult r8 = test::import_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[batch, 4] x) => (float[batch, 4] y) { y = Relu(x) })",
                                                o);
  EXPECT_EQ(r8.graph.value(r8.graph.outputs()[0].value).shape, (Shape{8, 4}));
  EXPECT_TRUE(r8.notes.empty());
}

TEST(TensorFiles, NpyRoundTripAndBadFiles) {
  fs::path d = test::temp_dir("import_test", "npy");
  Tensor t = test::random(DType::Float16, {3, 5}, 7);
  frontend::write_npy(d / "t.npy", t);
  EXPECT_TRUE(frontend::read_tensor_file(d / "t.npy").tensor.bitwise_equal(t));
  std::string bytes = frontend::read_file(d / "t.npy");
  write(d / "short.npy", bytes.substr(0, bytes.size() - 2));
  EXPECT_ERROR_HAS(frontend::read_tensor_file(d / "short.npy"), "needs");
  // Shapes are read as the tuple they are: a sign or a stray character is an error, not
  // skipped ("(-2, 16)" was read as [2,16]). The replacements keep the header's length.
  auto npy = [](const std::string& shape, size_t data_bytes) {  // a version 1.0 .npy of float32
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() & 0xff) +
           static_cast<char>(header.size() >> 8) + header + std::string(data_bytes, '\0');
  };
  write(d / "made.npy", npy("(3, 5)", 60));
  EXPECT_EQ(frontend::read_tensor_file(d / "made.npy").tensor.shape(), (Shape{3, 5}));
  for (const char* shape :
       {"(-3, 5)", "(3, -5)", "(3, 5x)", "(3,, 5)", "(3 5)", "(3, 5.)", "(+3, 5)"}) {
    write(d / "spoiled.npy", npy(shape, 60));
    EXPECT_ERROR_HAS(frontend::read_tensor_file(d / "spoiled.npy"), "not a non-negative integer");
  }
  frontend::write_npy(d / "v.npy", test::random(DType::Float32, {4}, 1));  // "(4,)"
  EXPECT_EQ(frontend::read_tensor_file(d / "v.npy").tensor.shape(), Shape{4});
  frontend::write_npy(d / "s.npy", test::random(DType::Float32, {}, 1));  // "()"
  EXPECT_EQ(frontend::read_tensor_file(d / "s.npy").tensor.shape(), Shape{});
  write(d / "junk.pb", "\xff\xff\xff");
  EXPECT_ERROR_HAS(frontend::read_tensor_file(d / "junk.pb"), "not a valid ONNX TensorProto");
}

}  // namespace
}  // namespace braze
