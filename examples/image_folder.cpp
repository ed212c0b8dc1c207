// Training on a folder of JPEGs: the built-in set written as DIR/class_NN/NNNNNN.jpg (what
// `fitscope make-images` does), then read back as an ImageFolderDataset whose images are decoded in the
// loader's workers, and the seed CNN trained on it with Run: the run directory, the verdict, and how
// long the step waited for decoded batches with 0 and with 2 workers.
//   ./image_folder [DIR]   (default: a folder under the system's temporary directory)
#include <fitscope/fitscope.hpp>

#include <filesystem>
#include <iostream>

int main(int argc, char** argv) {
  using namespace fitscope;
  const std::string dir = argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "fitscope-image-folder").string();
  if (!std::filesystem::exists(dir)) {
    SyntheticOptions s;
    s.size = 4000;
    s.image_size = 64;
    write_image_folder(dir, make_synthetic(s), ImageFolderWriteOptions{"jpg", 90, 3});
    std::cout << "wrote 4000 64x64 JPEGs under " << dir << "\n";
  }
  for (int64_t workers : {0, 2}) {
    RunOptions options;
    options.run_dir = dir + "-run-" + std::to_string(workers) + "-workers";
    options.overwrite = true;
    options.verbose = 2;
    Run run(options);  // scanning the folder counts as the run's start-up
    auto images = std::make_shared<ImageFolderDataset>(dir);  // every file checked, none decoded yet
    Trainer trainer{models::Cnn(64, 3, static_cast<int64_t>(images->classes().size()))};
    FitOptions fit;
    fit.epochs = 2;
    fit.validation_split = 0.2;
    fit.loader.workers = workers;
    const RunSummary summary = run.fit(trainer, images, fit);
    std::cout << "\n== " << workers << " loader workers: val_accuracy " << summary.logs.at("val_accuracy")
              << ", data_wait " << 100 * summary.phases.at("data_wait").share << " % of the step: "
              << summary.verdict.level << " " << summary.verdict.bound << "-bound\n   " << run.directory() << "\n\n";
  }
}
