// device_summary on the GPU: what it remembers is what the driver says, and a second call
// reads it back from the cache directory.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/device_summary.h"
#include "tests/test_util.h"

namespace braze {
namespace {

namespace fs = std::filesystem;

TEST(GpuDevice, SummaryMatchesTheDriverAndIsRemembered) {
  if (!gpu::gpu_available()) GTEST_SKIP() << "no GPU: " << gpu::gpu_unavailable_reason();
  const fs::path cache = test::temp_dir("gpu_device_test", "cache");
  const gpu::DeviceInfo& d = gpu::device_info();
  std::optional<gpu::DeviceSummary> first = gpu::device_summary(cache);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->arch.name(), d.arch().name());
  EXPECT_EQ(first->sms, d.sms);
  EXPECT_EQ(first->name, d.name);
  if (gpu::device_identity().empty())
    GTEST_SKIP() << "the driver exposes no /proc/driver/nvidia/gpus here: nothing remembered";
  ASSERT_TRUE(fs::exists(cache / "devices.json"));
  std::optional<gpu::DeviceSummary> again = gpu::device_summary(cache);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->arch.name(), d.arch().name());
  EXPECT_EQ(again->sms, d.sms);
  fs::remove_all(cache);
}

}  // namespace
}  // namespace braze
