// device_summary: device 0's arch and SM count remembered per machine, so that `braze
// compile` on a GPU machine need not initialise the CUDA driver (tests/gpu/gpu_device_test.cpp
// checks the remembered values against the driver's).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device_summary.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

// A /proc/driver/nvidia as the driver lays it out (2026: 580.x), with `uuids` GPUs.
fs::path fake_proc(const std::string& name, const std::vector<std::string>& uuids) {
  fs::path root = test::temp_dir("device_test", name);
  std::ofstream(root / "version")
      << "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build\n"
      << "GCC version:  gcc version 15.3.0 (GCC)\n";
  for (size_t i = 0; i < uuids.size(); ++i) {
    fs::path g = root / "gpus" / ("0000:00:0" + std::to_string(6 + i) + ".0");
    fs::create_directories(g);
    std::ofstream(g / "information") << "Model: \t\t NVIDIA H200\nIRQ:   \t\t 41\nGPU UUID: \t "
                                     << uuids[i] << "\nBus Location: \t 0000:00:06.0\n";
  }
  return root;
}

TEST(DeviceSummary, IdentityNamesTheDriverEachGpuAndTheDeviceChoice) {
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  const fs::path proc = fake_proc("two", {"GPU-48e29482-a151", "GPU-0badf00d-0001"});
  const std::string id = gpu::device_identity(proc);
  EXPECT_NE(id.find("580.159.04"), std::string::npos) << id;
  EXPECT_NE(id.find("NVIDIA H200 GPU-48e29482-a151"), std::string::npos) << id;
  EXPECT_LT(id.find("GPU-48e29482-a151"), id.find("GPU-0badf00d-0001")) << "in bus order";
  EXPECT_NE(id.find("CUDA_VISIBLE_DEVICES=(unset)"), std::string::npos) << id;
  ::setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  EXPECT_NE(gpu::device_identity(proc), id) << "another device 0";
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  // No driver files, no GPUs, or a GPU without a UUID: nothing to remember it by.
  EXPECT_EQ(gpu::device_identity(test::temp_dir("device_test", "none") / "absent"), "");
  EXPECT_EQ(gpu::device_identity(fake_proc("zero", {})), "");
  const fs::path blank = fake_proc("blank", {"GPU-1"});
  std::ofstream(blank / "gpus" / "0000:00:06.0" / "information") << "Model: NVIDIA H200\n";
  EXPECT_EQ(gpu::device_identity(blank), "");
}

TEST(DeviceSummary, ARememberedDeviceNeedsNoDriver) {
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  const fs::path proc = fake_proc("known", {"GPU-48e29482-a151"}),
                 cache = test::temp_dir("device_test", "cache");
  nlohmann::json j;
  j[gpu::device_identity(proc)] = {{"cc", {9, 0}}, {"sms", 132}, {"name", "NVIDIA H200"}};
  j["another machine"] = {{"cc", {8, 0}}, {"sms", 108}, {"name", "NVIDIA A100"}};
  std::ofstream(cache / "devices.json") << j.dump();
  std::optional<gpu::DeviceSummary> s = gpu::device_summary(cache, proc);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->arch.name(), "sm_90a");
  EXPECT_EQ(s->sms, 132);
  EXPECT_EQ(s->name, "NVIDIA H200");
}

// An identity the cache does not hold, or an entry that is damaged, goes to the driver: on
// a machine without one, no device (and nothing written).
TEST(DeviceSummary, UnknownOrDamagedEntriesAskTheDriver) {
  if (gpu::gpu_available())
    GTEST_SKIP() << "a driver is here: tests/gpu/gpu_device_test.cpp covers it";
  ::unsetenv("CUDA_VISIBLE_DEVICES");
  const fs::path proc = fake_proc("unknown", {"GPU-48e29482-a151"}),
                 cache = test::temp_dir("device_test", "cache2");
  EXPECT_FALSE(gpu::device_summary(cache, proc).has_value());
  EXPECT_FALSE(fs::exists(cache / "devices.json"));
  for (const char* bad :
       {R"({"ID": {"cc": [9], "sms": 132, "name": "x"}})",
        R"({"ID": {"cc": [9, 0], "sms": -1, "name": "x"}})",
        R"({"ID": {"cc": [9, 0], "sms": "132", "name": "x"}})", "not json", "[]"}) {
    std::string text = bad;
    const size_t at = text.find("\"ID\"");
    if (at != std::string::npos)
      text.replace(at, 4, nlohmann::json(gpu::device_identity(proc)).dump());
    std::ofstream(cache / "devices.json") << text;
    EXPECT_FALSE(gpu::device_summary(cache, proc).has_value()) << bad;
  }
}

}  // namespace
}  // namespace braze
