// The `ingot` command line end to end: modules written with the module writer (a plan
// of COPY steps, so no kernel runs) and, when the source tree is at hand, the digits
// model compiled and run.
#include "tools/cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/driver/version.h"
#include "compiler/emit/module_writer.h"
#include "compiler/ir/error.h"
#include "tools/commands.h"
#include "tools/tensor_io.h"

#include "tests/unit/plan_builders.h"

namespace ingot::tools {
namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

Result ingot(std::initializer_list<std::string> args) {
  std::vector<std::string> words = {"ingot"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());
  std::ostringstream out, err;
  Result r;
  r.status = ingot_main(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

using testing::bind;
using testing::copy_step;


// y = x (2x3xf32, through the arena); z = constants (2xi64: 7, -3).
emit::ModuleContents copy_module() {
  emit::ModuleContents c;
  c.compiler_version = "ingot test";
  c.inputs = {{"x", INGOT_DTYPE_F32, {2, 3}}};
  c.outputs = {{"y", INGOT_DTYPE_F32, {2, 3}}, {"z", INGOT_DTYPE_I64, {2}}};
  c.arena_bytes = 64;
  c.code = {0xC3};
  c.kernel_offsets = {0};
  c.kernel_names = {"f32_unused"};
  c.bindings = {bind(INGOT_BASE_INPUT, 0, 0, 24),    bind(INGOT_BASE_ARENA, 0, 0, 24),
                bind(INGOT_BASE_ARENA, 0, 0, 24),    bind(INGOT_BASE_OUTPUT, 0, 0, 24),
                bind(INGOT_BASE_CONSTANTS, 0, 0, 16), bind(INGOT_BASE_OUTPUT, 1, 0, 16)};
  c.steps = {copy_step(0, 24), copy_step(2, 24), copy_step(4, 16)};
  c.step_labels = {"x_to_arena", "arena_to_y", "weights_to_z"};
  const int64_t z[2] = {7, -3};
  c.constants.resize(16);
  std::memcpy(c.constants.data(), z, sizeof(z));
  return c;
}

class ToolsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ingot_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    module_ = path("copy.ingot");
    emit::write_module_file(copy_module(), module_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  size_t file_count() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}));
  }

  fs::path dir_;
  std::string module_;
};

const char kInput[] = "--input=2x3xf32=1,2,3,4,5,6";

// ---- run ---------------------------------------------------------------------------

TEST_F(ToolsCliTest, RunPrintsOutputs) {
  Result r = ingot({"run", module_, kInput});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "output 0 'y': 2x3xf32\n"
            "  [1, 2, 3, 4, 5, 6]\n"
            "output 1 'z': 2xi64\n"
            "  [7, -3]\n");
  r = ingot({"run", module_, kInput, "--no-print"});
  EXPECT_EQ(r.status, kExitOk);
  EXPECT_EQ(r.out, "");
}

TEST_F(ToolsCliTest, RunReadsNpyInputs) {
  Tensor x = parse_inline_tensor("2x3xf32=6,5,4,3,2,1");
  write_npy(x, path("x.npy"));
  Result r = ingot({"run", module_, "--input=@" + path("x.npy")});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "[6, 5, 4, 3, 2, 1]")) << r.out;
}

TEST_F(ToolsCliTest, RunRejectsWrongInputs) {
  Result r = ingot({"run", module_, "--input=2x2xf32=1"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err, "error: input 0 ('x'): expected 2x3xf32, got 2x2xf32\n");
  EXPECT_EQ(r.out, "");

  r = ingot({"run", module_, "--input=2x3xi32=1"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err, "error: input 0 ('x'): expected 2x3xf32, got 2x3xi32\n");

  r = ingot({"run", module_});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err, "error: the module has 1 input (0 'x': 2x3xf32); got 0 --input values\n");

  r = ingot({"run", module_, kInput, kInput});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "got 2 --input values")) << r.err;

  r = ingot({"run", module_, "--input=@" + path("missing.npy")});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err, "error: input 0 ('x'): cannot open '" + path("missing.npy") +
                       "': No such file or directory\n");

  r = ingot({"run", module_, "--input=2x3xf32=1,2,x,4,5,6"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "error: input 0 ('x'): tensor '2x3xf32=1,2,x,4,5,6': value 'x' is "
                              "not a number"))
      << r.err;
}

TEST_F(ToolsCliTest, RunComparesWithExpected) {
  Result r = ingot({"run", module_, kInput, "--expected-output=2x3xf32=1,2,3,4,5,6.00001",
                    "--expected-output=2xi64=7,-3", "--no-print"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "[ok] output 0 'y': all 6 elements match (atol 0.0001, rtol 0.0001)\n"
            "[ok] output 1 'z': all 2 elements match (exact)\n");

  // Both outputs are checked even though the first one differs.
  r = ingot({"run", module_, kInput, "--expected-output=2x3xf32=1,2,3,4,5.5,6",
             "--expected-output=2xi64=7,-4", "--no-print"});
  EXPECT_EQ(r.status, kExitMismatch);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "[FAILED] output 0 'y': 1 of 6 elements differ (atol 0.0001, rtol 0.0001); worst at "
            "index 4 [1, 1]: got 5, expected 5.5\n"
            "[FAILED] output 1 'z': 1 of 2 elements differ (exact); worst at index 1 [1]: got -3, "
            "expected -4\n");

  // A looser tolerance accepts it.
  r = ingot({"run", module_, kInput, "--expected-output=2x3xf32=1,2,3,4,5.5,6",
             "--expected-output=2xi64=7,-3", "--no-print", "--atol=0.6"});
  EXPECT_EQ(r.status, kExitOk) << r.out;
  r = ingot({"run", module_, kInput, "--expected-output=2x3xf32=1,2,3,4,5.5,6",
             "--expected-output=2xi64=7,-3", "--no-print", "--atol=0", "--rtol=0.1"});
  EXPECT_EQ(r.status, kExitOk) << r.out;
}

TEST_F(ToolsCliTest, RunRejectsWrongExpectedOutputs) {
  Result r = ingot({"run", module_, kInput, "--expected-output=2x3xf32=0",
                    "--expected-output=3xi64=7,-3,0"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err, "error: expected output 1 ('z'): expected 2xi64, got 3xi64\n");
  EXPECT_EQ(r.out, "") << "nothing runs before the arguments are checked";

  r = ingot({"run", module_, kInput, "--expected-output=2x3xf32=0"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "the module has 2 expected outputs")) << r.err;

  r = ingot({"run", module_, kInput, "--atol=-1"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "--atol")) << r.err;
}

TEST_F(ToolsCliTest, RunWritesOutputs) {
  Result r = ingot({"run", module_, kInput, "--output=@" + path("y.npy"),
                    "--output=" + path("z.npy"), "--no-print"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  Tensor y = read_npy(path("y.npy"));
  EXPECT_EQ(format_type(y.dims, y.dtype), "2x3xf32");
  EXPECT_EQ(format_values(y), "  [1, 2, 3, 4, 5, 6]\n");
  Tensor z = read_npy(path("z.npy"));
  EXPECT_EQ(format_values(z), "  [7, -3]\n");

  // CLI11 hands an empty --output= the next word; such values are refused.
  fs::remove(path("y.npy"));
  r = ingot({"run", module_, kInput, "--output=", "--no-print"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err,
            "error: --output: value '--no-print' looks like a flag (an option left without its "
            "value takes the next word)\n");
  r = ingot({"run", module_, kInput, "--output=@", "--output=@" + path("z.npy")});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err, "error: --output: expected @FILE.npy or @FILE.pb, got '@'\n");
  EXPECT_FALSE(fs::exists(path("y.npy")));

  r = ingot({"run", module_, kInput, "--output=@" + path("y.npy")});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "got 1 --output values")) << r.err;
}

TEST_F(ToolsCliTest, RunReadsAndWritesTensorProtoFiles) {
  // Outputs named .pb are ONNX TensorProtos; they serve again as expected outputs.
  Result r = ingot({"run", module_, kInput, "--output=@" + path("y.pb"), "--output=@" + path("z.pb"),
                    "--no-print"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  Tensor z = read_tensor_proto(path("z.pb"));
  EXPECT_EQ(format_type(z.dims, z.dtype), "2xi64");
  EXPECT_EQ(format_values(z), "  [7, -3]\n");
  r = ingot({"run", module_, kInput, "--expected-output=@" + path("y.pb"), "--expected-output=@" + path("z.pb"),
             "--no-print"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "[ok] output 0 'y': all 6 elements match (atol 0.0001, rtol 0.0001)\n"
            "[ok] output 1 'z': all 2 elements match (exact)\n");
  PendingFile(path("x.pb"), encode_tensor_proto(read_tensor_proto(path("y.pb")), "x")).commit();
  r = ingot({"run", module_, "--input=@" + path("x.pb"), "--no-print"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
}

TEST_F(ToolsCliTest, RunLeavesNoFileBehindOnError) {
  const std::string bad = path("no/such/folder/z.npy");
  Result r = ingot({"run", module_, kInput, "--output=@" + path("y.npy"), "--output=@" + bad,
                    "--no-print"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err, "error: cannot write '" + bad + "': No such file or directory\n");
  EXPECT_FALSE(fs::exists(path("y.npy")));
  EXPECT_EQ(file_count(), 1u) << "only the module: no temporary files";
}

TEST_F(ToolsCliTest, RunWritesOutputsEvenOnMismatch) {
  Result r = ingot({"run", module_, kInput, "--output=@" + path("y.npy"),
                    "--output=@" + path("z.npy"), "--expected-output=2x3xf32=0",
                    "--expected-output=2xi64=0", "--no-print"});
  EXPECT_EQ(r.status, kExitMismatch);
  EXPECT_TRUE(fs::exists(path("y.npy")));
  EXPECT_TRUE(fs::exists(path("z.npy")));
}

TEST_F(ToolsCliTest, MalformedModuleIsAnError) {
  std::vector<uint8_t> bytes = read_file(module_);
  bytes[bytes.size() - 1] ^= 0xff;  // inside the last section: its CRC fails
  PendingFile(path("bad.ingot"), bytes).commit();
  for (const char* command : {"run", "inspect", "bench"}) {
    Result r = ingot({command, path("bad.ingot"), kInput});
    if (std::string(command) == "inspect") r = ingot({command, path("bad.ingot")});
    EXPECT_EQ(r.status, kExitError) << command;
    EXPECT_EQ(r.err.rfind("error: '" + path("bad.ingot") + "': malformed module", 0), 0u)
        << command << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  PendingFile(path("empty.ingot"), {}).commit();
  Result r = ingot({"inspect", path("empty.ingot")});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "malformed module")) << r.err;
  r = ingot({"run", path("none.ingot")});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "none.ingot")) << r.err;
}

TEST_F(ToolsCliTest, OtherVersionsAreNamedByEveryCommand) {
  const std::vector<uint8_t> good = read_file(module_);
  for (int field : {0, 1}) {
    std::vector<uint8_t> bytes = good;
    auto* header = reinterpret_cast<ingot_module_header_t*>(bytes.data());
    std::string want;
    if (field == 0) {
      header->abi_version = INGOT_ABI_VERSION + 3;
      want = fmt::format("module runtime ABI version {}, this runtime implements {}", INGOT_ABI_VERSION + 3,
                         INGOT_ABI_VERSION);
    } else {
      header->format_version = INGOT_MODULE_FORMAT_VERSION + 3;
      want = fmt::format("module format version {}, this runtime reads {}", INGOT_MODULE_FORMAT_VERSION + 3,
                         INGOT_MODULE_FORMAT_VERSION);
    }
    PendingFile(path("other.ingot"), bytes).commit();
    for (const char* command : {"run", "inspect", "bench"}) {
      Result r = std::string(command) == "run" ? ingot({command, path("other.ingot"), kInput})
                                               : ingot({command, path("other.ingot")});
      EXPECT_EQ(r.status, kExitError) << command;
      EXPECT_EQ(r.err, "error: '" + path("other.ingot") + "': " + want + "\n") << command;
    }
  }
}

// ---- inspect -----------------------------------------------------------------------

TEST_F(ToolsCliTest, InspectText) {
  Result r = ingot({"inspect", module_});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  const std::string versions = fmt::format("format version {}, ABI version {}", INGOT_MODULE_FORMAT_VERSION, INGOT_ABI_VERSION);
  for (const char* part : {
           "signature:\n  input 0 'x': 2x3xf32 (24 bytes)\n  output 0 'y': 2x3xf32 (24 bytes)\n"
           "  output 1 'z': 2xi64 (16 bytes)\n",
           versions.c_str(), "compiler: ingot test", "flags: none",
           "SIGNATURE", "PLAN", "CONSTANTS", "CODE", "NAMES",
           "plan: 3 steps, 1 kernels, 6 bindings, 1 worker",
           "input0+0:24 arena+0:24  # x_to_arena", "const+0:16 output1+0:16  # weights_to_z",
           "24 bytes", "arena: 64 bytes", "0..1", "constants: 16 bytes (embedded)"}) {
    EXPECT_TRUE(contains(r.out, part)) << "missing: " << part << "\n" << r.out;
  }
  r = ingot({"inspect", module_, "--plan"});
  EXPECT_TRUE(contains(r.out, "plan:"));
  EXPECT_FALSE(contains(r.out, "sections:"));
  EXPECT_FALSE(contains(r.out, "memory:"));
  r = ingot({"inspect", module_, "--size", "--memory"});
  EXPECT_FALSE(contains(r.out, "plan:"));
  EXPECT_TRUE(contains(r.out, "sections:"));
  EXPECT_TRUE(contains(r.out, "memory:"));
}

TEST_F(ToolsCliTest, InspectJson) {
  Result r = ingot({"inspect", module_, "--json"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["module"], module_);
  EXPECT_EQ(j["file_size"], fs::file_size(module_));
  EXPECT_EQ(j["signature"]["inputs"][0]["name"], "x");
  EXPECT_EQ(j["signature"]["inputs"][0]["shape"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(j["signature"]["outputs"][1]["dtype"], "i64");
  EXPECT_EQ(j["size"]["header"]["arch"], "generic");
  uint64_t sections = 0;
  for (const auto& s : j["size"]["sections"]) sections += s["size"].get<uint64_t>();
  EXPECT_LT(sections, fs::file_size(module_));
  EXPECT_EQ(j["plan"]["kernels"], nlohmann::json::array({"f32_unused"}));
  ASSERT_EQ(j["plan"]["steps"].size(), 3u);
  EXPECT_EQ(j["plan"]["steps"][2]["kind"], "COPY");
  EXPECT_EQ(j["plan"]["steps"][2]["bytes"], 16);
  EXPECT_EQ(j["plan"]["steps"][2]["label"], "weights_to_z");
  EXPECT_EQ(j["plan"]["steps"][2]["bindings"][0]["base"], "const");
  EXPECT_EQ(j["memory"]["arena_bytes"], 64);
  ASSERT_EQ(j["memory"]["regions"].size(), 1u);
  EXPECT_EQ(j["memory"]["regions"][0]["size"], 24);
  EXPECT_EQ(j["memory"]["regions"][0]["first_step"], 0);
  EXPECT_EQ(j["memory"]["regions"][0]["last_step"], 1);

  r = ingot({"inspect", module_, "--json", "--memory"});
  j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.contains("memory"));
  EXPECT_FALSE(j.contains("plan"));
  EXPECT_FALSE(j.contains("size"));
}

TEST_F(ToolsCliTest, InspectStrippedModule) {
  emit::ModuleContents c = copy_module();
  c.strip = true;
  emit::write_module_file(c, path("stripped.ingot"));
  Result r = ingot({"inspect", path("stripped.ingot"), "--json", "--plan", "--size"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["plan"]["kernels"], nlohmann::json::array({"kernel#0"}));
  EXPECT_FALSE(j["plan"]["steps"][0].contains("label"));
  EXPECT_EQ(j["size"]["header"]["flags"], "stripped");
}

// ---- bench -------------------------------------------------------------------------

TEST_F(ToolsCliTest, BenchJson) {
  Result r = ingot({"bench", module_, "--iterations=7", "--warmup=1", "--json"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["iterations"], 7);
  EXPECT_EQ(j["warmup"], 1);
  EXPECT_EQ(j["module"], module_);
  EXPECT_EQ(j["inputs"], "random");
  EXPECT_EQ(j["unit"], "us");
  EXPECT_LE(j["min"].get<double>(), j["median"].get<double>());
  EXPECT_LE(j["median"].get<double>(), j["p90"].get<double>());
  EXPECT_LE(j["p99"].get<double>(), j["max"].get<double>());
  EXPECT_GE(j["stddev"].get<double>(), 0.0);

  r = ingot({"bench", module_, kInput, "--iterations", "3", "--json"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["inputs"], "given");
}

TEST_F(ToolsCliTest, BenchText) {
  Result r = ingot({"bench", module_, "--iterations=3"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "iterations: 3 (after 10 warmup), inputs: random (seed 0)"));
  EXPECT_TRUE(contains(r.out, "median"));
  EXPECT_TRUE(contains(r.out, "p99"));
  EXPECT_TRUE(contains(r.out, "stddev"));
  r = ingot({"bench", module_, "--iterations=0"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "--iterations")) << r.err;
  r = ingot({"bench", module_, "--input=2x3xf32=1", "--input=2x3xf32=1"});
  EXPECT_EQ(r.status, kExitError);
}

// --against: two modules called in turn, both timed, with their B/A figures.
TEST_F(ToolsCliTest, BenchAgainst) {
  emit::write_module_file(copy_module(), path("b.ingot"));
  Result r = ingot({"bench", module_, "--against", path("b.ingot"), "--iterations=9", "--warmup=1", "--json"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["module"], module_);
  EXPECT_EQ(j["iterations"], 9);
  EXPECT_EQ(j["against"]["module"], path("b.ingot"));
  EXPECT_EQ(j["against"]["iterations"], 9);
  EXPECT_LE(j["against"]["min"].get<double>(), j["against"]["median"].get<double>());
  EXPECT_GT(j["paired_ratio"]["median"].get<double>(), 0.0);
  EXPECT_LE(j["paired_ratio"]["min"].get<double>(), j["paired_ratio"]["median"].get<double>());
  EXPECT_GT(j["min_ratio"].get<double>(), 0.0);
  EXPECT_EQ(j["calls_per_turn"], 1);
  r = ingot({"bench", module_, "--against", path("b.ingot"), "--iterations=3"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "B/A: median of pairs")) << r.out;
  // In turns: 9 calls of each in turns of 4 are turns of 4, 4 and 1 calls.
  r = ingot({"bench", module_, "--against", path("b.ingot"), "--iterations=9", "--calls-per-turn=4", "--json"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["calls_per_turn"], 4);
  EXPECT_EQ(j["iterations"], 9);
  EXPECT_EQ(j["against"]["iterations"], 9);
  EXPECT_LE(j["paired_ratio"]["min"].get<double>(), j["paired_ratio"]["median"].get<double>());
  r = ingot({"bench", module_, "--against", path("b.ingot"), "--iterations=9", "--calls-per-turn=4"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "B/A: median of 3 turns")) << r.out;
  EXPECT_TRUE(contains(r.out, "turns of 4 calls")) << r.out;
  r = ingot({"bench", module_, "--calls-per-turn=4"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "--calls-per-turn applies only with --against")) << r.err;
  r = ingot({"bench", module_, "--against", path("b.ingot"), "--calls-per-turn=0"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "--calls-per-turn")) << r.err;
  // Modules that take different inputs cannot share them.
  emit::ModuleContents other = copy_module();
  other.inputs = {{"x", INGOT_DTYPE_F32, {3, 2}}};
  emit::write_module_file(other, path("other.ingot"));
  r = ingot({"bench", module_, "--against", path("other.ingot")});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "--against: input 0 differs")) << r.err;
  r = ingot({"bench", module_, "--against", path("b.ingot"), "--per-step"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "--against")) << r.err;
  r = ingot({"bench", module_, "--against", path("missing.ingot")});
  EXPECT_EQ(r.status, kExitError);
}

// The rows of `bench --per-step`'s table, split into words, keyed by step number.
std::map<int, std::vector<std::string>> step_rows(const std::string& out) {
  std::map<int, std::vector<std::string>> rows;
  std::istringstream lines(out);
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string w; words >> w;) row.push_back(w);
    if (!row.empty() && row[0] == "step") {
      in_table = true;
    } else if (in_table && !row.empty()) {
      rows[std::stoi(row[0])] = row;
    }
  }
  return rows;
}

TEST_F(ToolsCliTest, BenchPerStepShowsRates) {
  emit::ModuleContents c = copy_module();
  c.step_work = {{0, 48, 0.0f, 0.0f}, {1000, 48, 0.0f, 0.0f}, {0, 32, 0.0f, 0.0f}};  // made-up FLOP for a copy, to see a rate
  emit::write_module_file(c, path("work.ingot"));
  Result r = ingot({"bench", path("work.ingot"), "--per-step", "--iterations=3", "--peak=100"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "peak: 100.0 GFLOP/s fp32 (given by --peak)")) << r.out;
  EXPECT_TRUE(contains(r.out, "total: 1.00k FLOP in ")) << r.out;
  for (const char* column : {"us", "%", "GFLOP/s", "%peak", "GB/s", "kernel", "label"})
    EXPECT_TRUE(contains(r.out, column)) << column << "\n" << r.out;
  auto rows = step_rows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  // step, us, %, GFLOP/s, %peak, GB/s, kernel, label
  ASSERT_EQ(rows[0].size(), 8u) << r.out;
  EXPECT_EQ(rows[0][3], "-") << "no FLOP, no rate";
  EXPECT_EQ(rows[0][4], "-");
  EXPECT_EQ(rows[0][6], "(copy)");
  EXPECT_EQ(rows[0][7], "x_to_arena");
  EXPECT_NE(rows[1][3], "-");
  EXPECT_EQ(rows[1][7], "arena_to_y");

  r = ingot({"bench", path("work.ingot"), "--per-step", "--iterations=4", "--peak=100", "--json"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& per_step = j["per_step"];
  EXPECT_EQ(per_step["runs"], 1);
  EXPECT_EQ(per_step["peak_gflop_per_s"], 100.0);
  EXPECT_EQ(per_step["peak_source"], "--peak");
  EXPECT_EQ(per_step["total_flops"], 1000);
  ASSERT_EQ(per_step["steps"].size(), 3u);
  const nlohmann::json& step1 = per_step["steps"][1];
  EXPECT_EQ(step1["step"], 1);
  EXPECT_EQ(step1["flops"], 1000);
  EXPECT_EQ(step1["bytes"], 48);
  for (const char* key : {"us", "percent", "gflop_per_s", "percent_of_peak", "gb_per_s", "kernel", "label"})
    EXPECT_TRUE(step1.contains(key)) << key;

  r = ingot({"bench", path("work.ingot"), "--per-step", "--peak=0"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "--peak")) << r.err;
}

TEST_F(ToolsCliTest, BenchPerStepOfStrippedModule) {
  emit::ModuleContents c = copy_module();
  c.strip = true;
  emit::write_module_file(c, path("stripped.ingot"));
  Result r = ingot({"bench", path("stripped.ingot"), "--per-step", "--iterations=3"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "compiled with --strip")) << r.out;
  EXPECT_FALSE(contains(r.out, "GFLOP/s")) << r.out;
  EXPECT_FALSE(contains(r.out, "peak:")) << r.out;
  auto rows = step_rows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[2][3], "(copy)");

  r = ingot({"bench", path("stripped.ingot"), "--per-step", "--iterations=3", "--json"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["per_step"]["has_work"], false);
  EXPECT_EQ(j["per_step"]["steps"].size(), 3u);
  EXPECT_FALSE(j["per_step"]["steps"][0].contains("flops"));
}

// ---- arguments ---------------------------------------------------------------------

TEST(ToolsCli, HelpAndUsageErrors) {
  Result r = ingot({"--help"});
  EXPECT_EQ(r.status, kExitOk);
  EXPECT_TRUE(contains(r.out, "compile"));
  EXPECT_TRUE(contains(r.out, "inspect"));
  r = ingot({"run", "--help"});
  EXPECT_EQ(r.status, kExitOk);
  EXPECT_TRUE(contains(r.out, "--expected-output"));

  r = ingot({});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u);
  r = ingot({"frobnicate"});
  EXPECT_EQ(r.status, kExitError);
  r = ingot({"run", "/nonexistent/m.ingot"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "/nonexistent/m.ingot")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(ToolsCli, Version) {
  Result r = ingot({"--version"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_EQ(r.out.rfind(std::string("ingot ") + driver::compiler_version() + "\n", 0), 0u) << r.out;
  EXPECT_TRUE(contains(r.out, fmt::format("module format version {}, runtime ABI version {}",
                                          INGOT_MODULE_FORMAT_VERSION, INGOT_ABI_VERSION)))
      << r.out;
  EXPECT_TRUE(contains(r.out, "built with ")) << r.out;
  EXPECT_TRUE(contains(r.out, "-std=")) << r.out;
}

TEST(ToolsCli, ParseInputShape) {
  driver::InputShapeOverride s = parse_input_shape("input:1x3x224x224");
  EXPECT_EQ(s.name, "input");
  EXPECT_EQ(s.dims, (std::vector<int64_t>{1, 3, 224, 224}));
  s = parse_input_shape("serving:0:8");
  EXPECT_EQ(s.name, "serving:0");
  EXPECT_EQ(s.dims, (std::vector<int64_t>{8}));
  EXPECT_THROW(parse_input_shape("1x3"), Error);
  EXPECT_THROW(parse_input_shape(":1x3"), Error);
  EXPECT_THROW(parse_input_shape("x:"), Error);
  EXPECT_THROW(parse_input_shape("x:1x?"), Error);
  EXPECT_EQ(parse_opt_level("0"), 0);
  EXPECT_EQ(parse_opt_level("2"), 2);
  EXPECT_EQ(parse_opt_level("s"), 3);
  EXPECT_THROW(parse_opt_level("3"), Error);
}

#ifdef INGOT_SOURCE_DIR
class ToolsDigitsTest : public ToolsCliTest {
 protected:
  void SetUp() override {
    ToolsCliTest::SetUp();
    model_ = std::string(INGOT_SOURCE_DIR) + "/examples/digits/digits_mlp.onnx";
    samples_ = std::string(INGOT_SOURCE_DIR) + "/examples/digits/samples/";
    if (!fs::exists(model_)) GTEST_SKIP() << model_ << " not present";
  }
  std::string model_;
  std::string samples_;
};

TEST_F(ToolsDigitsTest, CompileFlagErrors) {
  Result r = ingot({"compile", model_, "-o", path("m.ingot"), "--input-shape=input"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err,
            "error: --input-shape 'input': expected NAME:DIMS such as input:1x3x224x224\n");
  r = ingot({"compile", model_, "-o", path("m.ingot"), "--input-shape=input:1x-64"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "dimension '-64'")) << r.err;
  r = ingot({"compile", model_, "-o", path("m.ingot"), "--input-shape=a:1", "--input-shape=a:2"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "more than once")) << r.err;
  r = ingot({"compile", model_, "-o", path("m.ingot"), "-O3"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err, "error: -O3: unknown optimization level (expected -O0, -O2 or -Os)\n");
  r = ingot({"compile", model_, "-o", path("m.ingot"), "--weights=inline"});
  EXPECT_EQ(r.status, kExitError);
  r = ingot({"compile", model_});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "-o")) << r.err;
  r = ingot({"compile", path("missing.onnx"), "-o", path("m.ingot")});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_TRUE(contains(r.err, "missing.onnx")) << r.err;
  EXPECT_EQ(file_count(), 1u) << "no output left behind";
}

TEST_F(ToolsDigitsTest, CompileRunAndCompare) {
  const std::string out = path("digits.ingot");
  Result r = ingot({"compile", model_, "-o", out, "-Os", "--strip"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  ASSERT_TRUE(fs::exists(out));
  r = ingot({"run", out, "--input=@" + samples_ + "sample_3.npy",
             "--expected-output=@" + samples_ + "expected_logits_3.npy"});
  EXPECT_EQ(r.status, kExitOk) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "output 0 'logits': 1x10xf32\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "[ok] output 0 'logits'")) << r.out;

  r = ingot({"run", out, "--input=@" + samples_ + "sample_3.npy",
             "--expected-output=@" + samples_ + "expected_logits_4.npy", "--no-print"});
  EXPECT_EQ(r.status, kExitMismatch) << r.err;
  EXPECT_TRUE(contains(r.out, "[FAILED] output 0 'logits'")) << r.out;

  r = ingot({"run", out, "--input=1x63xf32=0"});
  EXPECT_EQ(r.status, kExitError);
  EXPECT_EQ(r.err, "error: input 0 ('input'): expected 1x64xf32, got 1x63xf32\n");

  r = ingot({"inspect", out, "--plan"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "DISPATCH")) << r.out;
  EXPECT_TRUE(contains(r.out, "kernel#0")) << r.out;
}

// A compiled model carries each step's work: bench --per-step shows its rates against
// the measured peak, inspect --plan its FLOP.
TEST_F(ToolsDigitsTest, BenchPerStepShowsGflops) {
  const std::string out = path("digits.ingot");
  Result r = ingot({"compile", model_, "-o", out});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  r = ingot({"bench", out, "--per-step", "--iterations=3"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "GFLOP/s")) << r.out;
  EXPECT_TRUE(contains(r.out, "FMA probe, one core")) << r.out;
  const size_t peak_at = r.out.find("peak: ");
  ASSERT_NE(peak_at, std::string::npos) << r.out;
  EXPECT_GT(std::stod(r.out.substr(peak_at + 6)), 0.1) << r.out;
  auto rows = step_rows(r.out);
  ASSERT_FALSE(rows.empty()) << r.out;
  int with_rate = 0;
  for (const auto& [step, row] : rows) {
    ASSERT_GE(row.size(), 7u) << r.out;
    if (row[3] != "-" && std::stod(row[3]) > 0) ++with_rate;
  }
  EXPECT_GE(with_rate, 1) << "the MLP's Gemm steps compute: " << r.out;

  r = ingot({"inspect", out, "--plan"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "FLOP")) << r.out;
  EXPECT_TRUE(contains(r.out, "work: ")) << r.out;
}
#endif

}  // namespace
}  // namespace ingot::tools
