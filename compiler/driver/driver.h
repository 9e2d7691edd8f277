// The compile pipeline: the only room that knows every stage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ops/op_table.h"
#include "compiler/schedule/streams.h"
#include "compiler/target/target.h"

namespace ingot::driver {

struct InputShapeOverride {
  std::string name;
  std::vector<int64_t> dims;
};

struct CompileOptions {
  std::string input_path;               // model.onnx
  std::string output_path;              // model.ingot (module), NAME.c, NAME.a, NAME (exe)
  std::string target = "host";          // see target::known_targets()
  std::string output_format = "module"; // module | c | static-lib | exe
  std::string weights = "embed";        // embed | external
  int opt_level = 2;                    // 0, 2, or 's' (-Os) as 3
  bool strip = false;
  std::vector<std::string> dump_after;  // pass names or "all"
  bool time_passes = false;
  std::vector<InputShapeOverride> input_shapes;
  std::string cc;                       // C compiler for kernels; empty: the target's
  bool keep_temps = false;              // leave the generated C in a temp dir (debugging)
  // Compiled kernel objects are kept and reused here (codegen::NativeOptions::cache_dir);
  // empty: $INGOT_CACHE_DIR when set, else no cache.
  std::string cache_dir;
  // The most the cache may hold, as parse_cache_size reads it ("512M", "0": no limit);
  // empty: $INGOT_CACHE_MAX_SIZE when set, else 1 GiB.
  std::string cache_max_size;
  uint32_t workers = 1;                 // step lists (streams); the plan may use fewer
  uint64_t arena_guard = 0;             // bytes of canary gap after every arena buffer
  // Set by compile() when it recompiles for one worker: why (for --dump-after=streams).
  std::string workers_decision;
};

// Compiles |options.input_path| into |options.output_path|. Diagnostics (dumps, pass
// times) go to stdout; throws ingot::Error (compiler/ir/error.h) with a one-line
// message on any failure and leaves no output file behind.
//
// Output forms: `module` writes the .ingot file; `c` writes NAME.c and NAME.h;
// `static-lib` writes NAME.a (one object) and NAME.h; `exe` writes a statically linked
// executable NAME. With --weights=external every form writes the weights beside it
// (NAME.weights; MODULE.weights for a module) and records their size and CRC-32.
void compile(const CompileOptions& options);

// The cost model the stream partition reads for |t|: what one core sustains.
schedule::CostModel cost_model(const target::Target& t);

// What of |t| decides how nodes are computed, as the op table reads it.
ops::TargetTraits target_traits(const target::Target& t);

// How `ingot inspect --size` sizes a C artifact: compiles it with the compiler and
// flags of the target and -O level the file names, taken from ingot's own target table
// (|cc| replaces the compiler when not empty); no word of the file reaches the command
// line. Returns the object's bytes. Throws ingot::Error when the file names no known
// target or fails to build.
std::vector<uint8_t> build_c_artifact_object(const std::string& c_path, const std::string& cc);

}  // namespace ingot::driver
