// ingot devices: the Vulkan devices this machine offers, with the limits a module is
// checked against when it loads (index = --device=N of run and bench).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/ir/error.h"
#include "tools/commands.h"
#include "tools/session.h"

namespace ingot::tools {

CommandFn add_devices_command(CLI::App& app) {
  app.add_subcommand("devices", "List the Vulkan devices and their limits");
  return [](Streams& streams) {
    bool found = false;
    const std::vector<std::string> lines = describe_vulkan_devices(found);
    if (!found) fail("{}", lines.empty() ? std::string("no Vulkan device") : lines.front());
    for (const std::string& line : lines) streams.out << line << "\n";
    return kExitOk;
  };
}

}  // namespace ingot::tools
