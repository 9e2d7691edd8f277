#include <iostream>

#include "tools/cli.h"

int main(int argc, char** argv) {
  return ingot::tools::ingot_main(argc, argv, std::cout, std::cerr);
}
