#include "killed_runs.hpp"

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

namespace fitscope::testing {
namespace {

c10::Dict<c10::IValue, c10::IValue> weights_of(const std::string& dir) {
  const std::string bytes = read_file(dir + "/model.weights.pt");
  return torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())).toGenericDict();
}

}  // namespace

std::string shell_words(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += "'" + a + "' ";
  return out;
}

ProcessResult kill_once_backed_up(const std::vector<std::string>& train, const std::string& run_dir, int64_t step) {
  const std::string script = shell_words(train) + "> /dev/null 2>&1 & pid=$!; "
                             "while :; do for f in " + run_dir + "/backup/ckpt-*.fitscope; do n=${f##*ckpt-}; "
                             "n=${n%.fitscope}; [ -e \"$f\" ] && [ \"$(expr \"$n\" + 0)\" -ge " + std::to_string(step) +
                             " ] && break 2; done; "
                             "kill -0 $pid 2>/dev/null || exit 3; sleep 0.005; done; "
                             "kill -9 $pid; wait $pid; echo status=$?";
  return run_process({"/bin/sh", "-c", script});
}

void expect_same_weights(const std::string& a, const std::string& b) {
  const auto wa = weights_of(a), wb = weights_of(b);
  ASSERT_EQ(wa.size(), wb.size());
  for (const auto& item : wa) {
    ASSERT_TRUE(wb.contains(item.key())) << item.key().toStringRef();
    EXPECT_TRUE(at::equal(item.value().toTensor(), wb.at(item.key()).toTensor())) << item.key().toStringRef();
  }
}

}  // namespace fitscope::testing
