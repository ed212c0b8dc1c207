#pragma once
// Internal (report/ and run/ use it; not in fitscope.hpp): a numeric CSV a run wrote (steps.csv,
// metrics.csv) streamed one line at a time, so that a million-step file is read in constant memory.

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace fitscope::detail {

/// Streams the CSV at `path`: `header` gets its first line's names, `row` each later line's values
/// (NaN for a field that is not a number; empty lines skipped). Throws std::invalid_argument naming the
/// file (and the line) when it is not a regular file, has no header, has a row with another field count
/// than the header, or a line over 1 MiB.
void for_each_csv_row(const std::filesystem::path& path, const std::function<void(const std::vector<std::string>&)>& header,
                      const std::function<void(const std::vector<double>&)>& row);

}  // namespace fitscope::detail
