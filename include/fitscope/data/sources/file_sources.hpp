#pragma once
/// Data sets read from files into memory (as TensorDatasets), for `--data idx:DIR | cifar10:DIR |
/// csv:FILE`. Every error is std::invalid_argument naming the file (or directory), the byte offset or
/// line, the value found and what was expected.
///
/// - IDX (MNIST, Fashion-MNIST): DIR holds train-images-idx3-ubyte and train-labels-idx1-ubyte (each
///   raw or .gz); a t10k-images/t10k-labels pair, when present, is the test set. Images become float
///   [N, 1, H, W] in [0, 1], labels int64 (each < classes).
/// - CIFAR-10 binary: DIR holds data_batch_*.bin (the training set, in name order) and optionally
///   test_batch.bin. Images become float [N, 3, 32, 32] in [0, 1].
/// - CSV: see csv_format.hpp. Features become float [N, F], labels int64.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fitscope/data/formats/csv_format.hpp"
#include "fitscope/data/sources/tensor_dataset.hpp"

namespace fitscope {

struct FileData {
  std::shared_ptr<const TensorDataset> train;  ///< the training examples
  std::shared_ptr<const TensorDataset> test;   ///< the files' test set; null when there is none
};

/// With `labels_optional`, images without their labels file are data to predict (unlabeled).
FileData load_idx(const std::string& dir, int64_t classes = 10, bool labels_optional = false);
FileData load_cifar10(const std::string& dir, int64_t classes = 10);
TensorDataset load_csv(const std::string& file, const CsvOptions& options = {});

/// The contents of a file, gunzipped when it is gzip-compressed. `declared_size`, given the bytes so
/// far, says how large the file's own header declares it to be (nothing while it cannot tell yet):
/// inflating stops there, so a gzip bomb costs no more memory than the honest file. Throws
/// std::invalid_argument naming the file when it cannot be read, is a corrupt gzip stream, or inflates
/// beyond its declared size.
std::string read_file_bytes(const std::string& path,
                            const std::function<std::optional<int64_t>(std::string_view)>& declared_size = {});

}  // namespace fitscope
