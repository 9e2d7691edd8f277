#include <fmt/format.h>
#include <fmt/ostream.h>

#include "compiler/ir/error.h"
#include "compiler/passes/passes.h"

namespace ingot::passes {

void PassManager::add(std::string name, std::function<void(Graph&)> pass) {
  passes_.emplace_back(std::move(name), std::move(pass));
}

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> n;
  for (auto& [name, fn] : passes_) n.push_back(name);
  return n;
}

void PassManager::run(Graph& graph, const PassOptions& options, std::ostream& log) const {
  for (const std::string& want : options.dump_after) {
    bool known = want == "all" || want == "import";
    for (auto& [name, fn] : passes_) known |= name == want;
    if (!known) fail("--dump-after: unknown pass '{}' (passes: import, {}, all)", want, fmt::join(names(), ", "));
  }
  auto dump = [&](const std::string& name) {
    if (options.dump_after.count("all") || options.dump_after.count(name))
      fmt::print(log, "// ----- IR after {} -----\n{}", name, print_graph(graph));
  };
  dump("import");
  for (auto& [name, fn] : passes_) {
    auto start = std::chrono::steady_clock::now();
    fn(graph);
    verify_graph(graph);
    auto us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (options.time_passes) fmt::print(log, "pass {:<22} {:>10.1f} us\n", name, us);
    dump(name);
  }
}

PassManager default_pipeline(int64_t gemm_panel_width, bool winograd, bool fuse_blocks,
                             const ops::TargetTraits& target) {
  PassManager pm;
  pm.add("fold_constants", fold_constants);
  pm.add("canonicalize", canonicalize);
  pm.add("fold_batchnorm", fold_batchnorm);
  pm.add("decompose_batchnorm", decompose_batchnorm);
  pm.add("fold_constants_2", fold_constants);
  pm.add("fuse_patterns", fuse_patterns);
  pm.add("split_wide_ops", split_wide_ops);
  pm.add("split_directions", [target](Graph& g) { split_directions(g, target.workers); });
  pm.add("fuse_channel_scales", fuse_channel_scales);
  pm.add("split_sliced_projections", split_sliced_projections);
  if (winograd) pm.add("winograd_weights", [target](Graph& g) { winograd_weights(g, target); });
  pm.add("pack_weights", [gemm_panel_width, target](Graph& g) { pack_weights(g, gemm_panel_width, target); });
  pm.add("fuse_epilogues", fuse_epilogues);
  pm.add("absorb_transposes", absorb_transposes);
  // The fused block keeps its expanded tensor in cache band by band, but its band-sized
  // GEMMs run below the unfused 1x1 convolutions' rate. On one worker it pays only where
  // the expanded tensor is over twice the L2 (MobileNet-V2's 96 channels at 112x112,
  // 4.8 MB); up to that the unfused chain is faster (MobileNet-V2 0.93, MnasNet 0.95 of
  // the time with their 14x14-56x56 blocks fused, on Zen 4 with 1 MiB of L2).
  // On several workers the unfused chain also moves its expanded tensor between cores
  // (the expand splits by pixels, the depthwise by channels, the project by pixels
  // again: every worker reads lines the others wrote), while each worker's bands of a
  // fused block stay in its own cache; there a block pays from a quarter of the L2
  // (below that, kws_dscnn's 32 KB blocks ran 1.34x slower fused), where its weights
  // hold at most twice its expanded tensor's bytes (random networks' 4x4-16x16 blocks of
  // 1000-4000 channels, with 2.5-80x, ran 1.02-1.05x slower fused: every band reads all
  // the weights; MobileNet-V2's 14x14 blocks of 576 channels, 1.02x, ran 0.96 fused).
  // Paired, 2 workers on the 2-core Zen 5 (1 MiB L2), against the 2 * L2 rule:
  // mobilenet_v2 0.91-0.95, mnasnet1_0 0.91-0.95, mobilenet_v3_small 0.90-0.94 of the
  // time. A fused block gives the unfused chain's bits, so plans for any worker count agree.
  const bool several = target.workers > 1;
  const int64_t fuse_from = several ? target.l2_bytes / 4 : 2 * target.l2_bytes;
  const int64_t weight_limit = several ? 2 : 0;
  if (fuse_blocks)
    pm.add("fuse_inverted_residuals",
           [fuse_from, weight_limit](Graph& g) { fuse_inverted_residuals(g, fuse_from, weight_limit); });
  pm.add("choose_strategies", [target](Graph& g) { choose_strategies(g, target); });
  pm.add("eliminate_dead_code", eliminate_dead_code);
  return pm;
}

PassManager device_pipeline() {
  PassManager pm;
  pm.add("fold_constants", fold_constants);
  pm.add("canonicalize", canonicalize);
  pm.add("fold_batchnorm", fold_batchnorm);
  pm.add("decompose_batchnorm", decompose_batchnorm);
  pm.add("fold_constants_2", fold_constants);
  pm.add("fuse_patterns", fuse_patterns);
  pm.add("split_wide_ops", split_wide_ops);
  pm.add("fuse_epilogues", fuse_epilogues);
  pm.add("eliminate_dead_code", eliminate_dead_code);
  return pm;
}

}  // namespace ingot::passes
