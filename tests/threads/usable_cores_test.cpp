// The cores a process may use: its affinity mask and its cgroup's CPU quota (v1 and v2 files, the
// smallest along the cgroup's path), not the machine's count.

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "fitscope/threads/usable_cores.hpp"

using namespace fitscope;
namespace fs = std::filesystem;

namespace {

class CgroupTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("fitscope-cgroup-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& relative, const std::string& text) const {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text << "\n";
  }
  double quota(const std::string& self) const { return fitscope::detail::cgroup_cpu_quota(root_.string(), self); }
  fs::path root_;
};

}  // namespace

TEST_F(CgroupTree, AV2QuotaIsTheSmallestCpuMaxAlongThePath) {
  put("a/cpu.max", "max 100000");
  put("a/b/cpu.max", "150000 100000");
  EXPECT_DOUBLE_EQ(quota("0::/a/b\n"), 1.5);
  put("a/cpu.max", "50000 100000");  // a parent's smaller quota binds the child too
  EXPECT_DOUBLE_EQ(quota("0::/a/b\n"), 0.5);
  EXPECT_DOUBLE_EQ(quota("0::/elsewhere\n"), 0.0) << "no cpu.max on the path: no quota";
}

TEST_F(CgroupTree, AV1QuotaIsTheCfsQuotaOverItsPeriodAndMinusOneIsNone) {
  put("cpu,cpuacct/job/cpu.cfs_quota_us", "200000");
  put("cpu,cpuacct/job/cpu.cfs_period_us", "100000");
  put("cpu,cpuacct/cpu.cfs_quota_us", "-1");
  put("cpu,cpuacct/cpu.cfs_period_us", "100000");
  EXPECT_DOUBLE_EQ(quota("4:memory:/job\n3:cpu,cpuacct:/job\n0::/\n"), 2.0);
  EXPECT_DOUBLE_EQ(quota("3:cpu,cpuacct:/\n"), 0.0);
  // in a container the controller's mount is the container's own cgroup: the path is not below it
  put("cpu/cpu.cfs_quota_us", "100000");
  put("cpu/cpu.cfs_period_us", "100000");
  EXPECT_DOUBLE_EQ(quota("3:cpu:/docker/0123abcd\n"), 1.0);
  EXPECT_DOUBLE_EQ(quota(""), 0.0);
}

TEST_F(CgroupTree, ThrottlingIsReadFromTheCgroupsOwnCpuStatInV1OrV2Units) {
  put("cpu,cpuacct/job/cpu.stat", "nr_periods 40\nnr_throttled 7\nthrottled_time 2500000000");
  const Throttling v1 = fitscope::detail::cgroup_throttling(root_.string(), "3:cpu,cpuacct:/job\n");
  EXPECT_EQ(v1.periods, 7);
  EXPECT_DOUBLE_EQ(v1.seconds, 2.5);
  put("a/cpu.stat", "usage_usec 100\nnr_periods 9\nnr_throttled 3\nthrottled_usec 1500000");
  const Throttling v2 = fitscope::detail::cgroup_throttling(root_.string(), "0::/a\n");
  EXPECT_EQ(v2.periods, 3);
  EXPECT_DOUBLE_EQ(v2.seconds, 1.5);
  EXPECT_EQ(fitscope::detail::cgroup_throttling(root_.string(), "0::/none\n").periods, 0);
}

TEST(UsableCores, AnAffinityOfOneCpuIsOneCoreAndSaysSo) {
  const UsableCores all = usable_cores();
  EXPECT_GE(all.cores, 1);
  EXPECT_LE(all.cores, all.machine);
  cpu_set_t before;
  ASSERT_EQ(::sched_getaffinity(0, sizeof before, &before), 0);
  int first = 0;
  while (!CPU_ISSET(first, &before)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);  // this thread's mask, as taskset sets a process's
  const UsableCores pinned = usable_cores();
  ASSERT_EQ(::sched_setaffinity(0, sizeof before, &before), 0);
  EXPECT_EQ(pinned.cores, 1);
  EXPECT_EQ(pinned.affinity, 1);
  if (pinned.machine > 1 && pinned.quota == 0) {
    EXPECT_EQ(pinned.limit(), "affinity 1 of " + std::to_string(pinned.machine));
    EXPECT_EQ(pinned.text(), "1 core: affinity 1 of " + std::to_string(pinned.machine));
  }
  UsableCores quota = all;
  quota.machine = 4;
  quota.affinity = 4;
  quota.quota = 1.5;
  quota.cores = 1;
  EXPECT_EQ(quota.text(), "1 core: cgroup quota 1.5 CPUs of 4");
  quota.quota = 0;
  quota.cores = 4;
  EXPECT_EQ(quota.text(), "4 cores");
}
