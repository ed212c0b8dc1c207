// libFuzzer target: the TFRecord framing (plain or gzip, as the reader detects it) and the
// tf.train.Example parser must either read or throw std::invalid_argument, never crash; every record
// read is parsed as an Example, and what the reader returned must be framed back to the same bytes.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fitscope/data/formats/tf_example.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  fitscope::TfRecordReaderOptions options;
  options.max_record_bytes = int64_t{1} << 20;
  try {
    fitscope::TfRecordReader reader(in, "fuzz", options);
    std::string record;
    for (;;) {
      try {
        if (!reader.next(record)) break;
      } catch (const std::invalid_argument&) {
        if (!reader.next(record)) break;  // after a bad data CRC the next record reads; otherwise it throws again
      }
      const int64_t offset = reader.offset();
      std::ostringstream framed;
      fitscope::write_tfrecord(framed, record);
      if (!reader.gzip() && std::string(reinterpret_cast<const char*>(data) + offset, framed.str().size()) != framed.str()) {
        __builtin_trap();  // the reader's promise: a record it returns is the file's bytes at its offset
      }
      // the decoder's parse of its features only: on what a full parse takes, the same values
      const std::vector<std::string> only = {"image/encoded", "image/class/label"};
      fitscope::ExampleFeatures selected;
      bool selected_parsed = true;
      try {
        selected = fitscope::parse_example(record, "fuzz", offset, only);
      } catch (const std::invalid_argument&) {
        selected_parsed = false;
      }
      try {
        const fitscope::ExampleFeatures example = fitscope::parse_example(record, "fuzz", offset);
        // what parses serializes, and reads back the same
        const std::string again = fitscope::serialize_example(example);
        if (fitscope::parse_example(again, "fuzz", 0).features.size() != example.features.size()) __builtin_trap();
        if (!selected_parsed) __builtin_trap();
        for (const std::string& name : only) {
          const fitscope::ExampleFeature* full = example.find(name);
          const fitscope::ExampleFeature* mine = selected.find(name);
          if ((full == nullptr) != (mine == nullptr) || (full && *full != *mine)) __builtin_trap();
        }
      } catch (const std::invalid_argument&) {
      }
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
