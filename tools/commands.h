// The `ingot` subcommands. Each cmd_*.cc adds one subcommand to the CLI11 app and
// returns the function that runs it once the arguments are parsed.
#pragma once

#include <functional>
#include <ostream>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/driver/driver.h"

namespace ingot::tools {

// Exit status of every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitMismatch = 1;  // an output differs from the expected one
inline constexpr int kExitError = 2;     // anything else that went wrong

// Where a command writes its report; errors are thrown, not written.
struct Streams {
  std::ostream& out;
};

// Runs a parsed subcommand and returns its exit status; throws ingot::Error (or
// another std::exception) on failure.
using CommandFn = std::function<int(Streams&)>;

CommandFn add_compile_command(CLI::App& app);

// The arguments of `ingot compile` as given (strings and switches), before checking.
// The Python module's ingot.compile fills the same struct.
struct CompileArgs {
  std::string model;
  std::string output;
  std::string target = "host";
  std::string output_format = "module";
  std::string weights = "embed";
  std::string opt = "2";  // the value of -O: "0", "2" or "s"
  bool strip = false;
  std::vector<std::string> dump_after;
  bool time_passes = false;
  std::vector<std::string> input_shapes;  // "NAME:DIMS" each
  std::string cc;                         // empty: the target's C compiler
  bool keep_temps = false;
  std::string cache_dir;
  std::string cache_max_size;
  std::string workers = "1";              // the value of --workers: a count or "host"
  bool arena_guard = false;               // --arena-guard: a gap after every arena buffer
};

// Checks |args| and turns them into the driver's options: -O level, --input-shape
// values (each name once), --dump-after names not empty, -o and --cc not flag-like nor
// empty. Throws ingot::Error naming the flag.
driver::CompileOptions compile_options(const CompileArgs& args);
CommandFn add_run_command(CLI::App& app);
CommandFn add_bench_command(CLI::App& app);
CommandFn add_inspect_command(CLI::App& app);
CommandFn add_devices_command(CLI::App& app);

// "NAME:1x3x224x224" (the name may itself contain ':'; the last one separates).
// Throws ingot::Error naming |text| on a bad value.
driver::InputShapeOverride parse_input_shape(std::string_view text);

// CLI11 gives an option that lacks its value (an empty "--output=") the next word, even
// a flag. Values of path and tensor options never start with '-', so such a value is
// refused: throws ingot::Error naming |option|.
void reject_flag_like(std::string_view option, const std::string& value);

// The value of -O ("0", "2" or "s") as driver::CompileOptions::opt_level (0, 2, 3).
// Throws ingot::Error otherwise.
int parse_opt_level(std::string_view text);

// The value of --workers: a count from 1 to INGOT_MAX_WORKERS, or "host" (the cores
// this process may run on). Throws ingot::Error otherwise.
uint32_t parse_workers(std::string_view text);

}  // namespace ingot::tools
