// fitscope's loader alone (no model) on an image folder: ImageFolderDataset decoding and resizing to
// SIZE x SIZE, RandomFlip, batches of 64 built by WORKERS threads. Prints one line of JSON: the
// samples/s over BATCHES batches after 3 unmeasured ones. Run by bench/image_loading.py, which sets
// it against torchvision.
//   ./bench_image_loading DIR SIZE WORKERS BATCHES [no-dct]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fitscope/fitscope.hpp"

using namespace fitscope;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s DIR SIZE WORKERS BATCHES [no-dct]\n", argv[0]);
    return 2;
  }
  ImageFolderOptions images;
  images.height = images.width = std::atoll(argv[2]);
  images.channels = 3;
  images.dct_scaling = !(argc > 5 && std::string(argv[5]) == "no-dct");
  LoaderOptions o;
  o.batch_size = 64;
  o.workers = std::atoll(argv[3]);
  o.prefetch = std::max<int64_t>(8, 2 * o.workers);
  o.transforms = {std::make_shared<RandomFlip>()};
  const int64_t batches = std::atoll(argv[4]);
  Loader loader(std::make_shared<ImageFolderDataset>(argv[1], images), o);
  int64_t epoch = 0, seen = 0, samples = 0;
  std::chrono::steady_clock::time_point start;
  loader.set_epoch(epoch);
  for (int64_t b = 0; seen < batches + 3; ++b) {
    if (b == loader.num_batches()) {
      loader.set_epoch(++epoch);
      b = 0;
    }
    const Batch batch = loader.next();
    if (++seen == 3) start = std::chrono::steady_clock::now();
    if (seen > 3) samples += batch.inputs.size(0);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"samples_per_s\": %.1f}\n", samples / s);
}
