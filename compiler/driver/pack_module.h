// Plan + generated code description → the module's contents (signature, steps,
// bindings, names, constants). Shared by the compile pipeline and the tests that run
// single kernels, so both pack modules exactly the same way.
#pragma once

#include "compiler/codegen/c/emit_c.h"
#include "compiler/emit/module_writer.h"
#include "compiler/ir/graph.h"
#include "compiler/schedule/plan.h"
#include "compiler/target/target.h"

namespace ingot::driver {

// Everything but the CODE bytes and kernel offsets, which depend on the output form.
// Constants are copied from |plan|.
emit::ModuleContents pack_module_contents(const Graph& graph, const schedule::Plan& plan,
                                          const codegen::CSource& source, const target::Target& target,
                                          const std::string& compiler_version);

}  // namespace ingot::driver
