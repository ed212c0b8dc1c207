// A run directory after the run: config.toml repeats it (`train --config`), and `evaluate` and
// `predict` rebuild its trained model. Real processes, real files; Python's torch reads predict's
// tensors.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fitscope/fitscope.hpp"
#include "process.hpp"

using fitscope::testing::expect_usage_error;
using fitscope::testing::lines_of;
using fitscope::testing::ProcessResult;
using fitscope::testing::read_file;
using fitscope::testing::run_fitscope;
using fitscope::testing::run_process;
using fitscope::testing::TempDir;
using nlohmann::json;

namespace {

/// A short, deterministic run of the seed MLP with settings far from the defaults.
const std::vector<std::string> kRun = {"train", "--model", "mlp", "--synthetic-size", "3000", "--epochs", "2",
                                       "--threads", "1", "--optimizer", "sgd", "--momentum", "0.9", "--nesterov",
                                       "--lr", "0.05", "--class-weight", "1,1,1,1,1,1,1,1,1,2", "--no-shuffle",
                                       "--lr-schedule", "cosine", "--lr-warmup", "10", "--seed", "7", "--quiet"};

ProcessResult train(std::vector<std::string> args, const std::string& dir) {
  args.insert(args.end(), {"--run-dir", dir});
  return run_fitscope(args);
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }


std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream s(line);
  for (std::string f; std::getline(s, f, ',');) out.push_back(f);
  return out;
}

}  // namespace

TEST(ConfigFile, ARunsConfigTomlRepeatsItBitForBitAndTheCommandLineWins) {
  TempDir tmp;
  const std::string first = tmp.path() + "/first", again = tmp.path() + "/again", changed = tmp.path() + "/changed";
  ASSERT_EQ(train(kRun, first).exit_code, 0);
  const std::string config = read_file(first + "/config.toml");
  for (const char* line : {"model = \"mlp\"", "optimizer = \"sgd\"", "momentum = 0.9", "nesterov = true", "lr = 0.05",
                           "class-weight = [1, 1, 1, 1, 1, 1, 1, 1, 1, 2]", "no-shuffle = true", "lr-schedule = \"cosine\"",
                           "lr-warmup = 10", "seed = 7", "threads = 1", "epochs = 2", "batch-size = 32", "cache = false",
                           "# Optimisation"}) {
    EXPECT_NE(config.find(std::string("\n") + line + "\n"), std::string::npos) << line << " in\n" << config;
  }
  EXPECT_EQ(config.find("run-dir"), std::string::npos);  // a repeat is a new run: no run-dir, resume, overwrite

  const ProcessResult r = train({"train", "--config", first + "/config.toml"}, again);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // the same settings; the first run's `auto`s are the repeat's numbers, so only the comments of what
  // the first run asked for differ
  const auto settings = [](std::string text) {
    for (std::size_t at = text.find("  # asked: "); at != std::string::npos; at = text.find("  # asked: ", at)) {
      text.erase(at, text.find('\n', at) - at);
    }
    return text;
  };
  EXPECT_EQ(settings(read_file(again + "/config.toml")), settings(config));
  EXPECT_NE(config.find("\nworkers = "), std::string::npos);
  EXPECT_EQ(config.find("\nworkers = \"auto\""), std::string::npos) << config;  // what the run used
  EXPECT_EQ(read_file(again + "/model.weights.pt"), read_file(first + "/model.weights.pt"));

  ASSERT_EQ(train({"train", "--config", first + "/config.toml", "--lr", "0.01", "--epochs", "1"}, changed).exit_code, 0);
  const std::string changed_config = read_file(changed + "/config.toml");
  EXPECT_NE(changed_config.find("\nlr = 0.01\n"), std::string::npos) << changed_config;
  EXPECT_NE(changed_config.find("\nepochs = 1\n"), std::string::npos);
  EXPECT_NE(changed_config.find("\nmomentum = 0.9\n"), std::string::npos);
  EXPECT_EQ(json::parse(read_file(changed + "/summary.json")).at("epochs").get<int>(), 1);
}

TEST(ConfigFile, AnUnknownSettingABadValueOrASectionExitsTwoNamingTheFile) {
  TempDir tmp;
  const std::string file = tmp.path() + "/run.toml";
  write(file, "epoch = 3\n");
  expect_usage_error({"train", "--config", file}, "--config " + file + ": unknown setting 'epoch' for fitscope train (did you mean epochs?)");
  write(file, "epochs = 0\n");
  expect_usage_error({"train", "--config", file}, "--epochs: expected an integer in [1, 1000000], got '0'");
  write(file, "cache = \"maybe\"\n");
  expect_usage_error({"train", "--config", file}, "--config " + file + ": cache = maybe: expected true or false");
  write(file, "epochs = 3\ncache = maybe\n");  // not TOML: the line and column named
  expect_usage_error({"train", "--config", file}, "--config " + file + ": line 2, column 9: ");
  write(file, "data = \"csv:a\\u0000b.csv\"\n");  // TOML's escape of a NUL: a path read up to it names another file
  expect_usage_error({"train", "--config", file}, "--config " + file + ": data: a NUL byte at offset 5 of the value");
  write(file, "[train]\nepochs = 3\n");
  expect_usage_error({"train", "--config", file}, "--config " + file + ": section [train]: the settings are the flags' names");
  write(file, "batch-sizes = [16, 32]\nepochs = 2\n");
  expect_usage_error({"sweep", "--config", file}, "unknown setting 'epochs' for fitscope sweep");
  expect_usage_error({"train", "--config", tmp.path() + "/none.toml"}, "--config " + tmp.path() + "/none.toml: cannot be read");
}

TEST(EvaluateCommand, MatchesOtherDataToTheRunsClassesByNameAndRefusesAClassItNeverSaw) {
  TempDir tmp;
  const std::string images = tmp.path() + "/images", dir = tmp.path() + "/run", other = tmp.path() + "/other";
  ASSERT_EQ(run_fitscope({"make-images", images, "--count", "200", "--size", "8", "--format", "png", "--channels", "1"}).exit_code, 0);
  ASSERT_EQ(train({"train", "--data", "images:" + images, "--model", "mlp", "--epochs", "1", "--threads", "1", "--quiet"}, dir).exit_code, 0);
  const json classes = json::parse(read_file(dir + "/summary.json")).at("class_names");
  ASSERT_EQ(classes.size(), 10u) << classes.dump();
  EXPECT_EQ(classes.at(3), "class_03");
  // other data without the first two classes: by position, class_02 would be label 0
  std::filesystem::create_directories(other);
  for (const char* name : {"class_02", "class_05", "class_09"}) {
    std::filesystem::copy(images + "/" + name, other + "/" + name, std::filesystem::copy_options::recursive);
  }
  const std::string csv = tmp.path() + "/predicted.csv";
  const ProcessResult p = run_fitscope({"predict", dir, "--data", "images:" + other, "--out", csv});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const std::vector<std::string> rows = lines_of(read_file(csv));
  std::size_t images_there = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(other)) images_there += entry.is_regular_file();
  ASSERT_EQ(rows.size(), images_there + 1);  // a header, a row per image
  EXPECT_EQ(rows[0].substr(0, 32), "index,example,target,predicted,o");
  int64_t right = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const std::vector<std::string> f = fields(rows[i]);
    const std::string folder = std::filesystem::path(f.at(1).substr(1, f.at(1).size() - 2)).parent_path().filename().string();
    EXPECT_EQ(classes.at(std::stoi(f.at(2))).get<std::string>(), folder) << rows[i];
    right += f.at(2) == f.at(3);
  }
  const std::string out = tmp.path() + "/evaluation.json";
  ASSERT_EQ(run_fitscope({"evaluate", dir, "--data", "images:" + other, "--out", out}).exit_code, 0);
  EXPECT_NEAR(json::parse(read_file(out)).at("logs").at("accuracy").get<double>(), static_cast<double>(right) / static_cast<double>(images_there), 1e-6);

  expect_usage_error({"predict", dir, "--data", "images:" + other, "--out", tmp.path() + "/none/p.csv"},
                     "--out " + tmp.path() + "/none/p.csv: its folder " + tmp.path() + "/none is not a directory");
  std::filesystem::create_directories(other + "/dog");
  std::filesystem::copy(images + "/class_00", other + "/dog", std::filesystem::copy_options::recursive);
  expect_usage_error({"evaluate", dir, "--data", "images:" + other},
                     "class folder dog is not one of the 10 classes it must match (class_00, class_01, ");
}

TEST(EvaluateCommand, ReproducesTheRunsValidationLogsFromItsDirectoryAndTakesOtherData) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(train(kRun, dir).exit_code, 0);
  const json logs = json::parse(read_file(dir + "/summary.json")).at("logs");
  const ProcessResult r = run_fitscope({"evaluate", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("600 examples of the validation split"), std::string::npos) << r.out;
  const json evaluation = json::parse(read_file(dir + "/evaluation.json"));
  EXPECT_EQ(evaluation.at("examples").get<int>(), 600);
  EXPECT_NEAR(evaluation.at("logs").at("loss").get<double>(), logs.at("val_loss").get<double>(), 1e-6);
  EXPECT_NEAR(evaluation.at("logs").at("accuracy").get<double>(), logs.at("val_accuracy").get<double>(), 1e-9);

  // --data: the whole built-in set of the run's --synthetic-size, the training examples included
  const std::string out = tmp.path() + "/all.json";
  ASSERT_EQ(run_fitscope({"evaluate", dir, "--data", "synthetic", "--out", out, "--batch-size", "500"}).exit_code, 0);
  EXPECT_EQ(json::parse(read_file(out)).at("examples").get<int>(), 3000);

  expect_usage_error({"evaluate", tmp.path()}, tmp.path() + ": no config.toml");
  expect_usage_error({"evaluate", dir, "--data", "csv:/no/such.csv"}, "--data csv:/no/such.csv: ");
}

TEST(EvaluateCommand, ARunTrainedWithNormalizeIsEvaluatedOnNormalisedInputsAndReproducesItsValidationLogs) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  std::vector<std::string> args = kRun;
  args.insert(args.end(), {"--normalize", "0.5/0.25"});
  ASSERT_EQ(train(args, dir).exit_code, 0);
  const json logs = json::parse(read_file(dir + "/summary.json")).at("logs");
  const ProcessResult r = run_fitscope({"evaluate", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json evaluation = json::parse(read_file(dir + "/evaluation.json")).at("logs");
  EXPECT_DOUBLE_EQ(evaluation.at("loss").get<double>(), logs.at("val_loss").get<double>());
  EXPECT_DOUBLE_EQ(evaluation.at("accuracy").get<double>(), logs.at("val_accuracy").get<double>());
}

/// A C++ program opens a finished run as `fitscope evaluate` does: RunSpec::from_config gives its data
/// (the synthetic draw, the normalisation, the held-out split) and model, open_trained_run its best
/// weights, and the logs equal the command's to the last bit; examples/evaluate_a_run does it in 25 lines.
TEST(RunSpec, FromAFinishedRunsConfigEvaluatesItsBestWeightsAsTheCommandDoes) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(train({"train", "--model", "mlp", "--synthetic-size", "3000", "--epochs", "2", "--threads", "1", "--seed",
                   "7", "--normalize", "0.5/0.25", "--quiet"}, dir).exit_code, 0);
  const ProcessResult command = run_fitscope({"evaluate", dir, "--weights", "best", "--out", tmp.path() + "/best.json"});
  ASSERT_EQ(command.exit_code, 0) << command.err;
  const json expected = json::parse(read_file(tmp.path() + "/best.json")).at("logs");

  const fitscope::RunDirectory run(dir);
  const fitscope::RunSpec spec = fitscope::RunSpec::from_config(dir);
  EXPECT_EQ(spec.model, "mlp");
  EXPECT_EQ(spec.synthetic_size, 3000);
  EXPECT_EQ(spec.seed, 7u);
  EXPECT_EQ(spec.normalize_mean, std::vector<double>{0.5});
  const fitscope::TrainedRun trained = fitscope::open_trained_run(run, spec, {}, /*best=*/true);
  EXPECT_EQ(trained.weights, run.best_weights());
  const fitscope::JudgedData judged = fitscope::judged_data(spec, trained.data);
  EXPECT_EQ(judged.examples->size(), 600);
  const fitscope::Logs logs = trained.trainer->evaluate(judged.examples, {});
  EXPECT_EQ(logs.at("loss"), expected.at("loss").get<double>());
  EXPECT_EQ(logs.at("accuracy"), expected.at("accuracy").get<double>());

  const std::string bad = tmp.path() + "/bad";  // a setting of the wrong kind: the file and the setting named
  std::filesystem::create_directories(bad);
  std::ofstream(bad + "/config.toml") << "model = \"mlp\"\nseed = -1\n";
  try {
    fitscope::RunSpec::from_config(bad);
    ADD_FAILURE() << "a negative seed was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), bad + "/config.toml: seed = -1: expected a whole number >= 0");
  }

  std::ofstream(dir + "/best.weights.pt", std::ios::app) << "x";  // changed since the run: refused by name
  try {
    fitscope::open_trained_run(run, spec, {}, /*best=*/true);
    ADD_FAILURE() << "changed weights were opened";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("best.weights.pt"), std::string::npos) << e.what();
  }
#ifdef FITSCOPE_EVALUATE_A_RUN
  std::ofstream(tmp.path() + "/other");
  const ProcessResult example = run_process({FITSCOPE_EVALUATE_A_RUN, tmp.path() + "/other"});
  EXPECT_EQ(example.exit_code, 2);
  EXPECT_NE(example.err.find("no config.toml"), std::string::npos) << example.err;
  const std::string again = tmp.path() + "/again";  // the changed run keeps its changed file
  ASSERT_EQ(train({"train", "--model", "mlp", "--synthetic-size", "3000", "--epochs", "2", "--threads", "1", "--seed",
                   "7", "--normalize", "0.5/0.25", "--quiet"}, again).exit_code, 0);
  const ProcessResult ran = run_process({FITSCOPE_EVALUATE_A_RUN, again});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_NE(ran.out.find(again + "/best.weights.pt on 600 examples of the validation split"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("  accuracy "), std::string::npos) << ran.out;
#endif
}

TEST(PredictCommand, WritesOneRowPerExampleAndTheSameTensorsForTorchLoad) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run", csv = tmp.path() + "/predictions.csv";
  ASSERT_EQ(train(kRun, dir).exit_code, 0);
  ASSERT_EQ(run_fitscope({"evaluate", dir}).exit_code, 0);
  const ProcessResult r = run_fitscope({"predict", dir, "--out", csv});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = lines_of(read_file(csv));
  ASSERT_EQ(rows.size(), 601u);
  EXPECT_EQ(rows.front(), "index,example,target,predicted,output_0,output_1,output_2,output_3,output_4,output_5,output_6,"
                          "output_7,output_8,output_9");
  int right = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const auto f = fields(rows[i]);
    ASSERT_EQ(f.size(), 14u);
    EXPECT_EQ(std::stoul(f[0]), i - 1);
    EXPECT_EQ(f[1], "\"" + std::to_string(2400 + i - 1) + "\"");  // the validation split's examples, by their place in the data
    std::size_t best = 4;
    for (std::size_t k = 4; k < f.size(); ++k) best = std::stod(f[k]) > std::stod(f[best]) ? k : best;
    EXPECT_EQ(std::stoul(f[3]), best - 4) << rows[i];
    right += f[2] == f[3];
  }
  const double accuracy = json::parse(read_file(dir + "/evaluation.json")).at("logs").at("accuracy").get<double>();
  EXPECT_NEAR(right / 600.0, accuracy, 1e-9);

  // Python reads the tensor file with the safe loader, and it holds what the CSV says
  const ProcessResult py = run_process(
      {FITSCOPE_PYTHON, "-c",
       "import csv, sys, torch\n"
       "t = torch.load(sys.argv[1], weights_only=True)\n"
       "rows = list(csv.reader(open(sys.argv[2])))[1:]\n"
       "assert t['outputs'].shape == (600, 10) and t['outputs'].dtype == torch.float32, t['outputs'].shape\n"
       "assert t['predicted'].tolist() == [int(r[3]) for r in rows]\n"
       "assert t['targets'].tolist() == [int(r[2]) for r in rows]\n"
       "assert torch.allclose(t['outputs'][5], torch.tensor([float(x) for x in rows[5][4:]]))\n"
       "print('ok')\n",
       tmp.path() + "/predictions.pt", csv});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, "ok\n");

  expect_usage_error({"predict", dir, "--out", tmp.path() + "/p.txt"}, "expected FILE.csv");
  expect_usage_error({"predict", dir}, "--out is required");
}

TEST(BestWeights, PythonLoadsThemAndEvaluateAndPredictUseThemWithWeightsBest) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(train(kRun, dir).exit_code, 0);
  const ProcessResult py = run_process(
      {FITSCOPE_PYTHON, "-c",
       "import sys, torch\n"
       "best = torch.load(sys.argv[1], weights_only=True)\n"
       "final = torch.load(sys.argv[2], weights_only=True)\n"
       "assert sorted(best) == sorted(final), (sorted(best), sorted(final))\n"
       "assert all(best[k].shape == final[k].shape for k in best)\n"
       "print('ok')\n",
       dir + "/best.weights.pt", dir + "/model.weights.pt"});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, "ok\n");
  const ProcessResult r = run_fitscope({"evaluate", dir, "--weights", "best", "--out", tmp.path() + "/best.json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Evaluated " + dir + "/best.weights.pt on 600 examples"), std::string::npos) << r.out;
  ASSERT_EQ(run_fitscope({"predict", dir, "--weights", "best", "--out", tmp.path() + "/best.csv"}).exit_code, 0);
  expect_usage_error({"evaluate", dir, "--weights", "newest"}, "--weights: newest not in {final,best}");
}

TEST(PredictCommand, RunsOnNewDataWithoutLabelsACsvWithoutItsLabelColumnAndLooseImagesEachRowNamed) {
  TempDir tmp;
  {  // three classes the features tell apart; the new rows have the features only
    std::ofstream train(tmp.path() + "/train.csv"), fresh(tmp.path() + "/new.csv");
    train << "a,b,label\n";
    for (int i = 0; i < 300; ++i) train << i % 3 << "." << i % 7 << "," << -(i % 3) << ".5," << i % 3 << "\n";
    fresh << "a,b\n-1.52,0.5\n\n2.1,-2.5\n";
  }
  const std::string run = tmp.path() + "/run";
  ASSERT_EQ(run_fitscope({"train", "--data", "csv:" + tmp.path() + "/train.csv", "--model", "mlp", "--epochs", "2", "--quiet",
                          "--num-classes", "3", "--run-dir", run}).exit_code, 0);
  const ProcessResult r = run_fitscope({"predict", run, "--data", "csv:" + tmp.path() + "/new.csv", "--out", tmp.path() + "/p.csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = lines_of(read_file(tmp.path() + "/p.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], "index,example,predicted,output_0,output_1,output_2");  // no target column
  EXPECT_EQ(rows[1].rfind("0,\"line 2\",", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("1,\"line 4\",", 0), 0u) << rows[2];  // named by its line: the blank line 3 skipped
  const ProcessResult py = run_process({FITSCOPE_PYTHON, "-c",
                                        "import sys, torch\nt = torch.load(sys.argv[1], weights_only=True)\n"
                                        "assert sorted(t) == ['outputs', 'predicted'], sorted(t)\nprint('ok')\n",
                                        tmp.path() + "/p.pt"});
  EXPECT_EQ(py.out, "ok\n") << py.err;
  // training on data without labels is refused, naming it
  expect_usage_error({"train", "--data", "csv:" + tmp.path() + "/new.csv", "--label-column", "none", "--model", "mlp", "--epochs", "1"},
                     "csv:" + tmp.path() + "/new.csv: examples without labels");

  // loose images: a folder with no class folders, one row per file, named
  const std::string images = tmp.path() + "/images", loose = tmp.path() + "/loose";
  ASSERT_EQ(run_fitscope({"make-images", images, "--count", "30", "--size", "16", "--classes", "3"}).exit_code, 0);
  const std::string image_run = tmp.path() + "/image_run";
  ASSERT_EQ(run_fitscope({"train", "--data", "images:" + images, "--model", "mlp", "--epochs", "1", "--quiet", "--run-dir",
                          image_run}).exit_code, 0);
  std::filesystem::create_directories(loose);
  std::filesystem::copy_file(std::filesystem::directory_iterator(images + "/class_02")->path(), loose + "/b, the \"second\".jpg");
  std::filesystem::copy_file(std::filesystem::directory_iterator(images + "/class_01")->path(), loose + "/a.jpg");
  const ProcessResult q = run_fitscope({"predict", image_run, "--data", "images:" + loose, "--out", tmp.path() + "/q.csv"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  const auto image_rows = lines_of(read_file(tmp.path() + "/q.csv"));
  ASSERT_EQ(image_rows.size(), 3u);
  EXPECT_EQ(image_rows[0].rfind("index,example,predicted,output_0,", 0), 0u) << image_rows[0];  // no target column
  EXPECT_EQ(image_rows[1].rfind("0,\"" + loose + "/a.jpg\",", 0), 0u) << image_rows[1];
  EXPECT_EQ(image_rows[2].rfind("1,\"" + loose + "/b, the \"\"second\"\".jpg\",", 0), 0u) << image_rows[2];

  // IDX images without their labels file
  const std::string idx = tmp.path() + "/idx", synthetic_run = tmp.path() + "/synthetic_run";
  std::filesystem::create_directories(idx);
  {
    std::ofstream out(idx + "/train-images-idx3-ubyte", std::ios::binary);
    const unsigned char header[16] = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 28, 0, 0, 0, 28};  // 3 images of 28x28
    out.write(reinterpret_cast<const char*>(header), sizeof header);
    out << std::string(3 * 28 * 28, '\x40');
  }
  ASSERT_EQ(run_fitscope({"train", "--model", "mlp", "--synthetic-size", "300", "--epochs", "1", "--quiet", "--run-dir",
                          synthetic_run}).exit_code, 0);
  const ProcessResult x = run_fitscope({"predict", synthetic_run, "--data", "idx:" + idx, "--out", tmp.path() + "/x.csv"});
  ASSERT_EQ(x.exit_code, 0) << x.err;
  const auto idx_rows = lines_of(read_file(tmp.path() + "/x.csv"));
  ASSERT_EQ(idx_rows.size(), 4u);
  EXPECT_EQ(idx_rows[0].rfind("index,example,predicted,", 0), 0u) << idx_rows[0];
}
