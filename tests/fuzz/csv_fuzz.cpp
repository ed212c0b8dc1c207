// libFuzzer target: the CSV parser must either parse or throw std::invalid_argument, never crash. The
// first byte picks the label column option (none, an index, or a name), the rest is the file.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fitscope/data/formats/csv_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  fitscope::CsvOptions options;
  if (data[0] % 3 == 1) options.label_column = std::to_string(data[0] % 5);
  if (data[0] % 3 == 2) options.label_column = "label";
  try {
    const fitscope::CsvTable t =
        fitscope::parse_csv(std::string(reinterpret_cast<const char*>(data + 1), size - 1), "fuzz", options);
    if (t.values.size() != static_cast<size_t>(t.rows * t.features) || t.labels.size() != static_cast<size_t>(t.rows)) {
      __builtin_trap();
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
