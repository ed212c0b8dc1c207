#include "flags.hpp"

#include <algorithm>
#include <limits>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <stdexcept>

#include "fitscope/data/streams/record_decoder.hpp"
#include "fitscope/data/loading/transforms.hpp"
#include "fitscope/metrics/metric.hpp"
#include "fitscope/run/run.hpp"
#include "fitscope/train/loss.hpp"
#include "fitscope/train/optimizer_kind.hpp"
#include "fitscope/train/cuda_graph.hpp"
#include "fitscope/train/precision.hpp"

namespace fitscope::cli {

void add_train_flags(CLI::App* command, TrainCommandOptions& o, Command which) {
  const bool train = which == Command::train;
  command->option_defaults()->group("Model");
  command->add_option("--model", o.spec.model, "The seed cnn, the seed mlp, or a TorchScript file")
      ->check(CLI::Validator([](std::string& v) -> std::string {
        if (v == "cnn" || v == "mlp" || (v.size() > 3 && v.substr(v.size() - 3) == ".pt")) return {};
        return "expected cnn, mlp or FILE.pt, got '" + v + "'";
      }, "cnn|mlp|FILE.pt"))->capture_default_str();
  command->add_option("--num-classes", o.spec.num_classes,
                      "Classes of the classifier (default: 10, or the largest label + 1 when larger; a CSV label must be "
                      "below 10000 unless this is given)")
      ->check(integer_in(2, 1'000'000));
  command->add_option_function<std::string>("--precision", [&o](const std::string& v) { o.trainer.precision = parse_precision(v); },
                      "32 (float32), or bf16: the forward pass under bfloat16 autocast, the loss and the weights in "
                      "float32 (faster only on CPUs with bf16 instructions: AVX512-BF16 or AMX)")
      ->check(CLI::IsMember({"32", "bf16"}))->default_str("32");
  command->add_option_function<std::string>("--cuda-graph", [&o](const std::string& v) { o.trainer.cuda_graph = parse_cuda_graph_mode(v); },
                      "On a CUDA device, capture the whole training step as one CUDA graph and replay it: auto (after the "
                      "warm-up, when the step is launch-bound and the replay measurably faster, with the same losses), "
                      "on, or off")
      ->check(CLI::IsMember({"auto", "on", "off"}))->default_str("auto");
  command->add_option("--device", o.device, "auto (a GPU if there is one), cpu, cuda (under launch: the local rank's GPU) or cuda:N")
      ->check(parsed_by([](const std::string& v) { resolve_device(v); }, "auto|cpu|cuda|cuda:N"))->capture_default_str();

  command->option_defaults()->group("Data");
  command->add_option("--data", o.spec.data,
                      "synthetic (built-in), idx:DIR (MNIST-style train-/t10k- files, raw or .gz), cifar10:DIR "
                      "(data_batch_*.bin, test_batch.bin), csv:FILE, images:DIR (DIR/<class>/<image>.jpg|.png, decoded "
                      "in the loader's workers), or sharded record files streamed, each rank reading its own shards: "
                      "tfrecord:GLOB (tf.train.Example records, plain or gzip) or tar:GLOB (WebDataset samples: "
                      "000123.jpg + 000123.cls); a test set in the files is the validation set")
      ->type_name("SPEC")->capture_default_str();
  add_size_flag(command, "--image-size", o.spec.images.height, o.spec.images.width, 1,
                "images:DIR and streams: resize every image to HEIGHT,WIDTH (bilinear; one number for a square; default: the images' "
                "own size, which must then be one)");
  command->add_option_function<std::string>("--color-mode", [&o](const std::string& v) {
        o.spec.images.channels = color_mode_channels(v);
      }, "images:DIR: grayscale (1 channel) or rgb (3); auto: rgb when any image has colour")
      ->check(CLI::IsMember({"auto", "grayscale", "rgb"}))->default_str("auto");
  command->add_flag("--skip-bad-files", o.spec.images.skip_bad_files,
                    "images:DIR: leave out the files that are not whole JPEG or PNG images, or fail to decode during "
                    "training (and empty class folders); streams: the bad records (a wrong CRC, a malformed Example, a "
                    "missing feature, a tar member without its pair); counted in summary.json, instead of stopping");
  command->add_option("--shuffle-buffer", o.spec.shuffle_buffer,
                      "tfrecord: and tar: streams: records held for tf.data's shuffle(buffer_size), with a seeded shard "
                      "order per epoch (0 or 1: records in file order, shards in name order)")
      ->check(integer_in(0, 100'000'000))->capture_default_str();
  command->add_option("--features", o.spec.features,
                      "tfrecord: and tar: streams: the features holding input and label, image=KEY,label=KEY (default "
                      "image=image/encoded,label=image/class/label; tar: image=jpg|jpeg|png,label=cls); a float_list "
                      "input is a feature vector")
      ->check(parsed_by(RecordFeatures::parse, "image=KEY,label=KEY"));
  command->add_option("--max-record-bytes", o.spec.max_record_bytes,
                      "tfrecord: and tar: streams: the most bytes a record may hold; a larger one is stepped over "
                      "without being held in memory, a bad record (see --skip-bad-files)")
      ->check(integer_in(1, std::numeric_limits<int64_t>::max()))->capture_default_str();
  command->add_option("--max-image-pixels", o.spec.images.max_pixels,
                      "images:DIR: the most pixels an image may declare in its header, checked before decoding (0 = no "
                      "limit; PIL's MAX_IMAGE_PIXELS)")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))->capture_default_str();
  command->add_option_function<std::string>("--normalize", [&o](const std::string& v) {
        std::tie(o.spec.normalize_mean, o.spec.normalize_std) = parse_normalize(v);
      }, "Normalize the inputs in the loader, after any augmentation: MEAN/STD, one value for all channels or one per "
         "channel (0.485,0.456,0.406/0.229,0.224,0.225)")
      ->check(parsed_by(parse_normalize, "MEAN/STD"));
  command->add_option("--label-column", o.spec.label_column, "CSV: the label column, by header name or 0-based index (default: 'label', else 0)")
      ->type_name("NAME");
  command->add_option("--synthetic-size", o.spec.synthetic_size, "Examples in the built-in data set")
      ->check(integer_in(100, 10'000'000))->capture_default_str();
  command->add_option("--seed", o.fit.loader.seed, "Seed of the data, the initial weights and the shuffles")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))->capture_default_str();  // never wrapped
  add_parsed(command, "--workers", parse_workers, "auto|N", [&o](int64_t n) { o.fit.loader.workers = n; },
             "Loader threads (0 = batches built on the training thread), or auto: from 1, workers are added while the "
             "step waits for data and they are busy, and removed while it does not, each change kept only when it "
             "pays (summary.json's loader.changes says why)")->default_str("auto");
  add_parsed(command, "--prefetch", parse_prefetch, "auto|N", [&o](int64_t n) { o.fit.loader.prefetch = n; },
             "Batches built ahead of the training step (at least --workers), or auto: 2 per worker, deeper while "
             "the step waits and the workers are idle, within a quarter of the free memory (at most 1 GiB)")
      ->default_str("auto");
  command->add_option_function<std::string>("--augment", [&o](const std::string& v) { o.fit.loader.transforms = parse_augment(v); },
                                             "Random augmentation in the loader: flip, brightness, crop (4 pixels of zero padding, cropped back at "
                                             "a random offset), comma-separated")
      ->check(parsed_by([](const std::string& v) { parse_augment(v); }, "flip,brightness,crop"));
  command->add_flag("--cache", o.fit.loader.cache, "Keep examples in memory after their first use (decoded images too)");
  add_parsed(command, "--cache-budget", parse_bytes, "SIZE",
             [&o](int64_t bytes) {
               o.fit.loader.cache = true;
               o.fit.loader.cache_max_bytes = bytes;
             },
             "--cache up to this many bytes of examples (512M, 2G; K, M, G are powers of 1024); the rest are read "
             "and decoded every epoch");
  command->add_flag_function("--no-shuffle", [&o](int64_t) { o.fit.loader.shuffle = false; },
                             "Read the training set in order every epoch");
  command->add_option("--load-delay-ms", o.fit.loader.delay_ms, "Artificial loader delay per batch, to reproduce a slow input pipeline")
      ->check(number_above(0, true, "a number of milliseconds in [0, 3600000]", 3.6e6))->capture_default_str();

  command->option_defaults()->group("Optimisation");
  if (train) {
    command->add_option("--batch-size", o.fit.loader.batch_size, "Examples per step")
        ->check(integer_in(1, 1'000'000))->capture_default_str();
  }
  command->add_option("--lr", o.trainer.learning_rate, "Learning rate")->check(number_above(0, false, "a finite number > 0"))->capture_default_str();
  command->add_option_function<std::string>("--optimizer", [&o](const std::string& v) { o.trainer.optimizer = parse_optimizer(v); },
                                            "adam, adamw (decoupled weight decay) or sgd")
      ->check(CLI::IsMember({"adam", "adamw", "sgd"}))->default_str("adam");
  command->add_option_function<double>("--weight-decay", [&o](double v) { o.trainer.weight_decay = v; },
                                       "Weight decay (default: 0.01 for adamw, PyTorch's; else 0)")
      ->check(number_above(0, true, "a finite number >= 0"));
  command->add_option("--momentum", o.trainer.momentum, "SGD momentum, in [0, 1)")
      ->check(number_above(0, true, "a number in [0, 1)", 1 - 1e-12))->capture_default_str();
  command->add_flag("--nesterov", o.trainer.nesterov, "SGD with Nesterov momentum (needs --momentum)");
  command->add_option_function<std::string>("--loss", [&o](const std::string& v) { o.trainer.loss = parse_loss(v); },
                                            "cross-entropy, mse, mae, huber or bce-with-logits "
                                            "(class indices against several outputs count as one-hot)")
      ->check(CLI::IsMember({"cross-entropy", "mse", "mae", "huber", "bce-with-logits"}))->default_str("cross-entropy");
  command->add_option("--label-smoothing", o.trainer.loss_options.label_smoothing, "Cross-entropy's label smoothing, in [0, 1)")
      ->check(number_above(0, true, "a number in [0, 1)", 1 - 1e-12))->capture_default_str();
  command->add_option("--class-weight", o.trainer.loss_options.class_weights,
                      "Cross-entropy's weight per class, comma-separated (Keras's class_weight)")
      ->delimiter(',')->check(number_above(0, true, "a finite number >= 0"));
  command->add_option("--clip-norm", o.trainer.clipping.max_norm,
                      "Clip the gradients to this global L2 norm before each optimizer step (0 = off)")
      ->check(number_above(0, true, "a finite number >= 0"))->capture_default_str();
  command->add_option("--clip-value", o.trainer.clipping.max_value,
                      "Clamp every gradient element to [-X, X] before each optimizer step (0 = off)")
      ->check(number_above(0, true, "a finite number >= 0"))->capture_default_str();
  command->add_option("--accumulate", o.trainer.accumulate,
                      "Batches per optimizer step (gradient accumulation; the update follows their mean loss)")
      ->check(integer_in(1, 1'000'000))->capture_default_str();
  command->add_option_function<std::vector<std::string>>(
             "--metrics", [&o](const std::vector<std::string>& names) { o.trainer.metrics = std::vector<MetricSpec>(names.begin(), names.end()); },
             "Metrics besides the loss: accuracy, top_k_accuracy, precision, recall, f1[_macro|_micro], auc, mse, mae")
      ->delimiter(',')->check(parsed_by([](const std::string& v) { make_metric(v); }, "METRIC"))->default_str("accuracy");

  if (train) {
    command->option_defaults()->group("Schedule");
    command->add_option("--lr-schedule", o.lr_schedule,
                        "Learning-rate schedule from --lr: step or exponential (x --lr-decay-factor every --lr-decay-every), "
                        "cosine (after --lr-warmup, down to 0 at the run's end) or one-cycle")
        ->check(CLI::IsMember({"step", "exponential", "cosine", "one-cycle"}));
    command->add_option("--lr-schedule-unit", o.lr_schedule_unit, "Whether the schedule counts steps (batches) or epochs")
        ->check(CLI::IsMember({"step", "epoch"}))->capture_default_str();
    command->add_option("--lr-decay-every", o.lr_decay_every, "The step and exponential schedules' interval")
        ->check(integer_in(1, 1'000'000'000));
    command->add_option("--lr-decay-factor", o.lr_decay_factor, "The step and exponential schedules' factor per interval")
        ->check(number_above(0, false, "a finite number > 0"))->capture_default_str();
    command->add_option("--lr-warmup", o.lr_warmup, "The cosine schedule's linear warm-up, in the schedule's units")
        ->check(integer_in(0, 1'000'000'000))->capture_default_str();
    command->add_option("--early-stopping", o.early_stopping, "Stop after this many epochs without improvement of --monitor (0 = off)")
        ->check(integer_in(0, 1'000'000))->capture_default_str();
    command->add_option("--reduce-lr-on-plateau", o.reduce_lr_on_plateau,
                        "Multiply the learning rate by --reduce-lr-factor after this many epochs without improvement of "
                        "--monitor (0 = off)")
        ->check(integer_in(0, 1'000'000))->capture_default_str();
    command->add_option("--reduce-lr-factor", o.reduce_lr_factor, "ReduceLROnPlateau's factor, in (0, 1)")
        ->check(number_above(0, false, "a number in (0, 1)", 1 - 1e-12))->capture_default_str();
    command->add_option("--monitor", o.monitor, "The log key --early-stopping and --reduce-lr-on-plateau watch "
                                                "(default val_loss, or loss without validation)")->type_name("KEY");

    command->option_defaults()->group("Run length and validation");
    command->add_option("--epochs", o.fit.epochs, "Epochs")->check(integer_in(1, 1'000'000))->capture_default_str();
    command->add_option_function<int64_t>("--steps-per-epoch", [&o](int64_t v) { o.fit.steps_per_epoch = v; },
                                          "Batches per epoch (default: one pass; more continue into the next shuffled pass)")
        ->check(integer_in(1, 1'000'000'000));
    command->add_option_function<int64_t>("--max-steps", [&o](int64_t v) { o.fit.max_steps = v; },
                                          "Stop after this many batches (the run's files are written as after any stop)")
        ->check(integer_in(1, 1'000'000'000'000));
    command->add_option_function<std::string>("--max-time", [&o](const std::string& v) { o.fit.max_time_s = parse_duration_s(v); },
                                              "Stop at the first batch end after this long: 90, 90s, 10m or 2h")
        ->check(parsed_by([](const std::string& v) { parse_duration_s(v); }, "DURATION"));
    command->add_option("--validation-split", o.fit.validation_split,
                        "Fraction of the data held out for validation (its end); not for a stream, which validates on "
                        "--validation-data only")
        ->check(number_above(0, true, "a fraction in [0, 1)", 1 - 1e-12))->capture_default_str()
        ->each([&o](const std::string&) { o.validation_split_given = true; });
    command->add_option("--validation-data", o.spec.validation_data,
                        "A separate validation set, as --data (its test part where the files hold one)")->type_name("SPEC");
    command->add_option("--validation-freq", o.fit.validation_freq, "Validate every N-th epoch (N, 2N, ...)")
        ->check(integer_in(1, 1'000'000))->capture_default_str();
    command->add_flag_function("--no-terminate-on-nan", [&o](int64_t) { o.run.terminate_on_nan = false; },
                               "Go on when a batch's loss is NaN or infinite (by default the run fails there, exit 1)");
  }

  command->option_defaults()->group("Timing and threads");
  command->add_option("--warmup-steps", o.trainer.warmup_steps, "Steps left out of the statistics")
      ->check(integer_in(0, 1'000'000))->capture_default_str();
  add_parsed(command, "--threads", parse_threads, "auto|N", [&o](int n) { o.trainer.threads.intra_op = n; },
             "Intra-op threads, or auto: the candidates are measured on the first steps (counted as warm-up) "
             "and the fastest is kept")->default_str("auto");
  add_parsed(command, "--blas-threads", parse_threads, "auto|N", [&o](int n) { o.trainer.threads.blas = n; },
             "BLAS pool threads, or auto: 1 with a fixed --threads (ATen parallelises above BLAS), "
             "measured with --threads auto")->default_str("auto");
  add_parsed(command, "--layer-probe-every", parse_layer_probe, "auto|off|N",
             [&o](int64_t n) { o.trainer.layer_probe_every = n; },
             "Time each layer and count its FLOPs on one step in N after the warm-up (left out of the statistics), or "
             "auto: spaced so that the probes cost at most 2% of the step time, or off")->default_str("auto");
  command->add_option("--slow-callback-ms", o.slow_callback_ms, "Add a callback costing this many ms per batch")
      ->check(number_above(0, true, "a number of milliseconds in [0, 3600000]", 3.6e6))->capture_default_str();
  command->add_option_function<std::string>("--callback-mode", [&o](const std::string& v) { o.run.async_callbacks = v == "async"; },
                                             "How the observing callbacks run: sync, or async (off the training thread)")
      ->check(CLI::IsMember({"sync", "async"}))->default_str("sync");

  if (train) {
    command->option_defaults()->group("Checkpoints");
    add_parsed(command, "--checkpoint-every", [](const std::string& v) { return parse_every(v, false); }, "epoch|N",
               [&o](int64_t n) {
                 o.run.backup = true;
                 o.run.backup_every_batches = n;
               },
               "Back the whole training state up into RUN_DIR/backup every epoch or every N batches");
    command->add_option("--keep", o.run.keep, "Newest backups kept")->check(integer_in(1, 1000))->capture_default_str();
    command->add_option_function<std::string>("--backup-snapshot", [&o](const std::string& v) { o.run.backup_snapshot = parse_backup_snapshot(v); },
                        "How a backup holds the state while it is written in the background: copy (12 bytes a "
                        "parameter with Adam), live (no copy: the next weight update waits for the write), or auto "
                        "(live until a write holds an update up longer than a tenth of the step)")
        ->check(CLI::IsMember({"auto", "copy", "live"}))->default_str("auto");
    command->add_flag("--resume", o.run.resume, "Continue the run in --run-dir from its newest valid backup (mid-epoch)");
    command->add_flag("--overwrite", o.run.overwrite,
                      "Replace the earlier run's files in --run-dir (without it, or --resume, such a directory is refused)");
    command->add_flag_function("--no-best-checkpoint", [&o](int64_t) { o.run.best_checkpoint = false; },
                               "Do not keep checkpoints/best.fitscope (ModelCheckpoint, save_best_only)");
    command->add_option("--best-monitor", o.run.best_monitor,
                        "Log key the best checkpoint watches (default val_loss, or loss without validation)")->type_name("KEY");
  }

  command->option_defaults()->group("Output");
  command->add_option("--run-dir", o.run.run_dir, "Run directory (default runs/<YYYYmmdd-HHMMSS>-<model>)")->type_name("DIR");
  command->add_option("--config", o.config_file,
                      "Read the flags from a TOML file (name = value, the flags' names without dashes; flags on the "
                      "command line win). Every run writes its settings as RUN_DIR/config.toml")->type_name("FILE");
  if (train) {
    command->add_option("--verbose", o.run.verbose,
                        "0: nothing but errors, 1: a progress bar and the report, 2: one line per epoch and the report")
        ->check(integer_in(0, 2))->capture_default_str();
    command->add_flag_function("--quiet", [&o](int64_t) { o.run.verbose = 0; }, "Print nothing but errors (--verbose 0)");
    command->add_flag_function("--no-progress", [&o](int64_t) { o.run.progress_bar = false; }, "No progress bar");
    command->add_flag_function("--no-csv-logger", [&o](int64_t) { o.run.csv_logger = false; }, "Do not write metrics.csv (CSVLogger)");
    command->add_flag_function("--no-tensorboard", [&o](int64_t) { o.run.tensorboard = false; }, "Do not write TensorBoard event files");
    add_parsed(command, "--tensorboard-freq", [](const std::string& v) { return parse_every(v, true); }, "epoch|batch|N",
               [&o](int64_t n) { o.run.tensorboard_update_freq = n; },
               "TensorBoard scalars every epoch, every batch, or every N batches")->default_str("epoch");

    command->option_defaults()->group("Distributed (under fitscope launch or torchrun)");
    command->add_option("--dist-timeout", o.dist_timeout_s, "Seconds a collective or the rendezvous may wait for the other ranks")
        ->check(number_above(0, false, "a number of seconds in (0, 1000000]", 1e6))->capture_default_str();
    command->add_option("--dist-backend", o.dist_backend,
                        "gloo, nccl (a GPU per rank; a world of one too), or auto (nccl when the ranks train on GPUs and "
                        "this build has it, else gloo)")
        ->check(CLI::IsMember({"auto", "gloo", "nccl"}))->capture_default_str();
  }
  command->option_defaults()->group("Options");
}

void check_flag_relations(const TrainCommandOptions& o) {
  const TrainCommandOptions defaults;
  if (o.trainer.clipping.max_norm > 0 && o.trainer.clipping.max_value > 0) {
    throw std::invalid_argument("--clip-norm and --clip-value: choose one (got both)");
  }
  if (o.lr_schedule.empty()) {
    for (const auto& [flag, set] : {std::pair<const char*, bool>{"--lr-schedule-unit", o.lr_schedule_unit != defaults.lr_schedule_unit},
                                    {"--lr-decay-every", o.lr_decay_every != defaults.lr_decay_every},
                                    {"--lr-decay-factor", o.lr_decay_factor != defaults.lr_decay_factor},
                                    {"--lr-warmup", o.lr_warmup != defaults.lr_warmup}}) {
      if (set) throw std::invalid_argument(std::string(flag) + " needs --lr-schedule (it sets a schedule's parameter)");
    }
  } else if (o.reduce_lr_on_plateau > 0) {
    throw std::invalid_argument("--lr-schedule and --reduce-lr-on-plateau: choose one (both set the learning rate)");
  }
  if ((o.lr_schedule == "step" || o.lr_schedule == "exponential") && o.lr_decay_every < 1) {
    throw std::invalid_argument("--lr-schedule " + o.lr_schedule + " needs --lr-decay-every N (the interval, in " +
                                o.lr_schedule_unit + "s)");
  }
  if (o.reduce_lr_on_plateau == 0 && o.reduce_lr_factor != defaults.reduce_lr_factor) {
    throw std::invalid_argument("--reduce-lr-factor needs --reduce-lr-on-plateau PATIENCE");
  }
}

}  // namespace fitscope::cli
