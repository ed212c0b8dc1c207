#include <gtest/gtest.h>

#include <cmath>

#include "fitscope/train/history.hpp"
#include "fitscope/metrics/logs.hpp"

using fitscope::History;
using fitscope::Logs;

TEST(Logs, KeepsFirstInsertionOrderAndOverwritesInPlace) {
  Logs logs{{"loss", 1.0}, {"accuracy", 0.5}};
  logs.set("loss", 0.25);
  logs.set("lr", 0.1);
  EXPECT_EQ(logs.keys(), (std::vector<std::string>{"loss", "accuracy", "lr"}));
  EXPECT_DOUBLE_EQ(logs.at("loss"), 0.25);
}

TEST(Logs, NamesTheMissingKeyAndThePresentOnes) {
  Logs logs{{"loss", 1.0}};
  try {
    logs.at("val_loss");
    FAIL() << "expected an exception";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "logs have no key 'val_loss' (present: loss)");
  }
}

TEST(Logs, PrefixesEveryKeyForValidation) {
  Logs logs{{"loss", 1.0}, {"accuracy", 0.5}};
  EXPECT_EQ(logs.with_prefix("val_").keys(), (std::vector<std::string>{"val_loss", "val_accuracy"}));
}

TEST(History, HoldsAKeysValuesFromTheEpochsThatLoggedItAsKeras) {
  History h;
  h.append(0, Logs{{"loss", 2.0}});
  h.append(1, Logs{{"loss", 1.0}, {"val_loss", 1.5}});
  EXPECT_EQ(h.epochs(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(h.at("loss"), (std::vector<double>{2.0, 1.0}));
  EXPECT_EQ(h.at("val_loss"), (std::vector<double>{1.5}));  // Keras: no NaN for the epoch without validation
  EXPECT_DOUBLE_EQ(h.last().at("val_loss"), 1.5);
}
