// A model written in Python: scripted by Debian's python3-torch, trained by `fitscope train --model
// FILE.pt`, handed back to Python (model.pt, model.weights.pt). Real processes, real files.

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/script.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fitscope/io/atomic_file.hpp"
#include "process.hpp"

using fitscope::testing::ProcessResult;
using fitscope::testing::read_file;
using fitscope::testing::run_fitscope;
using fitscope::testing::run_process;
using fitscope::testing::TempDir;
using nlohmann::json;

namespace {

ProcessResult python(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {FITSCOPE_PYTHON};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv);
}

ProcessResult python_code(const std::string& code) { return python({"-c", code}); }

/// Scripts the example's seed model of `kind` into `path` with Python.
void script_model(const std::string& path, const std::string& kind) {
  const ProcessResult r = python({std::string(FITSCOPE_SOURCE_DIR) + "/examples/python_model/make_model.py", path, kind});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

json train(const std::string& model, const std::string& dir) {
  const ProcessResult r = run_fitscope({"train", "--model", model, "--synthetic-size", "8000", "--epochs", "2",
                                    "--run-dir", dir, "--verbose", "2", "--seed", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(read_file(dir + "/summary.json"));
}

void expect_bad_model(const std::string& model, const std::string& message) {
  const ProcessResult r = run_fitscope({"train", "--model", model, "--epochs", "1", "--synthetic-size", "200"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "stderr was: " << r.err;
}

}  // namespace

class TorchScript : public ::testing::Test {
 protected:
  void SetUp() override {
    const ProcessResult r = python_code("import torch");
    ASSERT_EQ(r.exit_code, 0) << FITSCOPE_PYTHON << " cannot import torch (make test installs python3-torch): " << r.err;
  }
  TempDir tmp_;
};

TEST_F(TorchScript, APythonCnnTrainsLikeTheCppCnnAndComesBackToPythonWithTheSameOutputs) {
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "two trainings compared by accuracy: run in the plain build (the sanitizers check the TorchScript "
                  "path in the shorter tests)";
#endif
  const std::string script = tmp_.path() + "/cnn.pt";
  script_model(script, "cnn");
  const json from_python = train(script, tmp_.path() + "/python");
  const json from_cpp = train("cnn", tmp_.path() + "/cpp");
  const double python_accuracy = from_python.at("logs").at("val_accuracy").get<double>();
  const double cpp_accuracy = from_cpp.at("logs").at("val_accuracy").get<double>();
  EXPECT_GT(python_accuracy, 0.85);
  EXPECT_NEAR(python_accuracy, cpp_accuracy, 0.04);
  EXPECT_EQ(from_python.at("steps"), from_cpp.at("steps"));

  // the trained module in C++, on a fixed input, against the same file loaded by Python
  const std::string trained = tmp_.path() + "/python/model.pt";
  torch::jit::Module module = torch::jit::load(trained);
  module.eval();
  const at::Tensor input = at::arange(784, at::kFloat).reshape({1, 1, 28, 28}) / 784.0;
  const at::Tensor cpp_output = module.forward({input}).toTensor();
  const std::vector<char> bytes = torch::pickle_save(cpp_output);
  fitscope::write_file_atomically(tmp_.path() + "/cpp_output.pt", std::string(bytes.begin(), bytes.end()));
  const ProcessResult r = python_code(
      "import torch\n"
      "d = '" + tmp_.path() + "'\n"
      "m = torch.jit.load(d + '/python/model.pt')\n"
      "x = torch.arange(784, dtype=torch.float32).reshape(1, 1, 28, 28) / 784.0\n"
      "expected = torch.load(d + '/cpp_output.pt')\n"
      "assert torch.allclose(m(x), expected, atol=1e-6), (m(x), expected)\n"
      "w = torch.load(d + '/python/model.weights.pt')\n"
      "state = m.state_dict()\n"
      "assert sorted(w) == sorted(state), (sorted(w), sorted(state))\n"
      "assert all(torch.equal(w[k], state[k]) for k in w)\n"
      "print('same outputs and weights')\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("same outputs and weights"), std::string::npos) << r.out;
}

TEST_F(TorchScript, TheCppSeedModelsWeightsLoadWithWeightsOnlyIntoThePythonSeedModels) {
  // torch.load(weights_only=True), the default since PyTorch 2.6, into make_model.py's classes (strict)
  for (const std::string model : {"mlp", "cnn"}) {
    const std::string dir = tmp_.path() + "/" + model;
    ASSERT_EQ(run_fitscope({"train", "--model", model, "--synthetic-size", "200", "--epochs", "1", "--run-dir", dir,
                            "--verbose", "2"}).exit_code, 0);
    const ProcessResult r = python_code(
        "import sys, torch\n"
        "sys.path.insert(0, '" + std::string(FITSCOPE_SOURCE_DIR) + "/examples/python_model')\n"
        "from make_model import Cnn, Mlp\n"
        "w = torch.load('" + dir + "/model.weights.pt', weights_only=True)\n"
        "print(sorted((k, tuple(v.shape)) for k, v in w.items()))\n"
        "m = " + std::string(model == "mlp" ? "Mlp()" : "Cnn()") + "\n"
        "m.load_state_dict(w)\n"
        "assert m(torch.rand(4, 1, 28, 28)).shape == (4, 10)\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, model == "mlp" ? "[('dense.bias', (10,)), ('dense.weight', (10, 784))]\n"
                                    : "[('conv.bias', (32,)), ('conv.weight', (32, 1, 3, 3)), ('dense.bias', (10,)), "
                                      "('dense.weight', (10, 5408))]\n");
  }
}

TEST_F(TorchScript, AFileThatIsNotAZipExitsTwo) {
  const std::string file = tmp_.path() + "/notes.pt";
  std::ofstream(file) << "just some text";
  expect_bad_model(file, file + ": not a TorchScript archive (not a zip file; expected a file written by torch.jit.save)");
  expect_bad_model(tmp_.path() + "/missing.pt", tmp_.path() + "/missing.pt: no such TorchScript file");
}

TEST_F(TorchScript, AZipThatIsNotTorchScriptExitsTwo) {
  const std::string file = tmp_.path() + "/archive.pt";
  ASSERT_EQ(python_code("import zipfile\nwith zipfile.ZipFile('" + file + "', 'w') as z: z.writestr('a.txt', 'hi')\n")
                .exit_code, 0);
  expect_bad_model(file, file + ": not a TorchScript archive (a zip file that torch.jit.load cannot read: ");
}

TEST_F(TorchScript, AModelWithTheWrongInputShapeExitsTwoNamingTheShape) {
  const std::string file = tmp_.path() + "/wide.pt";
  ASSERT_EQ(python_code("import torch\n"
                        "torch.jit.script(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(100, 10))).save('" +
                        file + "')\n").exit_code, 0);
  expect_bad_model(file, "--model " + file + " does not accept the examples of --data synthetic (shape [1x28x28]): ");
}

TEST_F(TorchScript, AModelWhoseOutputIsNotOneScorePerClassExitsTwoBeforeTrainingNamingIt) {
  const std::string dir = tmp_.path();
  std::ofstream(dir + "/outputs.py") << "import torch\n"
                                        "class Flat(torch.nn.Module):\n"
                                        "    def __init__(self):\n"
                                        "        super().__init__()\n"
                                        "        self.l = torch.nn.Linear(784, 10)\n"
                                        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                                        "        return self.l(x.flatten(1)).sum(1)\n"
                                        "class Labels(Flat):\n"
                                        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                                        "        return self.l(x.flatten(1)).argmax(1, keepdim=True)\n"
                                        "class Fixed(torch.nn.Module):\n"
                                        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
                                        "        return x.flatten(1)[:, :10]\n"
                                        "d = '" + dir + "/'\n"
                                        "torch.jit.script(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 3))).save(d + 'three.pt')\n"
                                        "torch.jit.script(Flat()).save(d + 'flat.pt')\n"
                                        "torch.jit.script(Labels()).save(d + 'labels.pt')\n"
                                        "torch.jit.script(Fixed()).save(d + 'fixed.pt')\n";
  const ProcessResult made = python({dir + "/outputs.py"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  expect_bad_model(dir + "/three.pt", "--model " + dir + "/three.pt: gives 3 scores per example, but --data synthetic has 10 classes");
  expect_bad_model(dir + "/flat.pt", "--model " + dir + "/flat.pt: gives an output of shape [1] for one example");
  expect_bad_model(dir + "/labels.pt", "--model " + dir + "/labels.pt: gives Long scores");
  expect_bad_model(dir + "/fixed.pt", "--model " + dir + "/fixed.pt: has no parameters to train");
}

TEST_F(TorchScript, AModelWhoseForwardDoesNotTakeATensorExitsTwo) {
  const std::string file = tmp_.path() + "/listy.pt";
  const std::string source = tmp_.path() + "/listy.py";  // torch.jit.script reads the class's source file
  std::ofstream(source) << "import torch\nfrom typing import List\n"
                           "class M(torch.nn.Module):\n"
                           "    def forward(self, xs: List[torch.Tensor]) -> torch.Tensor:\n"
                           "        return xs[0]\n"
                           "torch.jit.script(M()).save('" + file + "')\n";
  const ProcessResult made = python({source});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  expect_bad_model(file, file + ": forward must take one tensor, its schema is ");
}
