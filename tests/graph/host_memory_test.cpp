// Host memory checked before a large allocation (#21): a tensor or an op's output bigger than
// the memory at hand is a UserError naming it and both sizes. The limit is set in a forked
// child with RLIMIT_AS (the address space braze may still map), so the test needs no small
// machine and leaves this process alone.
#include <braze/error.h>
#include <braze/tensor.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <string>

#include "frontend/onnx_proto.h"
#include "graph/host_memory.h"
#include "tests/test_util.h"

namespace braze {
namespace {

// Runs `body` in a child whose address space may grow by at most 1 GiB more; the child exits
// 0 when `body` throws a UserError holding every one of `needles`, 1 otherwise.
void expect_user_error_under_a_1gib_limit(const std::function<void()>& body,
                                          const std::vector<std::string>& needles) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    const uint64_t mapped = pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    rlimit rl{mapped + (uint64_t{1} << 30), mapped + (uint64_t{1} << 30)};
    if (::setrlimit(RLIMIT_AS, &rl) != 0) ::_exit(3);
    try {
      body();
    } catch (const UserError& e) {
      const std::string m = e.what();
      for (const std::string& n : needles)
        if (m.find(n) == std::string::npos) {
          fprintf(stderr, "message without '%s': %s\n", n.c_str(), m.c_str());
          ::_exit(1);
        }
      ::_exit(0);
    } catch (...) {
    }
    fprintf(stderr, "no UserError\n");
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(HostMemory, ATensorLargerThanWhatIsAvailableIsAUserError) {
  expect_user_error_under_a_1gib_limit([] { Tensor t(DType::Float32, {int64_t{1} << 30}); },
                                       {"a tensor of shape [1073741824] and dtype float32",
                                        "needs 4.00 GiB", "of host memory", "is available"});
}

TEST(HostMemory, AnOpOutputLargerThanWhatIsAvailableNamesTheNode) {
  // Expand of a 1-element input to 2^30 floats (4 GiB) on the reference executor.
  graph::Graph g = test::graph_from_text(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    g (float[1] x) => (float y) {
      s = Constant <value = int64[1] {1073741824}> ()  e = Expand(x, s)  y = ReduceSum <keepdims = 0> (e) })");
  expect_user_error_under_a_1gib_limit([&] { test::run(g, {test::floats({1}, {1.f})}); },
                                       {"Expand", "output 0", "needs 4.00 GiB of host memory"});
}

// A TensorProto whose dims need 3 GiB but whose float_data holds two values: refused for the
// count before anything is allocated (the fuzzer's find: 3.3 GB allocated for the message).
TEST(HostMemory, InlineDataIsCountedBeforeTheTensorIsAllocated) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(836565000);
  t.add_float_data(1.f);
  t.add_float_data(2.f);
  expect_user_error_under_a_1gib_limit(
      [&] { frontend::tensor_from_proto(t, {}, "w"); },
      {"w: float_data holds 2 values but its dims need 836565000"});
  t.clear_float_data();
  t.set_raw_data(std::string(8, '\0'));
  expect_user_error_under_a_1gib_limit([&] { frontend::tensor_from_proto(t, {}, "w"); },
                                       {"w: raw_data holds 8 bytes"});
}

TEST(HostMemory, SmallAllocationsAreNotChecked) {
  EXPECT_NO_THROW(check_host_memory(kCheckedHostBytes - 1, "small"));
  EXPECT_GT(host_memory_available(), kCheckedHostBytes);
}

}  // namespace
}  // namespace braze
