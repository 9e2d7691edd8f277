#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace ingot {

// Every user-facing failure in the compiler is an Error with one clear line.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ingot
