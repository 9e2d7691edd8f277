// Packs a compiled model as C source: NAME.c holds the kernels, the plan tables, a
// plan walker and the weights (unless external); NAME.h is its API. The static-library
// and executable forms compile these (plus, for an executable, a generated main that
// reads and writes .npy files). docs/cli.md describes the API.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/emit/module_writer.h"

namespace ingot::emit {

struct SourceFile {
  std::string name;  // "f32_gemm.h"
  std::string text;
};

struct CArtifactInput {
  // Signature, plan (arena, steps, bindings), constants, kernel names and step labels,
  // strip, and external_weights_path (non-empty: the weights live in that file, which
  // the artifact records by size and CRC-32). code and kernel_offsets are unused.
  const ModuleContents* module = nullptr;
  std::string prefix;      // C identifier prefix of every symbol: "digits_mlp"
  std::string file_stem;   // NAME of NAME.c / NAME.h
  std::string model_name;  // the source model, for comments
  std::string target_name;
  uint32_t target_features = 0;  // INGOT_FEATURE_* the kernels were generated for
  std::string cc;                // how ingot builds the C (recorded in NAME.c)
  std::vector<std::string> cflags;
  std::string kernels_c;                    // codegen's translation unit (generate_c)
  std::vector<std::string> kernel_symbols;  // its kernel functions, by kernel index
  std::vector<SourceFile> headers;          // every header it may include, by name
  uint64_t arena_lower_bound = 0;           // for the header comment
  uint64_t arena_no_reuse = 0;
};

struct CArtifact {
  std::string source;  // NAME.c
  std::string header;  // NAME.h
};

// NAME.c and NAME.h. Throws ingot::Error when the kernels' C is not in the expected
// form.
CArtifact generate_c_artifact(const CArtifactInput& input);

// NAME_main.c: `NAME INPUT.npy... [OUTPUT.npy...] [--weights=FILE]`.
std::string generate_exe_main(const CArtifactInput& input);

// A C identifier from a file name's stem: "digits-mlp.v2.c" -> "digits_mlp_v2".
std::string c_identifier_for(const std::string& path);

}  // namespace ingot::emit
