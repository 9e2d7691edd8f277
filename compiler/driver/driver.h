// The compile pipeline: the only room that knows every stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ingot::driver {

struct InputShapeOverride {
  std::string name;
  std::vector<int64_t> dims;
};

struct CompileOptions {
  std::string input_path;               // model.onnx
  std::string output_path;              // model.ingot
  std::string target = "host";          // host | x86_64-avx512 | x86_64-avx2 | x86_64 | generic
  std::string output_format = "module"; // module (others later)
  std::string weights = "embed";        // embed | external
  int opt_level = 2;                    // 0, 2, or 's' (-Os) as 3
  bool strip = false;
  std::vector<std::string> dump_after;  // pass names or "all"
  bool time_passes = false;
  std::vector<InputShapeOverride> input_shapes;
  std::string cc = "cc";                // C compiler for kernels
  bool keep_temps = false;              // leave the generated C in a temp dir (debugging)
};

// Compiles |options.input_path| into |options.output_path|. Diagnostics (dumps, pass
// times) go to stdout; throws ingot::Error (compiler/ir/error.h) with a one-line
// message on any failure and leaves no output file behind.
void compile(const CompileOptions& options);

}  // namespace ingot::driver
