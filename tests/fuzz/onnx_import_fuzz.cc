// ONNX model bytes through the compile front end up to the plan: import (from memory,
// so no file is written and external data is refused), the default pass pipeline for
// an AVX2 x86-64 target, and build_plan. No C is generated, nothing is compiled or
// written. ingot::Error is how a bad model is refused; anything else (a crash, a
// sanitizer report, another exception) is a finding.
#include <cstdint>
#include <sstream>
#include <string_view>

#include "compiler/import/onnx/import_onnx.h"
#include "compiler/ir/error.h"
#include "compiler/ops/gemm_lowering.h"
#include "compiler/passes/passes.h"
#include "compiler/schedule/plan.h"
#include "compiler/target/target.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ingot;
  static const target::Target target = target::resolve("x86_64-avx2");
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    std::unique_ptr<Graph> graph = import::import_onnx_bytes(bytes, "fuzz.onnx", import::ImportOptions{});
    const ops::TargetTraits traits{target.features, target.arch, target.l1d_bytes, target.l2_bytes,
                                   target.l3_bytes};
    passes::PassManager pipeline =
        passes::default_pipeline(ops::gemm_tile_for(target.features, target.arch).nr, /*winograd=*/true,
                                 /*fuse_blocks=*/false, traits);
    std::ostringstream log;
    pipeline.run(*graph, passes::PassOptions{}, log);
    const schedule::Plan plan = schedule::build_plan(*graph);
    (void)plan;
  } catch (const ingot::Error&) {
    // Refused with a message: what a bad model should get.
  }
  return 0;
}
