// GPU faults (#21): a kernel that traps or reads out of bounds becomes a DeviceError naming its
// step, kernel and ONNX nodes — in a plain run, a CUDA-graph replay and with sync_each_kernel —
// and the process goes on: later GPU calls fail with an error (the driver keeps a faulted
// context unusable), the CPU reference still runs, nothing crashes on the way out. A fault
// spoils the whole process's context, so each case runs in a child process of its own (a death
// test in the "threadsafe" style, which starts the test binary again). Skips without a GPU.
#include <braze/error.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "codegen/lowering.h"
#include "fusion/partition.h"
#include "graph/ir.h"
#include "graph/registry.h"
#include "runtime/compare.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/engine.h"
#include "runtime/reference_executor.h"

namespace braze {
namespace {

constexpr int64_t kN = int64_t{1} << 20;  // enough elements for many blocks

// x → Relu 'first' → Neg 'second' → Abs 'third', one kernel each (no fusion).
graph::Graph three_steps() {
  graph::Graph g;
  auto value = [&](const char* name) { return g.add_value(name, DType::Float32, {kN}); };
  const graph::ValueId x = value("x"), a = value("a"), b = value("b"), c = value("c");
  g.add_input(x);
  g.add_node(graph::find_op("", "Relu"), "first", {x}, {a}, {});
  g.add_node(graph::find_op("", "Neg"), "second", {a}, {b}, {});
  g.add_node(graph::find_op("", "Abs"), "third", {b}, {c}, {});
  g.add_output(c, "c");
  return g;
}

// The engine of three_steps() with `fault` made the second kernel's statement after its step
// note (codegen::Kernel).
std::shared_ptr<gpu::Engine> engine_with_fault(const graph::Graph& g, const std::string& fault) {
  gpu::EngineOptions opts = gpu::default_engine_options();
  opts.use_cache = false;
  std::vector<gpu::Step> steps =
      gpu::generate_steps(g, fusion::make_plan(g, false, codegen::kernel_lowerings()), opts.target);
  if (steps.size() != 3 || !steps[1].kernel) throw InternalError("expected three kernel steps");
  std::string& src = steps[1].kernel->source;
  const std::string note = "braze_note_step(braze_progress, braze_step);";
  const size_t at = src.find(note);
  if (at == std::string::npos) throw InternalError("the second kernel has no step note");
  src.insert(at + note.size(), "\n  " + fault);
  gpu::Engine::compile_steps(steps, opts.arch, opts, nullptr);
  return gpu::Engine::assemble(g, std::move(steps), opts.arch);
}

enum class How { Run, Graph, SyncEachKernel };

// The child's work: 0 when the fault was named and the process stayed usable, else 1 with what
// went wrong on stderr. Prints the error it got, which the death test matches.
int fault_case(const std::string& fault, How how) {
  const graph::Graph g = three_steps();
  const std::vector<Tensor> in = {Tensor::from_floats(std::vector<float>(kN, -1.5f), {kN})};
  std::string message;
  {
    auto engine = engine_with_fault(g, fault);
    gpu::Session session(engine);
    try {
      if (how == How::Graph) {
        session.upload(in);
        session.enqueue(true);
        session.check_flags();
      } else {
        gpu::RunOptions ro;
        ro.sync_each_kernel = how == How::SyncEachKernel;
        session.run(in, ro);
      }
      std::fprintf(stderr, "the faulting engine ran without an error\n");
      return 1;
    } catch (const DeviceError& e) {
      message = e.what();
    }
    std::fprintf(stderr, "error: %s\n", message.c_str());
    const std::string kernel = engine->steps()[1].kernel->name;
    if (message.find(kernel) == std::string::npos ||
        message.find("step 2 of 3") == std::string::npos ||
        message.find("'second' (Neg)") == std::string::npos) {
      std::fprintf(stderr, "the error does not name step 2, kernel %s and node 'second'\n",
                   kernel.c_str());
      return 1;
    }
    try {  // the context is lost: an error again, not a crash or a hang
      session.run(in);
      std::fprintf(stderr, "a run after the fault succeeded\n");
      return 1;
    } catch (const DeviceError&) {
    }
  }  // the session and engine free their device memory into a lost context
  const Tensor want = runtime::run_reference(g, in)[0];
  if (!runtime::compare(want, Tensor::from_floats(std::vector<float>(kN, 0.0f), {kN}), {0, 0}).ok) {
    std::fprintf(stderr, "the CPU reference computed the wrong thing after the fault\n");
    return 1;
  }
  std::fprintf(stderr, "named and survived\n");
  return 0;
}

class GpuFault : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

const char* const kTrap = "__trap();";
// Thread 0 of the last block reads 256 GiB past the progress word: an illegal address, raised
// by a block other than the one that noted the step.
const char* const kOutOfBounds =
    "if (threadIdx.x == 0 && blockIdx.x == gridDim.x - 1) { volatile unsigned v = "
    "*(volatile unsigned*)(braze_progress + (1ull << 36)); (void)v; }";

TEST_F(GpuFault, ATrapInAPlainRunIsNamed) {
  EXPECT_EXIT(std::exit(fault_case(kTrap, How::Run)), ::testing::ExitedWithCode(0),
              "named and survived");
}

TEST_F(GpuFault, AnOutOfBoundsReadInAPlainRunIsNamed) {
  EXPECT_EXIT(std::exit(fault_case(kOutOfBounds, How::Run)), ::testing::ExitedWithCode(0),
              "CUDA_ERROR_ILLEGAL_ADDRESS.*named and survived");
}

TEST_F(GpuFault, AnOutOfBoundsReadInACudaGraphIsNamed) {
  EXPECT_EXIT(std::exit(fault_case(kOutOfBounds, How::Graph)), ::testing::ExitedWithCode(0),
              "named and survived");
}

TEST_F(GpuFault, ATrapWithSyncEachKernelIsNamed) {
  EXPECT_EXIT(std::exit(fault_case(kTrap, How::SyncEachKernel)), ::testing::ExitedWithCode(0),
              "named and survived");
}

}  // namespace
}  // namespace braze
