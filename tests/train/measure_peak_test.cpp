#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "fitscope/train/measure_peak.hpp"

using namespace fitscope;

namespace measure_peak_test {

std::string fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("fitscope_peak_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace measure_peak_test

using namespace measure_peak_test;

/// A machine's peak is measured once per setting and kept in the cache by its key; a cache that holds
/// the key is read, not measured again; a broken one is measured anew and written whole.
TEST(MeasurePeak, MeasuresOnceAndKeepsTheFigureByMachineAndSetting) {
  const std::string measured_dir = fresh_dir("measured");
  const MachinePeak p = measure_machine_peak(1, measured_dir);
  EXPECT_FALSE(p.cached);
  EXPECT_GT(p.gemm_gflops, 0.1);
  EXPECT_GT(p.memory_gbps, 0.1);
  EXPECT_EQ(p.cores, 1);
  EXPECT_NE(p.key.find("| 1 core |"), std::string::npos) << p.key;
  const nlohmann::json kept = read_json(measured_dir + "/machine_peak.json");
  ASSERT_TRUE(kept.contains(p.key)) << kept.dump();
  EXPECT_DOUBLE_EQ(kept[p.key]["gemm_gflops"].get<double>(), p.gemm_gflops);

  const std::string planted_dir = fresh_dir("planted");  // another cache holding the key: read, not measured
  std::filesystem::create_directories(planted_dir);
  std::ofstream(planted_dir + "/machine_peak.json") << nlohmann::json{{p.key, {{"gemm_gflops", 123.5}, {"memory_gbps", 9.5}}}}.dump();
  const MachinePeak read = measure_machine_peak(1, planted_dir);
  EXPECT_TRUE(read.cached);
  EXPECT_DOUBLE_EQ(read.gemm_gflops, 123.5);
  EXPECT_DOUBLE_EQ(read.memory_gbps, 9.5);

  const std::string broken_dir = fresh_dir("broken");  // not JSON: measured anew, the file written whole
  std::filesystem::create_directories(broken_dir);
  std::ofstream(broken_dir + "/machine_peak.json") << "{\"half";
  const MachinePeak anew = measure_machine_peak(1, broken_dir);
  EXPECT_FALSE(anew.cached);
  EXPECT_TRUE(read_json(broken_dir + "/machine_peak.json").contains(p.key));
  for (const std::string& dir : {measured_dir, planted_dir, broken_dir}) std::filesystem::remove_all(dir);
}
