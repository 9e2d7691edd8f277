// norm op family (see op_table.h for what an entry declares).
#include "compiler/ops/op_table.h"

namespace ingot::ops {

void register_norm_ops(std::map<std::string, OpDef>& table) { (void)table; }

}  // namespace ingot::ops
