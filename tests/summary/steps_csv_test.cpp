// StepsCsvWriter: steps.csv's header and rows, and the path it cannot create.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "fitscope/summary/steps_csv.hpp"
#include "../timing/step_records.hpp"

using namespace fitscope;

TEST(StepsCsvWriter, WritesTheHeaderAndOneRowPerStep) {
  const auto path = std::filesystem::temp_directory_path() / "fitscope_steps_test.csv";
  {
    StepsCsvWriter writer(path.string());
    writer.on_step(record(2'000'000, 500'000, 0, 0));
    StepRecord probed = record(1'000'000, 0, 250'000, 1);
    probed.probed = true;  // the layers probed: marked, not left out
    writer.on_step(probed);
    writer.finish();
  }
  std::ifstream in(path);
  std::string header, row0, row1, extra;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_FALSE(std::getline(in, extra));
  EXPECT_EQ(header,
            "epoch,batch,rank,step_ms,data_wait_ms,h2d_ms,forward_ms,backward_ms,comm_ms,optimizer_ms,graph_ms,"
            "metrics_ms,callbacks_ms,checkpoint_ms,other_ms,probed");
  EXPECT_EQ(row0, "0,0,0,2.500000,0.500000,0.000000,2.000000,0.000000,0.000000,0.000000,0.000000,"
                  "0.000000,0.000000,0.000000,0.000000,0");
  EXPECT_EQ(row1.substr(0, 15), "0,1,0,1.250000,");
  EXPECT_EQ(row1.substr(row1.size() - 2), ",1");
  std::filesystem::remove(path);
}

TEST(StepsCsvWriter, NamesThePathItCannotCreate) {
  try {
    StepsCsvWriter writer("/nonexistent-dir/steps.csv");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "cannot create /nonexistent-dir/steps.csv: check that the directory exists");
  }
}
