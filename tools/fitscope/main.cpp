// fitscope: the command line. argv -> plain option structs -> library calls; errors become exit codes
// (0 success, 1 the run failed, 2 bad usage or bad input).

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <tuple>

#include "config_file.hpp"
#include "fitscope/distributed/context.hpp"
#include "fitscope/distributed/launch.hpp"
#include "fitscope/report/html_report.hpp"
#include "fitscope/run/run_directory.hpp"
#include "flags.hpp"
#include "help.hpp"
#include "compare_command.hpp"
#include "model_commands.hpp"
#include "train_command.hpp"

namespace {

using fitscope::cli::integer_in;
using fitscope::cli::number_above;

/// A --data or --model spec with its file or folder made absolute (`images:data/x` ->
/// `images:/home/me/data/x`, `tar:s/*.tar` -> `tar:/home/me/s/*.tar`, `mine.pt` -> `/home/me/mine.pt`); `synthetic`,
/// `cnn`, `mlp` as they are.
std::string absolute_spec(const std::string& spec) {
  const auto absolute = [](const std::string& path) {
    return path.empty() ? path : std::filesystem::absolute(path).lexically_normal().string();
  };
  for (const char* prefix : {"images:", "idx:", "cifar10:", "csv:", "tfrecord:", "tar:"}) {
    if (spec.rfind(prefix, 0) == 0) return prefix + absolute(spec.substr(std::strlen(prefix)));
  }
  return spec.size() > 3 && spec.compare(spec.size() - 3, 3, ".pt") == 0 ? absolute(spec) : spec;
}

/// The command as typed, each word quoted where a shell would need it: summary.json's settings.
std::string quoted_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    std::string word = argv[i];
    if (word.empty() || word.find_first_of(" \t\n'\"\\$`*?[]{}()<>|&;#~") != std::string::npos) {
      std::string quoted = "'";
      for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      word = quoted + "'";
    }
    line += (i ? " " : "") + word;
  }
  return line;
}

/// Adds evaluate's or predict's RUN_DIR, --data, --out and --batch-size.
void add_model_command_flags(CLI::App* command, fitscope::cli::ModelCommandOptions& m, const std::string& out_help) {
  command->add_option("RUN_DIR", m.run_dir, "The directory of a run of fitscope train (config.toml and the final weights)")
      ->required()->type_name("DIR");
  command->add_option("--data", m.data, "The examples, as train's --data (their test part where the files hold one; "
                                        "default: the run's validation data)")->type_name("SPEC");
  command->add_option("--out", m.out, out_help)->type_name("FILE");
  command->add_option("--batch-size", m.batch_size, "Examples per batch (default: the run's)")->check(integer_in(1, 1'000'000));
  command->add_option("--weights", m.weights, "final (the weights the run ended with) or best (those of its best epoch)")
      ->check(CLI::IsMember({"final", "best"}))->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fitscope::cli;
  CLI::App app{"fitscope: a Keras-style training engine for libtorch that accounts for every millisecond of every step",
               "fitscope"};
  app.formatter(std::make_shared<HelpFormatter>());
  app.require_subcommand(1);
  app.set_version_flag("--version", "fitscope " FITSCOPE_VERSION);
  CLI::App* version = app.add_subcommand("version", "Print fitscope's version");
  version->callback([] { std::cout << "fitscope " FITSCOPE_VERSION "\n"; });
  const std::set<std::string> not_in_config = {"run-dir", "resume", "overwrite"};  // a repeat is a new run

  TrainCommandOptions train_options;
  train_options.run.command_line = quoted_command_line(argc, argv);
  CLI::App* train = app.add_subcommand("train", "Train a model, evaluate it on the validation data, write the run directory");
  add_train_flags(train, train_options, Command::train);
  int train_status = 0;
  train->callback([&] {
    check_flag_relations(train_options);
    // data and model files by absolute path, so that the run repeats from any directory
    std::map<std::string, std::string> used = {{"data", absolute_spec(train_options.spec.data)}, {"model", absolute_spec(train_options.spec.model)}};
    // a stream has no end to hold out: without --validation-data it is not validated, as Keras's fit on
    // a tf.data.Dataset (the default split is dropped; a --validation-split given is refused by the fit)
    if (fitscope::is_stream_spec(train_options.spec.data) && !train_options.validation_split_given) {
      train_options.fit.validation_split = 0;
      used["validation-split"] = "0";
      if (train_options.spec.validation_data.empty()) {
        train_options.run.warnings.push_back(
            "RunSpec::data " + train_options.spec.data + " is a stream, which has no last examples to hold out: the run is "
            "not validated (FitOptions::validation_split 0.2 dropped); give RunSpec::validation_data to validate it");
      }
    }
    if (!train_options.spec.validation_data.empty()) used["validation-data"] = absolute_spec(train_options.spec.validation_data);
    const std::string head = "# fitscope train: the settings of this run; `fitscope train --config config.toml` repeats it\n\n";
    train_options.run.configuration = head + resolved_config(*train, not_in_config, used);
    train_options.used_configuration = [train, used, head, &not_in_config](const fitscope::RunSummary& s) {
      std::map<std::string, std::string> chosen = used;  // and what `auto` chose
      chosen["threads"] = std::to_string(s.threads.setting.intra_op);
      if (s.threads.setting.blas > 0) chosen["blas-threads"] = std::to_string(s.threads.setting.blas);
      if (s.loader.batches > 0) chosen["workers"] = std::to_string(s.loader.workers);
      if (s.loader.workers > 0) chosen["prefetch"] = std::to_string(s.loader.prefetch);
      return head + resolved_config(*train, not_in_config, chosen);
    };
    // a machine's own: its device, threads and loader, and what it prints
    train_options.run.rank_local_settings = {"device", "workers", "prefetch", "cache", "load-delay-ms", "threads",
                                             "blas-threads", "slow-callback-ms", "callback-mode", "verbose", "quiet",
                                             "no-progress", "dist-timeout"};
    train_status = run_train(train_options, std::cout);
  });

  SweepCommandOptions sweep_options;
  CLI::App* sweep = app.add_subcommand("sweep", "Throughput and step time against batch size: short runs, a fit of fixed and per-example cost, the knee");
  add_train_flags(sweep, sweep_options.train, Command::sweep);
  sweep->option_defaults()->group("Sweep");
  sweep->add_option("--batch-sizes", sweep_options.sweep.batch_sizes, "Batch sizes")
      ->delimiter(',')->check(integer_in(1, 1'000'000))->capture_default_str();
  sweep->add_option("--windows", sweep_options.sweep.windows,
                    "Windows per batch size, the batch sizes taking turns (the samples/s range is the windows')")
      ->check(integer_in(1, 1'000))->capture_default_str();
  sweep->add_option("--window-seconds", sweep_options.sweep.window_seconds, "Each window's measured steps last at least this long")
      ->check(number_above(0.001, true, "a number of seconds in [0.001, 3600]", 3600))->capture_default_str();
  sweep->add_option("--steps", sweep_options.sweep.steps, "Each window holds at least this many measured steps (after the warm-up steps)")
      ->check(integer_in(1, 1'000'000))->capture_default_str();
  add_parsed(sweep, "--memory-budget", parse_bytes, "SIZE",
             [&](int64_t bytes) { sweep_options.sweep.memory_budget_bytes = bytes; },
             "The fastest batch size whose steps' tensors (on a GPU the caching allocator's) fit this (300M, 2G): predicted from the memory curve, "
             "checked by one run");
  sweep->callback([&] {
    check_flag_relations(sweep_options.train);
    run_sweep(sweep_options, std::cout);
  });

  ModelCommandOptions evaluate_options;
  CLI::App* evaluate = app.add_subcommand(
      "evaluate", "The loss and metrics of a run's trained model on its validation data or --data; printed and written as JSON");
  add_model_command_flags(evaluate, evaluate_options, "Where to write the JSON (default RUN_DIR/evaluation.json)");
  evaluate->callback([&] { run_evaluate(evaluate_options, read_run_config(evaluate_options.run_dir), std::cout); });

  ModelCommandOptions predict_options;
  CLI::App* predict = app.add_subcommand(
      "predict", "A run's trained model's outputs for every example of its validation data or --data, as CSV and for torch.load");
  add_model_command_flags(predict, predict_options,
                          "The CSV to write (one row per example: index, target, predicted class, outputs); the tensors go "
                          "beside it as FILE.pt");
  predict->get_option("--out")->required();
  predict->callback([&] { run_predict(predict_options, read_run_config(predict_options.run_dir), std::cout); });

  MakeImagesOptions make_images_options;
  CLI::App* make_images = app.add_subcommand(
      "make-images", "Write the built-in data set as an image folder (DIR/class_NN/NNNNNN.jpg) for --data images:DIR, or as "
                     "TFRecord or WebDataset tar shards");
  make_images->add_option("DIR", make_images_options.dir, "The folder to write into")->required()->type_name("DIR");
  make_images->add_option("--count", make_images_options.count, "Images")->check(integer_in(1, 100'000'000))->capture_default_str();
  add_size_flag(make_images, "--size", make_images_options.height, make_images_options.width, 8,
                "HEIGHT,WIDTH (one number for a square)")->default_str("64,64");
  make_images->add_option("--classes", make_images_options.classes, "Classes (folders)")->check(integer_in(2, 1000))->capture_default_str();
  make_images->add_option("--format", make_images_options.write.format, "The image files: jpg or png (in every --layout)")->check(CLI::IsMember({"jpg", "png"}))->capture_default_str();
  make_images->add_option("--quality", make_images_options.write.quality, "JPEG quality")->check(integer_in(1, 100))->capture_default_str();
  make_images->add_option("--channels", make_images_options.write.channels, "1 (grayscale) or 3 (RGB: each image tinted at random)")
      ->check(CLI::IsMember({1, 3}))->capture_default_str();
  make_images->add_option("--seed", make_images_options.seed, "Seed of the images (another seed is another task: other classes)")->capture_default_str();
  make_images->add_flag("--held-out", make_images_options.held_out,
                        "Images of the same task as --seed's, drawn apart from those written without it: a set to validate on "
                        "(make-images val --held-out --count 500)");
  make_images->add_option("--layout", make_images_options.layout,
                          "folder (a class folder per class), tfrecord (tf.train.Example records in train-00000-of-0000N.tfrecord) "
                          "or tar (WebDataset's shard-00000.tar: NNNNNN.jpg and NNNNNN.cls per image)")
      ->check(CLI::IsMember({"folder", "tfrecord", "tar"}))->capture_default_str();
  make_images->add_option("--shards", make_images_options.shards,
                          "Files of --layout tfrecord or tar, each a contiguous run of the images (default 1)")
      ->check(integer_in(1, 100'000'000));
  make_images->add_flag("--gzip", make_images_options.gzip, "Gzip each TFRecord file whole (.tfrecord.gz, TensorFlow's GZIP)");
  make_images->callback([&] { run_make_images(make_images_options, std::cout); });

  std::string report_dir, report_out;
  CLI::App* report = app.add_subcommand("report", "(Re)build report.html from the files of a finished run or sweep");
  report->add_option("RUN_DIR", report_dir, "The run directory (summary.json, steps.csv, metrics.csv or sweep.json)")
      ->required()->type_name("DIR");
  report->add_option("--out", report_out, "Where to write the page (default RUN_DIR/report.html)")->type_name("FILE");
  report->callback([&] {
    const fitscope::RunDirectory run(report_dir);
    if (!report_out.empty()) fitscope::check_output_path("--out", report_out, {fitscope::RunDirectory::kReport});
    const std::string path = report_out.empty() ? run.report() : report_out;
    fitscope::write_html_report(run.report_sources(), path);
    if (report_out.empty()) fitscope::record_run_file(report_dir, fitscope::RunDirectory::kReport);  // the manifest keeps up
    std::cout << "Report: " << path << "\n";
  });

  fitscope::cli::CompareCommandOptions compare_options;
  int compare_status = 0;
  CLI::App* compare = app.add_subcommand(
      "compare", "Where run B's step time differs from run A's (or runs of B's settings from runs of A's): each phase, rank and callback with its confidence interval, "
                 "the settings that differ, the verdicts side by side");
  compare->add_option("RUNS", compare_options.runs,
                      "RUN_A [RUN_A ...] RUN_B [RUN_B ...]: the run compared against (summary.json, steps.csv, config.toml) "
                      "or several runs of its settings, then the run whose change is measured, or several (--runs-of-a)")
      ->required()->type_name("DIR");
  compare->add_option_function<int>("--runs-of-a", [&](int v) { compare_options.runs_of_a = v; },
                                    "How many of the runs are A's (default: all but the last); with several of each, made in turn "
                                    "(A1 B1 A2 B2 ..., five each on a noisy machine), Welch's t over the runs' means")
      ->type_name("N")->check(number_above(1, true, "a number of runs in [1, 1000]", 1000));
  compare->add_option("--json", compare_options.json, "Also write the comparison as JSON to FILE")->type_name("FILE");
  compare->add_option("--html", compare_options.html, "Also write the comparison as a page (report.html's style) to FILE")->type_name("FILE");
  compare->add_option_function<double>("--fail-above", [&](double v) { compare_options.fail_above = v; },
                                       "Exit 1 when B is slower than A by more than PCT percent, at the confidence "
                                       "interval's low end (for CI)")
      ->type_name("PCT")->check(number_above(0, true, "a percentage in [0, 1000]", 1000));
  compare->add_option("--confidence", compare_options.compare.comparison.confidence,
                      "Confidence of the step's interval; the parts' are joint at it (default 0.95)")
      ->check(number_above(0.5, true, "a number in [0.5, 0.999]", 0.999));
  compare->add_option_function<double>("--noise-floor", [&](double v) { compare_options.compare.comparison.noise_floor = v / 100; },
                                       "The machine's run-to-run noise in percent of A's step: a change is called one only "
                                       "beyond it (default 3; 0: the intervals alone; not used when a side is several runs, "
                                       "whose spread is measured)")
      ->type_name("PCT")->check(number_above(0, true, "a percentage in [0, 99]", 99));
  compare->add_flag("--force", compare_options.compare.force, "Compare runs of different models or data as well");
  compare->callback([&] { compare_status = fitscope::cli::run_compare(compare_options, std::cout, std::cerr); });

  fitscope::distributed::LaunchOptions launch_options;
  std::vector<std::string> launch_command;
  int launch_status = 0;
  CLI::App* launch = app.add_subcommand(
      "launch", "Start this machine's ranks of a data-parallel run (torchrun's environment), prefix their output, stop them all when one fails");
  launch->add_option("--nproc-per-node", launch_options.nproc_per_node, "Ranks on this machine")
      ->check(integer_in(1, 1024))->capture_default_str();
  launch
      ->add_option_function<std::string>(
          "--nnodes", [&](const std::string& v) { std::tie(launch_options.min_nodes, launch_options.nnodes) = parse_node_count(v); },
          "Machines in the run; MIN:MAX for an elastic job: each attempt starts with the machines whose launchers meet at "
          "--master-addr's launcher on --master-port + 1, at least MIN, and resumes from the newest backup on their ranks")
      ->check(parsed_by([](const std::string& v) { parse_node_count(v); }, "N|MIN:MAX"))->default_str("1");
  launch->add_option("--join-wait", launch_options.join_wait_s,
                     "With --nnodes MIN:MAX: seconds node 0 waits for another machine once MIN have joined an attempt")
      ->check(number_above(0, true, "a number of seconds in [0, 3600]", 3600))->capture_default_str();
  launch->add_option("--node-rank", launch_options.node_rank, "This machine's index in [0, --nnodes)")
      ->check(integer_in(0, 1 << 16))->capture_default_str();
  launch->add_option("--master-addr", launch_options.master_addr,
                     std::string("Address of the machine of rank 0. With several nodes it serves the rendezvous store on "
                                 "--master-port ") +
                         (fitscope::distributed::rendezvous_store_listens_on_master_addr_only()
                              ? "on this address only"
                              : "on every address of its host (the TCPStore of this build's libtorch cannot bind one)") +
                         "; anyone who reaches that port can read and write the store: --job-id makes the ranks of "
                         "another job refuse to join, it keeps nobody out, so keep the port inside a trusted network")
      ->type_name("HOST")->capture_default_str();
  launch->add_option("--master-port", launch_options.master_port, "Port of the rendezvous store")
      ->check(integer_in(1, 65535))->capture_default_str();
  launch->add_option("--grace", launch_options.grace_s,
                     "Seconds the other ranks get to exit after one fails by itself, before SIGTERM (default: the job's "
                     "--dist-timeout + 1; none when a rank fails naming a peer)")
      ->check(number_above(0, true, "a number of seconds in [0, 1000000]", 1e6));
  launch->add_option("--max-restarts", launch_options.max_restarts,
                     "Restarts of the whole group after a rank fails; each resumes from the newest valid backup")
      ->check(integer_in(0, 1'000'000))->capture_default_str();
  launch->add_option("--job-id", launch_options.job_id,
                     "With several nodes: the job's id, the same on every node; a rank of another job on the same "
                     "port is refused (default: from --master-addr, --master-port, --nnodes, --nproc-per-node)")->type_name("ID");
  launch->add_option("COMMAND", launch_command, "The command every rank runs, after --")->required();
  launch->callback([&] { launch_status = fitscope::distributed::launch(launch_options, launch_command, std::cout, std::cerr); });

  std::string shell;
  CLI::App* completion = app.add_subcommand("completion", "Print a shell completion script (installed as bash-completion's fitscope)");
  completion->add_option("SHELL", shell, "The shell")->required()->check(CLI::IsMember({"bash"}));
  completion->callback([&] { std::cout << bash_completion(app); });

  if (argc == 1) {  // a bare `fitscope`: what it can do, as `fitscope --help` says it
    std::cout << app.help();
    return 0;
  }
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    for (const CLI::App* command : {train, sweep}) args = with_config_file(*command, args);
    std::reverse(args.begin(), args.end());  // CLI11 parses a vector from its end
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << parse_error_message(app, e) << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "fitscope: " << in_flags(e.what()) << "\n";
    return 2;
  } catch (const fitscope::distributed::PeerFailure& e) {
    std::cerr << "fitscope: the run failed: " << e.what() << "\n";
    // the process group may still hold work bound to a dead peer: leave without destructors
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(1);
  } catch (const std::exception& e) {
    std::cerr << "fitscope: the run failed: " << in_flags(e.what()) << "\n";
    return 1;
  }
  return launch_status ? launch_status : compare_status ? compare_status : train_status;
}
