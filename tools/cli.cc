#include "tools/cli.h"

#include <exception>
#include <map>
#include <new>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/driver/version.h"
#include "compiler/ir/error.h"
#include "tools/commands.h"

namespace ingot::tools {

std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "; ";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out;
}

void reject_flag_like(std::string_view option, const std::string& value) {
  if (!value.empty() && value.front() == '-') {
    fail("{}: value '{}' looks like a flag (an option left without its value takes the "
         "next word)",
         option, value);
  }
}

int ingot_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  try {
    CLI::App app{"ingot: an ahead-of-time compiler for ONNX models and the runtime for "
                 "its .ingot modules",
                 "ingot"};
    app.require_subcommand(1);
    app.set_version_flag("--version", driver::version_text(),
                         "Print the compiler version, the module ABI version and the build's flags");
    app.footer("Exit status: 0 success, 1 an output does not match --expected-output, "
               "2 any error.\nRun 'ingot COMMAND --help' for the flags of a command.");
    std::map<std::string, CommandFn> commands;
    commands["compile"] = add_compile_command(app);
    commands["run"] = add_run_command(app);
    commands["bench"] = add_bench_command(app);
    commands["inspect"] = add_inspect_command(app);
    commands["devices"] = add_devices_command(app);

    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) {  // --help
        app.exit(e, out, err);
        return kExitOk;
      }
      std::string help = "ingot --help";
      std::vector<CLI::App*> started = app.get_subcommands();
      if (started.size() == 1) help = "ingot " + started[0]->get_name() + " --help";
      err << "error: " << one_line(e.what()) << " (see '" << help << "')\n";
      return kExitError;
    }
    std::vector<CLI::App*> chosen = app.get_subcommands();
    if (chosen.size() != 1 || commands.count(chosen[0]->get_name()) == 0) {
      err << "error: expected one command: compile, run, bench or inspect\n";
      return kExitError;
    }
    Streams streams{out};
    int status = commands[chosen[0]->get_name()](streams);
    out.flush();
    return status;
  } catch (const Error& e) {
    err << "error: " << one_line(e.what()) << "\n";
  } catch (const std::bad_alloc&) {
    err << "error: out of memory\n";
  } catch (const std::exception& e) {
    err << "error: " << one_line(e.what()) << "\n";
  } catch (...) {
    err << "error: unexpected failure\n";
  }
  out.flush();
  return kExitError;
}

}  // namespace ingot::tools
