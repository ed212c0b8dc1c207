#pragma once
/// Advice as data: one action a verdict recommends (which knob, from what, to what, the expected gain;
/// summary.json's verdict.actions). The library names a setting by its C++ option (`LoaderOptions::workers`), in these fields and in
/// its sentences alike; a program that shows its settings under other names (the command line shows
/// flags) renders both with a SettingNames function. No libtorch.

#include <functional>
#include <string>

namespace fitscope {

struct Advice {
  std::string knob;           ///< the setting, by its C++ option: "LoaderOptions::workers"
  std::string from;           ///< its value in the run: "2"
  std::string to;             ///< the value to try: "4", "auto"
  std::string expected_gain;  ///< what the change is expected to gain, in words
  bool operator==(const Advice& other) const {
    return knob == other.knob && from == other.from && to == other.to && expected_gain == other.expected_gain;
  }
};

/// A text naming settings by their C++ options, in a program's own names (the command line: in its
/// flags); null = the C++ names.
using SettingNames = std::function<std::string(const std::string&)>;

}  // namespace fitscope
