// Plan → one C translation unit: a function per distinct dispatch body, each with
// every shape as a literal so the C compiler specializes and vectorizes it.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/schedule/plan.h"
#include "compiler/target/target.h"

namespace ingot::codegen {

struct CSource {
  std::string code;                        // the translation unit: prelude + kernel_code + helpers
  // The same text in its parts, so the native build can compile groups of kernels as
  // translation units of their own, at the same time: the includes and defines every
  // part needs, one function per kernel, and the memcpy/memset the C compiler may call.
  std::string prelude;
  std::vector<std::string> kernel_code;
  std::string helpers;
  std::set<std::string> headers;           // kernel headers it includes
  std::vector<std::string> kernel_symbols; // ingot_kernel_<i>
  std::vector<std::string> kernel_names;   // f32_conv3x3_s1_... per kernel
  std::vector<int> step_kernel;            // per plan step: kernel index, -1 for COPY
  // Per plan step: the workgroups K its kernel splits into (ops::LoweringContext::
  // wg_count); the kernel computes any sub-range [wg_begin, wg_end) of [0, K). 1 for
  // COPY steps and dispatches that do not split.
  std::vector<int64_t> step_workgroups;
  // Per plan step: its first workgroup in the kernel's numbering (a phase of a phased
  // node starts where the one before it ends; 0 otherwise).
  std::vector<int64_t> step_wg_first;
  // Per plan step: what each of its workgroups costs relative to the others (ops::
  // LoweringContext::wg_weights); empty when they cost the same.
  std::vector<std::vector<double>> step_wg_weights;
};

CSource generate_c(const schedule::Plan& plan, const target::Target& target, uint32_t workers = 1);

}  // namespace ingot::codegen
