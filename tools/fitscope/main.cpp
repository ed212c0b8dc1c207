// fitscope: the command line. argv -> plain option structs -> library calls; errors become exit codes
// (0 success, 1 the run failed, 2 bad usage or bad input).

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <stdexcept>

#include "fitscope/data/transforms.hpp"
#include "fitscope/distributed/context.hpp"
#include "fitscope/distributed/launch.hpp"
#include "fitscope/metrics/metric.hpp"
#include "fitscope/report/html_report.hpp"
#include "train_command.hpp"

namespace {

/// A validator for finite numbers with a lower bound, inclusive or not, and at most `max`, naming what
/// is expected ("inf", "nan" and values that overflow a duration are refused).
CLI::Validator number_above(double bound, bool inclusive, const std::string& expected, double max = 1e300) {
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        try {
          std::size_t used = 0;
          const double x = std::stod(v, &used);
          if (used == v.size() && std::isfinite(x) && (inclusive ? x >= bound : x > bound) && x <= max) return {};
        } catch (const std::exception&) {
        }
        return "expected " + expected + ", got '" + v + "'";
      },
      expected);
}

/// A validator accepting what `parse` accepts; its error message when it throws.
CLI::Validator parsed_by(std::function<void(const std::string&)> parse, const std::string& description) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& v) -> std::string {
        try {
          parse(v);
          return {};
        } catch (const std::exception& e) {
          return e.what();
        }
      },
      description);
}

/// "90", "90s", "10m", "2h" in seconds; throws std::invalid_argument saying what is expected.
double parse_duration_s(const std::string& text) {
  std::size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  const std::string unit = text.substr(std::min(used, text.size()));
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (used == 0 || scale < 0 || !std::isfinite(value) || value <= 0 || value * scale >= 1e9) {
    throw std::invalid_argument("expected a duration > 0 such as 90, 90s, 10m or 2h, got '" + text + "'");
  }
  return value * scale;
}

/// The flags of `train`, shared by `sweep`.
/// Accepts one of `words` or a number of batches >= 1 ("epoch|N" flags).
CLI::Validator words_or_batches(std::vector<std::string> words) {
  std::string name, expected;
  for (const auto& w : words) {
    name += w + "|";
    expected += w + ", ";
  }
  return CLI::Validator(
      [words, expected](std::string& v) -> std::string {
        if (std::find(words.begin(), words.end(), v) != words.end()) return {};
        try {
          std::size_t used = 0;
          if (std::stoll(v, &used) >= 1 && used == v.size()) return {};
        } catch (const std::exception&) {
        }
        return "expected " + expected.substr(0, expected.size() - 2) + " or a number of batches >= 1, got '" + v + "'";
      },
      name + "N");
}

void add_train_options(CLI::App* command, fitscope::cli::TrainCommandOptions& o) {
  auto model_check = CLI::Validator(
      [](std::string& v) -> std::string {
        if (v == "cnn" || v == "mlp" || (v.size() > 3 && v.substr(v.size() - 3) == ".pt")) return {};
        return "expected cnn, mlp or FILE.pt, got '" + v + "'";
      },
      "cnn|mlp|FILE.pt");
  command->add_option("--model", o.model, "Model: the seed cnn, the seed mlp, or a TorchScript file")
      ->check(model_check)->capture_default_str();
  command->add_option("--data", o.data,
                      "Data set: synthetic (built-in), idx:DIR (MNIST-style train-/t10k- files, raw or .gz), "
                      "cifar10:DIR (data_batch_*.bin, test_batch.bin) or csv:FILE; a test set in the files is the validation set")
      ->capture_default_str();
  command->add_option("--label-column", o.label_column, "CSV: the label column, by header name or 0-based index (default: 'label', else 0)");
  command->add_option("--workers", o.fit.loader.workers, "Loader threads (0 = batches built on the training thread)")
      ->check(CLI::Range(int64_t{0}, int64_t{256}))->capture_default_str();
  command->add_option("--prefetch", o.fit.loader.prefetch, "Batches built ahead of the training step (at least --workers)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))->capture_default_str();
  command->add_option_function<std::string>("--augment", [&o](const std::string& v) { o.fit.loader.transforms = fitscope::parse_augment(v); },
                                             "Random augmentation in the loader: flip, brightness (comma-separated)")
      ->check(parsed_by([](const std::string& v) { fitscope::parse_augment(v); }, "flip,brightness"));
  command->add_flag("--cache", o.fit.loader.cache, "Keep examples in memory after their first use");
  command->add_option("--synthetic-size", o.synthetic_size, "Examples in the built-in data set")
      ->check(CLI::Range(int64_t{100}, int64_t{10'000'000}))->capture_default_str();
  command->add_option("--epochs", o.fit.epochs, "Epochs")->check(CLI::Range(int64_t{1}, int64_t{1'000'000}))->capture_default_str();
  command->add_option("--batch-size", o.fit.loader.batch_size, "Examples per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}))->capture_default_str();
  command->add_option("--lr", o.trainer.learning_rate, "Learning rate")->check(number_above(0, false, "a finite number > 0"))->capture_default_str();
  command->add_option_function<std::string>("--optimizer", [&o](const std::string& v) {
        o.trainer.optimizer = fitscope::parse_optimizer(v);
      }, "Optimizer: adam (the default), adamw (decoupled weight decay) or sgd")->check(CLI::IsMember({"adam", "adamw", "sgd"}));
  command->add_option_function<double>("--weight-decay", [&o](double v) { o.trainer.weight_decay = v; },
                                       "Weight decay (default: 0.01 for adamw, PyTorch's; else 0)")
      ->check(number_above(0, true, "a finite number >= 0"));
  CLI::Option* momentum = command->add_option("--momentum", o.trainer.momentum, "SGD momentum, in [0, 1)")
      ->check(number_above(0, true, "a number in [0, 1)", 1 - 1e-12))->capture_default_str();
  command->add_flag("--nesterov", o.trainer.nesterov, "SGD with Nesterov momentum (needs --momentum)")->needs(momentum);
  command->add_option_function<std::string>("--loss", [&o](const std::string& v) { o.trainer.loss = fitscope::parse_loss(v); },
                                            "Loss: cross-entropy (the default), mse, mae, huber or bce-with-logits "
                                            "(class indices against several outputs count as one-hot)")
      ->check(CLI::IsMember({"cross-entropy", "mse", "mae", "huber", "bce-with-logits"}));
  command->add_option("--label-smoothing", o.trainer.loss_options.label_smoothing, "Cross-entropy's label smoothing, in [0, 1)")
      ->check(number_above(0, true, "a number in [0, 1)", 1 - 1e-12))->capture_default_str();
  command->add_option("--class-weight", o.trainer.loss_options.class_weights,
                      "Cross-entropy's weight per class, comma-separated (Keras's class_weight)")
      ->delimiter(',')->check(number_above(0, true, "a finite number >= 0"));
  CLI::Option* schedule = command->add_option("--lr-schedule", o.lr_schedule,
                      "Learning-rate schedule from --lr: step or exponential (x --lr-decay-factor every --lr-decay-every), "
                      "cosine (after --lr-warmup, down to 0 at the run's end) or one-cycle")
      ->check(CLI::IsMember({"step", "exponential", "cosine", "one-cycle"}));
  command->add_option("--lr-schedule-unit", o.lr_schedule_unit, "Whether the schedule counts steps (batches) or epochs")
      ->check(CLI::IsMember({"step", "epoch"}))->capture_default_str()->needs(schedule);
  command->add_option("--lr-decay-every", o.lr_decay_every, "The step and exponential schedules' interval")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}))->needs(schedule);
  command->add_option("--lr-decay-factor", o.lr_decay_factor, "The step and exponential schedules' factor per interval")
      ->check(number_above(0, false, "a finite number > 0"))->capture_default_str()->needs(schedule);
  command->add_option("--lr-warmup", o.lr_warmup, "The cosine schedule's linear warm-up, in the schedule's units")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000'000}))->capture_default_str()->needs(schedule);
  command->add_option("--early-stopping", o.early_stopping, "Stop after this many epochs without improvement of --monitor (0 = off)")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}))->capture_default_str();
  CLI::Option* plateau = command->add_option("--reduce-lr-on-plateau", o.reduce_lr_on_plateau,
                      "Multiply the learning rate by --reduce-lr-factor after this many epochs without improvement of "
                      "--monitor (0 = off)")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}))->capture_default_str()->excludes(schedule);
  command->add_option("--reduce-lr-factor", o.reduce_lr_factor, "ReduceLROnPlateau's factor, in (0, 1)")
      ->check(number_above(0, false, "a number in (0, 1)", 1 - 1e-12))->capture_default_str()->needs(plateau);
  command->add_option("--monitor", o.monitor, "The log key --early-stopping and --reduce-lr-on-plateau watch "
                                              "(default val_loss, or loss without validation)");
  CLI::Option* clip_norm = command->add_option("--clip-norm", o.trainer.clipping.max_norm,
                                                "Clip the gradients to this global L2 norm before each optimizer step (0 = off)")
      ->check(number_above(0, true, "a finite number >= 0"))->capture_default_str();
  command->add_option("--clip-value", o.trainer.clipping.max_value,
                      "Clamp every gradient element to [-X, X] before each optimizer step (0 = off)")
      ->check(number_above(0, true, "a finite number >= 0"))->capture_default_str()->excludes(clip_norm);
  command->add_option("--accumulate", o.trainer.accumulate,
                      "Batches per optimizer step (gradient accumulation; the update follows their mean loss)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}))->capture_default_str();
  command->add_option("--validation-data", o.validation_data,
                      "A separate validation set, as --data (its test part where the files hold one)");
  command->add_option("--validation-freq", o.fit.validation_freq, "Validate every N-th epoch (N, 2N, ...)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}))->capture_default_str();
  command->add_flag_function("--no-shuffle", [&o](int64_t) { o.fit.loader.shuffle = false; },
                             "Read the training set in order every epoch");
  command->add_option_function<int64_t>("--steps-per-epoch", [&o](int64_t v) { o.fit.steps_per_epoch = v; },
                                        "Batches per epoch (default: one pass; more continue into the next shuffled pass)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}));
  command->add_option_function<int64_t>("--max-steps", [&o](int64_t v) { o.fit.max_steps = v; },
                                        "Stop after this many batches (the run's files are written as after any stop)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000'000}));
  command->add_option_function<std::string>("--max-time", [&o](const std::string& v) { o.fit.max_time_s = parse_duration_s(v); },
                                            "Stop at the first batch end after this long: 90, 90s, 10m or 2h")
      ->check(parsed_by([](const std::string& v) { parse_duration_s(v); }, "DURATION"));
  command->add_option("--validation-split", o.fit.validation_split, "Fraction of the data held out for validation")
      ->check(CLI::Validator([](std::string& v) -> std::string {
        try {
          std::size_t used = 0;
          const double f = std::stod(v, &used);
          if (used == v.size() && f >= 0 && f < 1) return {};
        } catch (const std::exception&) {
        }
        return "expected a fraction in [0, 1), got '" + v + "'";
      }, "F in [0,1)"))->capture_default_str();
  command->add_option("--seed", o.fit.loader.seed, "Seed of the data, the initial weights and the shuffles")->capture_default_str();
  command->add_option("--warmup-steps", o.trainer.warmup_steps, "Steps left out of the statistics")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}))->capture_default_str();
  // "auto" is 0 in the options (ThreadOptions)
  const auto auto_or_count = [](std::string& v) -> std::string {
    if (v == "auto") {
      v = "0";
      return {};
    }
    if (!v.empty() && v.size() < 5 && v.find_first_not_of("0123456789") == std::string::npos && std::stoi(v) >= 1 &&
        std::stoi(v) <= 1024) {
      return {};
    }
    return "expected auto or a thread count in [1, 1024], got '" + v + "'";
  };
  command->add_option("--threads", o.trainer.threads.intra_op,
                      "Intra-op threads, or auto: the candidates are measured on the first steps (counted as warm-up) "
                      "and the fastest is kept (default auto)")
      ->transform(CLI::Validator(auto_or_count, "auto|N"));
  command->add_option("--blas-threads", o.trainer.threads.blas,
                      "BLAS pool threads, or auto: 1 with a fixed --threads (ATen parallelises above BLAS), "
                      "measured with --threads auto (default auto)")
      ->transform(CLI::Validator(auto_or_count, "auto|N"));
  command->add_option("--device", o.device, "auto (a GPU if there is one), cpu, cuda (under launch: the local rank's GPU) or cuda:N")
      ->check(CLI::Validator([](std::string& v) -> std::string {
        if (v == "auto" || v == "cpu" || v == "cuda") return {};
        if (v.size() > 5 && v.compare(0, 5, "cuda:") == 0 && v.size() < 9 &&
            v.find_first_not_of("0123456789", 5) == std::string::npos) {
          return {};
        }
        return "expected auto, cpu, cuda or cuda:N, got '" + v + "'";
      }, "auto|cpu|cuda|cuda:N"))->capture_default_str();
  command->add_option("--run-dir", o.run.run_dir, "Run directory (default runs/<YYYYmmdd-HHMMSS>-<model>)");
  CLI::Option* verbose = command->add_option("--verbose", o.run.verbose,
                      "0: nothing but errors, 1: a progress bar and the report, 2: one line per epoch and the report")
      ->check(CLI::Range(0, 2))->capture_default_str();
  command->add_flag_function("--quiet", [&o](int64_t) { o.run.verbose = 0; }, "Print nothing but errors (--verbose 0)")
      ->excludes(verbose);
  command->add_option("--load-delay-ms", o.fit.loader.delay_ms, "Artificial loader delay per batch, to reproduce a slow input pipeline")
      ->check(number_above(0, true, "a number of milliseconds in [0, 3600000]", 3.6e6))->capture_default_str();
  command->add_option("--slow-callback-ms", o.slow_callback_ms, "Add a callback costing this many ms per batch")
      ->check(number_above(0, true, "a number of milliseconds in [0, 3600000]", 3.6e6))->capture_default_str();
  command->add_flag_function("--no-terminate-on-nan", [&o](int64_t) { o.run.terminate_on_nan = false; },
                             "Go on when a batch's loss is NaN or infinite (by default the run fails there, exit 1)");
  command->add_option("--num-classes", o.num_classes,
                      "Classes of the classifier (default: 10, or the largest label + 1 when larger; a CSV label must be "
                      "below 10000 unless this is given)")
      ->check(CLI::Range(int64_t{2}, int64_t{1'000'000}));
  command->add_option_function<std::vector<std::string>>(
             "--metrics", [&o](const std::vector<std::string>& names) { o.trainer.metrics = std::vector<fitscope::MetricSpec>(names.begin(), names.end()); },
             "Comma-separated metrics besides the loss (accuracy, top_k_accuracy, precision, recall, f1[_macro|_micro], auc, "
             "mse, mae; default accuracy)")
      ->delimiter(',')
      ->check(parsed_by([](const std::string& v) { fitscope::make_metric(v); }, "METRIC"));
  command->add_option_function<std::string>("--checkpoint-every", [&o](const std::string& v) {
        o.run.backup = true;
        o.run.backup_every_batches = v == "epoch" ? 0 : std::stoll(v);
      }, "Back the whole training state up into RUN_DIR/backup every epoch or every N batches")
      ->check(words_or_batches({"epoch"}));
  command->add_option("--keep", o.run.keep, "Newest backups kept")->check(CLI::Range(int64_t{1}, int64_t{1000}))->capture_default_str();
  command->add_flag_function("--no-progress", [&o](int64_t) { o.run.progress_bar = false; }, "No progress bar");
  command->add_flag_function("--no-csv-logger", [&o](int64_t) { o.run.csv_logger = false; }, "Do not write metrics.csv (CSVLogger)");
  command->add_flag_function("--no-tensorboard", [&o](int64_t) { o.run.tensorboard = false; }, "Do not write TensorBoard event files");
  command->add_option_function<std::string>("--tensorboard-freq", [&o](const std::string& v) {
        o.run.tensorboard_update_freq = v == "epoch" ? 0 : v == "batch" ? 1 : std::stoll(v);
      }, "TensorBoard scalars every epoch (the default), every batch, or every N batches")
      ->check(words_or_batches({"epoch", "batch"}));
  command->add_flag_function("--no-best-checkpoint", [&o](int64_t) { o.run.best_checkpoint = false; }, "Do not keep checkpoints/best.fitscope (ModelCheckpoint, save_best_only)");
  command->add_option("--best-monitor", o.run.best_monitor, "Log key the best checkpoint watches (default val_loss, or loss without validation)");
  command->add_flag("--resume", o.run.resume, "Continue the run in --run-dir from its newest valid backup (mid-epoch)");
  command->add_flag("--overwrite", o.run.overwrite, "Replace the earlier run's files in --run-dir (without it, or --resume, such a directory is refused)");
  command->add_option("--dist-timeout", o.dist_timeout_s,
                      "Seconds a collective or the rendezvous may wait for the other ranks under launch or torchrun")
      ->check(number_above(0, false, "a number of seconds in (0, 1000000]", 1e6))->capture_default_str();
  command->add_option("--dist-backend", o.dist_backend,
                      "c10d backend under launch or torchrun: gloo, nccl (a GPU per rank; a world of one too), or auto "
                      "(nccl when the ranks train on GPUs and this build has it, else gloo)")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}))->capture_default_str();
  command->add_option_function<std::string>("--callback-mode", [&o](const std::string& v) { o.run.async_callbacks = v == "async"; },
                                             "How the observing callbacks run: sync (the default), or async (off the training thread)")
      ->check(CLI::IsMember({"sync", "async"}));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fitscope: a Keras-style training engine for libtorch that accounts for every millisecond of every step"};
  app.require_subcommand(1);

  fitscope::cli::TrainCommandOptions train_options;
  // the command as typed, each word quoted where a shell would need it: summary.json's settings
  for (int i = 0; i < argc; ++i) {
    std::string word = argv[i];
    if (word.empty() || word.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~") != std::string::npos) {
      std::string quoted = "'";
      for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      word = quoted + "'";
    }
    train_options.run.command_line += (i ? " " : "") + word;
  }
  CLI::App* train = app.add_subcommand("train", "Train a model, evaluate it on the validation split, write the run directory");
  add_train_options(train, train_options);
  int train_status = 0;
  train->callback([&] { train_status = fitscope::cli::run_train(train_options, std::cout); });

  fitscope::cli::SweepCommandOptions sweep_options;
  CLI::App* sweep = app.add_subcommand("sweep", "Throughput and step time against batch size: short runs, a fit of fixed and per-example cost, the knee");
  add_train_options(sweep, sweep_options.train);
  sweep->add_option("--batch-sizes", sweep_options.sweep.batch_sizes, "Comma-separated batch sizes")
      ->delimiter(',')->check(CLI::Range(int64_t{1}, int64_t{1'000'000}))->capture_default_str();
  sweep->add_option("--windows", sweep_options.sweep.windows,
                    "Windows per batch size, the batch sizes taking turns (the samples/s range is the windows')")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000}))->capture_default_str();
  sweep->add_option("--window-seconds", sweep_options.sweep.window_seconds, "Each window's measured steps last at least this long")
      ->check(CLI::Range(0.001, 3600.0))->capture_default_str();
  sweep->add_option("--steps", sweep_options.sweep.steps, "Each window holds at least this many measured steps (after the warm-up steps)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000}))->capture_default_str();
  sweep->callback([&] { fitscope::cli::run_sweep(sweep_options, std::cout); });

  std::string report_dir, report_out;
  CLI::App* report = app.add_subcommand("report", "(Re)build report.html from the files of a finished run or sweep");
  report->add_option("RUN_DIR", report_dir, "The run directory (summary.json, steps.csv, metrics.csv or sweep.json)")->required();
  report->add_option("--out", report_out, "Where to write the page (default RUN_DIR/report.html)");
  report->callback([&] { std::cout << "Report: " << fitscope::write_html_report(report_dir, report_out) << "\n"; });

  fitscope::dist::LaunchOptions launch_options;
  std::vector<std::string> launch_command;
  int launch_status = 0;
  CLI::App* launch = app.add_subcommand(
      "launch", "Start this machine's ranks of a data-parallel run (torchrun's environment), prefix their output, stop them all when one fails");
  launch->add_option("--nproc-per-node", launch_options.nproc_per_node, "Ranks on this machine")
      ->check(CLI::Range(int64_t{1}, int64_t{1024}))->capture_default_str();
  launch->add_option("--nnodes", launch_options.nnodes, "Machines in the run")
      ->check(CLI::Range(int64_t{1}, int64_t{1 << 16}))->capture_default_str();
  launch->add_option("--node-rank", launch_options.node_rank, "This machine's index in [0, --nnodes)")
      ->check(CLI::Range(int64_t{0}, int64_t{1 << 16}))->capture_default_str();
  launch->add_option("--master-addr", launch_options.master_addr, "Address of the machine of rank 0 (it hosts the rendezvous store)")
      ->capture_default_str();
  launch->add_option("--master-port", launch_options.master_port, "Port of the rendezvous store")
      ->check(CLI::Range(int64_t{1}, int64_t{65535}))->capture_default_str();
  launch->add_option("--grace", launch_options.grace_s,
                     "Seconds the other ranks get to exit after one fails by itself, before SIGTERM (default: the job's "
                     "--dist-timeout + 1; none when a rank fails naming a peer)")
      ->check(number_above(0, true, "a number of seconds in [0, 1000000]", 1e6));
  launch->add_option("--max-restarts", launch_options.max_restarts,
                     "Restarts of the whole group after a rank fails; each resumes from the newest valid backup")
      ->check(CLI::Range(int64_t{0}, int64_t{1'000'000}))->capture_default_str();
  launch->add_option("--job-id", launch_options.job_id,
                     "With several nodes: the job's id, the same on every node; a rank of another job on the same "
                     "port is refused (default: from --master-addr, --master-port, --nnodes, --nproc-per-node)");
  launch->add_option("COMMAND", launch_command, "The command every rank runs, after --")->required();
  launch->callback([&] { launch_status = fitscope::dist::launch(launch_options, launch_command, std::cout, std::cerr); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "fitscope: " << e.what() << "\nRun 'fitscope --help' for the commands and flags.\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "fitscope: " << e.what() << "\n";
    return 2;
  } catch (const fitscope::dist::PeerFailure& e) {
    std::cerr << "fitscope: the run failed: " << e.what() << "\n";
    // the process group may still hold work bound to a dead peer: leave without destructors
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(1);
  } catch (const std::exception& e) {
    std::cerr << "fitscope: the run failed: " << e.what() << "\n";
    return 1;
  }
  return launch_status ? launch_status : train_status;
}
