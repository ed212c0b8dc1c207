// fitscope's loader alone (no model) on an image folder, or on the same images as sharded record files
// (SOURCE tfrecord:GLOB or tar:GLOB, a StreamDataset with a shuffle buffer of 1000): decoding and
// resizing to SIZE x SIZE, RandomFlip, batches of 64 built by WORKERS threads. Prints one line of JSON:
// the samples/s over BATCHES batches after 3 unmeasured ones, the seconds the data set took to open
// (a stream counts its records then) and the process's peak RSS. Run by bench/image_loading.py, which
// sets it against torchvision, and bench/shard_streaming.py, which sets shards against the folder.
//   ./bench_image_loading DIR|tfrecord:GLOB|tar:GLOB SIZE WORKERS BATCHES [no-dct]

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fitscope/fitscope.hpp"

using namespace fitscope;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s DIR|tfrecord:GLOB|tar:GLOB SIZE WORKERS BATCHES [no-dct]\n", argv[0]);
    return 2;
  }
  const std::string source = argv[1];
  const int64_t size = std::atoll(argv[2]);
  const bool dct = !(argc > 5 && std::string(argv[5]) == "no-dct");
  LoaderOptions o;
  o.batch_size = 64;
  o.workers = std::atoll(argv[3]);
  o.prefetch = std::max<int64_t>(8, 2 * o.workers);
  o.transforms = {std::make_shared<RandomFlip>()};
  const int64_t batches = std::atoll(argv[4]);
  const auto opening = std::chrono::steady_clock::now();
  std::shared_ptr<const Dataset> data;
  const bool tar = source.rfind("tar:", 0) == 0;
  if (tar || source.rfind("tfrecord:", 0) == 0) {
    StreamDatasetOptions stream;
    stream.format = tar ? ShardFormat::kTar : ShardFormat::kTfRecord;
    stream.decoder.height = stream.decoder.width = size;
    stream.decoder.channels = 3;
    stream.decoder.dct_scaling = dct;
    stream.shuffle_buffer = 1000;
    data = std::make_shared<StreamDataset>(source.substr(source.find(':') + 1), stream);
  } else {
    ImageFolderOptions images;
    images.height = images.width = size;
    images.channels = 3;
    images.dct_scaling = dct;
    data = std::make_shared<ImageFolderDataset>(source, images);
  }
  const double open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - opening).count();
  Loader loader(data, o);
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
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("{\"samples_per_s\": %.1f, \"open_s\": %.3f, \"peak_rss_mb\": %.1f}\n", samples / s, open_s,
              static_cast<double>(usage.ru_maxrss) / 1024);
}
