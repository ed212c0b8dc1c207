#pragma once
/// Numeric CSV for tabular data: comma-separated numbers, one example per line, one column holding
/// the class label (a non-negative integer), the others the features. The first line is a header when
/// any of its fields is not a number. Blank lines are skipped; "\r\n" line ends are accepted; quoting
/// is not (every field is a number, header names may be quoted). Pure parsing, no libtorch; errors are
/// std::invalid_argument naming the file, line and column.

#include <cstdint>
#include <string>
#include <vector>

namespace fitscope {

struct CsvOptions {
  /// The label column, by header name or by 0-based index; empty = the column named "label" when the
  /// header has one, else column 0; "none" = no labels, every column a feature (data to predict).
  std::string label_column;
  /// A file whose header has no column of the label's name ("label", or label_column's name) is
  /// read without labels instead of being refused: new data for predict.
  bool labels_optional = false;
  /// Labels must be below this: the classifier gets max label + 1 outputs, so one stray large label
  /// would make a huge model. `fitscope train --num-classes N` sets it to N.
  int64_t max_classes = 10000;
};

struct CsvTable {
  int64_t rows = 0;
  int64_t features = 0;
  std::vector<float> values;    ///< rows x features, row-major
  std::vector<int64_t> labels;  ///< one per row; empty for a file read without labels
  std::vector<int64_t> lines;   ///< each row's line in the file (1-based), to name it
  std::vector<std::string> columns;  ///< the header's names (empty without a header)
  int64_t label_column = 0;     ///< index of the label column in the file; -1 = none
};

CsvTable parse_csv(const std::string& text, const std::string& name, const CsvOptions& options = {});

}  // namespace fitscope
