// ingot inspect ARTIFACT [--plan] [--memory] [--size] [--json]: what a module holds,
// read back through the runtime's validating loader; for the other output forms (C
// source, static library, executable, firmware) where their bytes go.
#include <cstring>
#include <fstream>
#include <sstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/driver/driver.h"
#include "compiler/ir/error.h"
#include "tools/artifact_size.h"
#include "compiler/emit/output_files.h"
#include "tools/commands.h"
#include "tools/timeline.h"
#include "tools/module_view.h"
#include "tools/tensor_io.h"

namespace ingot::tools {
namespace {

using json = nlohmann::ordered_json;

constexpr int kBarWidth = 40;

struct InspectArgs {
  std::string module;
  bool plan = false;
  bool memory = false;
  bool size = false;
  bool json = false;
  std::string cc;  // C artifacts: replaces the target's C compiler
  std::string timeline;  // write the predicted per-worker schedule here (SVG)
};

// Everything inspect reports, gathered once from the loaded module.
struct ExternalWeights {
  std::string path;
  uint64_t size = 0;
  uint32_t crc32 = 0;
};

struct View {
  const ModuleFile& file;
  const ingot_module_t& module;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  std::vector<ingot_section_entry_t> sections;
  ModuleNames names;
  std::vector<ArenaRegion> regions;
  std::optional<ExternalWeights> external;
  std::vector<ingot_step_work_t> work;  // empty when stripped
};

std::optional<ExternalWeights> read_external_weights(const ingot_module_t& module) {
  if (module.external_weights == nullptr) return std::nullopt;
  ExternalWeights weights;
  weights.size = module.external_weights->size;
  weights.crc32 = module.external_weights->crc32;
  if (module.external_weights_path != nullptr) {
    weights.path.assign(module.external_weights_path, module.external_weights_path_length);
  }
  return weights;
}

std::string bar(uint64_t offset, uint64_t size, uint64_t total) {
  std::string out(kBarWidth, '.');
  if (total == 0 || size == 0) return out;
  auto scale = [&](uint64_t x) {
    return static_cast<int>(static_cast<unsigned __int128>(x) * kBarWidth / total);
  };
  int begin = std::min(scale(offset), kBarWidth - 1);
  // Round the end up so every region shows at least one mark.
  const auto end_exact = static_cast<unsigned __int128>(offset + size) * kBarWidth;
  int end = static_cast<int>((end_exact + total - 1) / total);
  end = std::clamp(end, begin + 1, kBarWidth);
  for (int i = begin; i < end; ++i) out[static_cast<size_t>(i)] = '#';
  return out;
}

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "-";
  return fmt::format("{:.1f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

// ---- JSON -------------------------------------------------------------------------

// Names in a module are bytes from a model, not necessarily UTF-8; invalid sequences
// print as U+FFFD instead of failing the report.
std::string dump_json(const json& report) { return report.dump(2, ' ', false, json::error_handler_t::replace); }

json tensor_json(const TensorInfo& info) {
  return {{"name", info.name}, {"dtype", dtype_name(info.dtype)}, {"shape", info.dims},
          {"bytes", info.byte_size}};
}

json signature_json(const View& view) {
  json inputs = json::array();
  json outputs = json::array();
  for (const TensorInfo& info : view.inputs) inputs.push_back(tensor_json(info));
  for (const TensorInfo& info : view.outputs) outputs.push_back(tensor_json(info));
  return {{"inputs", inputs}, {"outputs", outputs}};
}

json size_json(const View& view) {
  const ingot_module_header_t& h = *view.module.header;
  json header = {
      {"format_version", h.format_version},
      {"abi_version", h.abi_version},
      {"arch", arch_name(h.arch)},
      {"features", feature_names(h.features)},
      {"flags", flag_names(h.flags)},
      {"compiler_version",
       std::string(h.compiler_version, strnlen(h.compiler_version, sizeof(h.compiler_version)))},
  };
  json sections = json::array();
  for (const ingot_section_entry_t& s : view.sections) {
    sections.push_back({{"kind", section_kind_name(s.kind)},
                        {"offset", s.offset},
                        {"size", s.size},
                        {"crc32", fmt::format("{:08x}", s.crc32)}});
  }
  return {{"header", header}, {"sections", sections}};
}

json plan_json(const View& view) {
  const ingot_plan_header_t& plan = *view.module.plan;
  json kernels = json::array();
  for (uint32_t k = 0; k < plan.kernel_count; ++k) kernels.push_back(kernel_label(view.names, k));
  json steps = json::array();
  for (uint32_t s = 0; s < plan.step_count; ++s) {
    const ingot_step_t& step = view.module.steps[s];
    json bindings = json::array();
    for (uint32_t b = 0; b < step.binding_count; ++b) {
      const ingot_binding_t& binding = view.module.bindings[step.binding_first + b];
      bindings.push_back({{"base", base_name(binding)},
                          {"index", binding.index},
                          {"offset", binding.offset},
                          {"size", binding.size}});
    }
    json entry = {{"index", s}, {"kind", step_kind_name(step.kind)}, {"bindings", bindings}};
    if (step.kind == INGOT_STEP_DISPATCH) {
      entry["kernel"] = step.kernel;
      entry["kernel_name"] = kernel_label(view.names, step.kernel);
      entry["workgroups"] = {step.wg_begin, step.wg_end};
    } else if (step.kind == INGOT_STEP_COPY) {
      entry["bytes"] = step.wg_end;
    } else if (step.kind == INGOT_STEP_WAIT) {
      entry["on_worker"] = step.kernel;
      entry["signal"] = step.wg_end;
    }
    if (!view.work.empty()) {
      entry["flops"] = view.work[s].flops;
      entry["moved_bytes"] = view.work[s].bytes;
      if (step.kind == INGOT_STEP_DISPATCH || step.kind == INGOT_STEP_COPY) {
        entry["predicted_start_us"] = view.work[s].start_us;
        entry["predicted_finish_us"] = view.work[s].finish_us;
      }
    }
    if (!view.names.steps[s].empty()) entry["label"] = view.names.steps[s];
    steps.push_back(std::move(entry));
  }
  json workers = json::array();
  for (uint32_t w = 0; w < plan.worker_count; ++w) {
    const ingot_worker_t& wk = view.module.workers[w];
    workers.push_back({{"step_first", wk.step_first}, {"step_count", wk.step_count}, {"signal_count", wk.signal_count}});
  }
  return {{"worker_count", plan.worker_count}, {"sync_count", plan.sync_count},
          {"kernel_count", plan.kernel_count}, {"step_count", plan.step_count},
          {"binding_count", plan.binding_count}, {"workers", workers},
          {"kernels", kernels},                {"steps", steps}};
}

json memory_json(const View& view) {
  json regions = json::array();
  for (const ArenaRegion& r : view.regions) {
    regions.push_back({{"offset", r.offset},
                       {"size", r.size},
                       {"first_step", r.first_step},
                       {"last_step", r.last_step},
                       {"steps", r.step_count}});
  }
  json constants = {{"bytes", view.module.constants_size}};
  if (view.external) {
    constants = {{"external", view.external->path},
                 {"bytes", view.external->size},
                 {"crc32", fmt::format("{:08x}", view.external->crc32)}};
  }
  return {{"arena_bytes", view.module.plan->arena_bytes},
          {"arena_alignment", view.module.plan->arena_alignment},
          {"regions", regions},
          {"constants", constants}};
}

json parts_json(const SizeBreakdown& b) {
  json parts = json::object();
  for (size_t i = 0; i < kSizePartCount; ++i) {
    const auto part = static_cast<SizePart>(i);
    parts[size_part_key(part)] = b.part(part);
  }
  json out = {{"form", b.form}, {"parts", parts}, {"total", b.total}, {"parts_known", b.parts_known},
              {"ingot_without_weights", b.ingot_without_weights()}};
  if (b.form != "module") {
    out["text"] = b.text;
    out["data"] = b.data;
    out["bss"] = b.bss;
    out["ingot_ram"] = b.ingot_ram;
    out["models"] = b.models;
  }
  out["notes"] = b.notes;
  return out;
}

void print_parts(const SizeBreakdown& b, std::ostream& out) {
  out << fmt::format("parts ({}):\n", b.form);
  if (!b.parts_known) {
    out << "  no symbol table (stripped): parts unknown\n";
  } else {
    out << fmt::format("  {:<26} {:>10} {:>7}\n", "part", "bytes", "share");
    for (size_t i = 0; i < kSizePartCount; ++i) {
      const auto part = static_cast<SizePart>(i);
      out << fmt::format("  {:<26} {:>10} {:>7}\n", size_part_name(part), b.part(part), percent(b.part(part), b.total));
    }
  }
  out << fmt::format("  {:<26} {:>10}\n", "total", b.total);
  if (b.parts_known) {
    out << fmt::format("  ingot without weights: {} bytes\n", b.ingot_without_weights());
  }
  if (b.form != "module") {
    out << fmt::format("  image: text {} + data {} bytes, bss {} bytes; ingot's RAM (data + bss): {} bytes\n", b.text,
                       b.data, b.bss, b.ingot_ram);
    if (!b.models.empty()) {
      std::string models;
      for (const std::string& m : b.models) models += (models.empty() ? "" : ", ") + m;
      out << fmt::format("  models: {}\n", models);
    }
  }
  for (const std::string& note : b.notes) out << "  (" << note << ")\n";
}

// ---- text -------------------------------------------------------------------------

void print_signature(const View& view, std::ostream& out) {
  out << fmt::format("module: {} ({} bytes)\n", view.file.path(), view.file.size());
  out << "signature:\n";
  for (size_t i = 0; i < view.inputs.size(); ++i) {
    out << fmt::format("  input {} '{}': {} ({} bytes)\n", i, view.inputs[i].name,
                       view.inputs[i].type(), view.inputs[i].byte_size);
  }
  for (size_t i = 0; i < view.outputs.size(); ++i) {
    out << fmt::format("  output {} '{}': {} ({} bytes)\n", i, view.outputs[i].name,
                       view.outputs[i].type(), view.outputs[i].byte_size);
  }
}

void print_size(const View& view, std::ostream& out) {
  const ingot_module_header_t& h = *view.module.header;
  out << "\nheader:\n";
  out << fmt::format("  format version {}, ABI version {}\n", h.format_version, h.abi_version);
  out << fmt::format("  target: {} (features: {})\n", arch_name(h.arch), feature_names(h.features));
  out << fmt::format("  compiler: {}\n",
                     std::string_view(h.compiler_version,
                                      strnlen(h.compiler_version, sizeof(h.compiler_version))));
  out << fmt::format("  flags: {}\n", flag_names(h.flags));
  out << "sections:\n";
  out << fmt::format("  {:<10} {:>10} {:>10}  {:<8} {:>7}\n", "kind", "offset", "size", "crc32",
                     "of file");
  uint64_t in_sections = 0;
  for (const ingot_section_entry_t& s : view.sections) {
    in_sections += s.size;
    out << fmt::format("  {:<10} {:>10} {:>10}  {:08x} {:>7}\n", section_kind_name(s.kind),
                       s.offset, s.size, s.crc32, percent(s.size, view.file.size()));
  }
  const uint64_t other = view.file.size() >= in_sections ? view.file.size() - in_sections : 0;
  out << fmt::format("  {:<10} {:>10} {:>10}  {:<8} {:>7}\n", "(other)", "", other, "",
                     percent(other, view.file.size()));
  out << "  (other: header, section table and alignment padding)\n";
}

void print_plan(const View& view, std::ostream& out) {
  const ingot_plan_header_t& plan = *view.module.plan;
  out << fmt::format("\nplan: {} steps, {} kernels, {} bindings, {} worker{}, {} sync point{}\n", plan.step_count,
                     plan.kernel_count, plan.binding_count, plan.worker_count,
                     plan.worker_count == 1 ? "" : "s", plan.sync_count, plan.sync_count == 1 ? "" : "s");
  size_t kernel_width = 6;
  for (uint32_t k = 0; k < plan.kernel_count; ++k) {
    kernel_width = std::max(kernel_width, kernel_label(view.names, k).size());
  }
  // Per-step work (WORK section): FLOP and bytes moved, with SI prefixes.
  const bool work = !view.work.empty();
  if (work) {
    uint64_t flops = 0, bytes = 0;
    for (const ingot_step_work_t& w : view.work) {
      flops += w.flops;
      bytes += w.bytes;
    }
    out << fmt::format("  work: {} FLOP, {}B moved\n", format_si(static_cast<double>(flops)),
                       format_si(static_cast<double>(bytes)));
  }
  const std::string work_header = work ? fmt::format("  {:>6}  {:>6}", "FLOP", "moved") : "";
  out << fmt::format("  {:>4}  {:<8}  {:<{}}  {:<12}{}  {}\n", "step", "kind", "kernel", kernel_width,
                     "workgroups", work_header, "bindings (base+offset:size)");
  for (uint32_t s = 0; s < plan.step_count; ++s) {
    const ingot_step_t& step = view.module.steps[s];
    for (uint32_t w = 0; w < plan.worker_count && plan.worker_count > 1; ++w) {
      const ingot_worker_t& wk = view.module.workers[w];
      if (wk.step_first == s) {
        out << fmt::format("  worker {}: steps {}..{}, {} signal{}\n", w, wk.step_first, wk.step_first + wk.step_count,
                           wk.signal_count, wk.signal_count == 1 ? "" : "s");
      }
    }
    std::string kernel = "-";
    std::string range = "-";
    if (step.kind == INGOT_STEP_DISPATCH) {
      kernel = kernel_label(view.names, step.kernel);
      range = fmt::format("[{}, {})", step.wg_begin, step.wg_end);
    } else if (step.kind == INGOT_STEP_COPY) {
      range = fmt::format("{} bytes", step.wg_end);
    } else if (step.kind == INGOT_STEP_WAIT) {
      kernel = fmt::format("worker {} signal {}", step.kernel, step.wg_end);
    }
    std::string bindings;
    for (uint32_t b = 0; b < step.binding_count; ++b) {
      if (b != 0) bindings += ' ';
      bindings += format_binding(view.module.bindings[step.binding_first + b]);
    }
    const std::string work_cells =
        work ? fmt::format("  {:>6}  {:>6}", format_si(static_cast<double>(view.work[s].flops)),
                           format_si(static_cast<double>(view.work[s].bytes)) + "B")
             : "";
    std::string line = fmt::format("  {:>4}  {:<8}  {:<{}}  {:<12}{}  {}", s, step_kind_name(step.kind),
                                   kernel, kernel_width, range, work_cells, bindings);
    if (!view.names.steps[s].empty()) line += "  # " + view.names.steps[s];
    out << line << "\n";
  }
}

void print_memory(const View& view, std::ostream& out) {
  const uint64_t arena = view.module.plan->arena_bytes;
  out << fmt::format("\nmemory:\n  arena: {} bytes ({}-byte aligned), {} region{}\n", arena,
                     view.module.plan->arena_alignment, view.regions.size(),
                     view.regions.size() == 1 ? "" : "s");
  if (!view.regions.empty()) {
    uint64_t total = 0;
    for (const ArenaRegion& r : view.regions) total += r.size;
    out << fmt::format("  regions total {} bytes; reuse saves {}\n", total,
                       total > arena ? percent(total - arena, total) : std::string("0%"));
    out << fmt::format("  {:>10} {:>10}  {:<12}  |{:<{}}|\n", "offset", "size", "steps",
                       "0 .. arena", kBarWidth);
    for (const ArenaRegion& r : view.regions) {
      out << fmt::format("  {:>10} {:>10}  {:<12}  |{}|\n", r.offset, r.size,
                         fmt::format("{}..{}", r.first_step, r.last_step),
                         bar(r.offset, r.size, arena));
    }
  }
  for (size_t i = 0; i < view.inputs.size(); ++i) {
    out << fmt::format("  input {} '{}': {} bytes (caller memory)\n", i, view.inputs[i].name,
                       view.inputs[i].byte_size);
  }
  for (size_t i = 0; i < view.outputs.size(); ++i) {
    out << fmt::format("  output {} '{}': {} bytes (caller memory)\n", i, view.outputs[i].name,
                       view.outputs[i].byte_size);
  }
  if (view.external) {
    out << fmt::format("  constants: {} bytes in external file '{}' (crc32 {:08x})\n",
                       view.external->size, view.external->path, view.external->crc32);
  } else {
    out << fmt::format("  constants: {} bytes (embedded)\n", view.module.constants_size);
  }
}

// "#define NAME_ARENA_SIZE 384u" in the NAME.h beside a C artifact or library.
std::optional<uint64_t> arena_from_header(const std::string& artifact) {
  std::string header = artifact;
  const size_t dot = header.rfind('.');
  const size_t slash = header.rfind('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return std::nullopt;
  header = header.substr(0, dot) + ".h";
  std::ifstream in(header);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string define, name, value;
    if (!(words >> define >> name >> value) || define != "#define" || name.size() < 11 ||
        name.compare(name.size() - 11, 11, "_ARENA_SIZE") != 0)
      continue;
    try {
      return std::stoull(value);
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Anything that is not a module: only its size can be shown.
int inspect_other(const InspectArgs& args, const std::vector<uint8_t>& bytes, Streams& streams) {
  if (args.plan || args.memory) {
    fail("'{}': --plan and --memory read a .ingot module; other artifacts show --size only", args.module);
  }
  SizeBreakdown b;
  std::string what;
  if (is_elf_or_archive(bytes)) {
    b = elf_size_breakdown(bytes);
    what = b.form;
  } else if (args.module.size() > 2 && args.module.compare(args.module.size() - 2, 2, ".c") == 0) {
    b = elf_size_breakdown(driver::build_c_artifact_object(args.module, args.cc));
    b.form = "C source, compiled";
    what = "C source (sized as the object its target's flags compile)";
  } else {
    fail("'{}' is not a C artifact, object, static library or executable", args.module);
  }
  std::optional<uint64_t> arena = arena_from_header(args.module);
  if (arena) b.notes.push_back(fmt::format("arena: {} bytes, the caller's memory", *arena));
  if (args.json) {
    json report = {{"file", args.module}, {"file_size", bytes.size()}, {"size", parts_json(b)}};
    if (arena) report["arena_bytes"] = *arena;
    streams.out << dump_json(report) << "\n";
    return kExitOk;
  }
  streams.out << fmt::format("{}: {} ({} bytes)\n", what, args.module, bytes.size());
  print_parts(b, streams.out);
  return kExitOk;
}

// Vulkan modules: what one invoke submits to the device, counted from the plan (the
// command buffer the HAL records holds exactly these commands).
struct DeviceSummary {
  uint32_t dispatches = 0, barriers = 0, copies = 0;
};

DeviceSummary device_summary(const ingot_module_t& m) {
  DeviceSummary d;
  for (uint32_t s = 0; s < m.plan->step_count; ++s) {
    const uint16_t kind = m.steps[s].kind;
    d.dispatches += kind == INGOT_STEP_DISPATCH;
    d.barriers += kind == INGOT_STEP_BARRIER;
    d.copies += kind == INGOT_STEP_COPY && m.steps[s].wg_end > 0;
  }
  return d;
}

json device_json(const ingot_module_t& m) {
  const DeviceSummary d = device_summary(m);
  json needs = json::array();
  if (m.spirv->device_features & INGOT_DEVICE_FEATURE_SUBGROUP_ARITHMETIC) needs.push_back("subgroup_arithmetic");
  return {{"api", "vulkan"},
          {"submits_per_invoke", m.spirv->submits_per_invoke},
          {"dispatches", d.dispatches},
          {"barriers", d.barriers},
          {"copies", d.copies},
          {"pipelines", m.spirv->kernel_count},
          {"needs", needs},
          {"max_workgroup_size", m.spirv->max_workgroup_size},
          {"max_shared_bytes", m.spirv->max_shared_bytes}};
}

void print_device(const ingot_module_t& m, std::ostream& out) {
  const DeviceSummary d = device_summary(m);
  out << fmt::format("\ndevice: Vulkan, {} submit per invoke: {} dispatches, {} barriers, {} copies; {} pipelines\n",
                     m.spirv->submits_per_invoke, d.dispatches, d.barriers, d.copies, m.spirv->kernel_count);
  out << fmt::format("  needs: {}; workgroups up to {} invocations, {} bytes of shared memory\n",
                     (m.spirv->device_features & INGOT_DEVICE_FEATURE_SUBGROUP_ARITHMETIC) ? "subgroup arithmetic"
                                                                                             : "Vulkan 1.1 core only",
                     m.spirv->max_workgroup_size, m.spirv->max_shared_bytes);
}

int run_inspect(const InspectArgs& args, Streams& streams) {
  {
    // Objects, libraries, executables and C artifacts are sized; anything else goes to
    // the module loader, which says what is wrong with it.
    const std::vector<uint8_t> bytes = read_file(args.module);
    static const char kMagic[8] = INGOT_MODULE_MAGIC;
    const bool module_magic = bytes.size() >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0;
    const bool c_source = args.module.size() > 2 && args.module.compare(args.module.size() - 2, 2, ".c") == 0;
    if (!module_magic && (is_elf_or_archive(bytes) || c_source)) return inspect_other(args, bytes, streams);
  }
  ModuleFile file(args.module);
  const ingot_module_t& module = file.module();
  View view{file, module, module_inputs(module), module_outputs(module),
            section_table(module, file.data(), file.size()),
            parse_names(module.names, module.names_size, module.plan->kernel_count,
                        module.plan->step_count),
            arena_regions(module.steps, module.plan->step_count, module.bindings,
                          module.plan->binding_count),
            std::nullopt,
            step_work(module)};
  view.external = read_external_weights(module);
  const SizeBreakdown parts = module_size_breakdown(module, file.size());

  if (!args.timeline.empty()) {
    const std::vector<TimelineSlice> slices = predict_timeline(module, view.work);
    const std::string title =
        fmt::format("{}: {} worker{}, {} sync point{} (predicted by the cost model{})", args.module,
                    module.plan->worker_count, module.plan->worker_count == 1 ? "" : "s", module.plan->sync_count,
                    module.plan->sync_count == 1 ? "" : "s", view.work.empty() ? "; stripped: no work, no times" : "");
    const std::string svg = timeline_svg(module, slices, view.names.steps, title);
    emit::write_file_atomically(args.timeline,
                                std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(svg.data()), svg.size()));
  }
  const bool all = !args.plan && !args.memory && !args.size;
  if (args.json) {
    json report = {{"module", args.module}, {"file_size", file.size()},
                   {"signature", signature_json(view)}};
    if (all || args.size) {
      report["size"] = size_json(view);
      report["size"]["parts"] = parts_json(parts)["parts"];
      report["size"]["ingot_without_weights"] = parts.ingot_without_weights();
    }
    if (all || args.plan) report["plan"] = plan_json(view);
    if ((all || args.plan) && module.spirv) report["device"] = device_json(module);
    if (all || args.memory) report["memory"] = memory_json(view);
    streams.out << dump_json(report) << "\n";
    return kExitOk;
  }
  print_signature(view, streams.out);
  if (all || args.size) {
    print_size(view, streams.out);
    print_parts(parts, streams.out);
  }
  if ((all || args.plan) && module.spirv) print_device(module, streams.out);
  if (all || args.plan) print_plan(view, streams.out);
  if (all || args.memory) print_memory(view, streams.out);
  return kExitOk;
}

}  // namespace

CommandFn add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Show what a module holds (all of --size, --plan, --memory when none is given); for a C artifact, "
      "static library, executable or firmware, where its bytes go (--size)");
  cmd->add_option("MODULE", args->module, "Module (.ingot), C artifact (.c), object, library (.a) or executable")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_flag("--plan", args->plan, "One line per plan step: kind, kernel, workgroups, bindings");
  cmd->add_flag("--memory", args->memory, "Arena size and the arena regions each step touches");
  cmd->add_flag("--size", args->size,
                "Bytes by part (entry, plan, kernels, helpers, metadata, weights); for a module also the "
                "header and sections with offsets, sizes and CRCs");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  cmd->add_option("--timeline", args->timeline,
                  "Also write the static schedule as an SVG Gantt chart, a row per worker, step times from the "
                  "compiler's cost model")
      ->type_name("PATH.svg");
  cmd->add_option("--cc", args->cc, "C artifacts: the C compiler to size them with (default: the one they name)")
      ->type_name("PATH");
  return [args](Streams& streams) { return run_inspect(*args, streams); };
}

}  // namespace ingot::tools
