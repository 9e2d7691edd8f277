#include "tools/tensor_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/ir/error.h"

namespace ingot::tools {
namespace {

namespace fs = std::filesystem;

template <typename T>
Tensor make_tensor(ingot_dtype_t dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  std::vector<T> out(t.bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
  return out;
}

// The error message of |fn|, or "" when it does not throw ingot::Error.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<uint8_t> npy_bytes(const std::string& header, size_t data_bytes, int major = 1) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  const size_t len = header.size();
  out.push_back(static_cast<uint8_t>(len));
  out.push_back(static_cast<uint8_t>(len >> 8));
  if (major >= 2) {
    out.push_back(static_cast<uint8_t>(len >> 16));
    out.push_back(static_cast<uint8_t>(len >> 24));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data_bytes, 0);
  return out;
}

std::string decode_error(const std::vector<uint8_t>& bytes) {
  return error_of([&] { decode_npy(bytes.data(), bytes.size(), "t.npy"); });
}

class ToolsTensorIoFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ingot_tensor_io_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  size_t file_count() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}));
  }
  fs::path dir_;
};

// ---- types and shapes ------------------------------------------------------------

TEST(ToolsTensorIo, DtypeNamesRoundTrip) {
  for (ingot_dtype_t d : {INGOT_DTYPE_F32, INGOT_DTYPE_I64, INGOT_DTYPE_I32, INGOT_DTYPE_BOOL,
                          INGOT_DTYPE_U8, INGOT_DTYPE_I8}) {
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
  }
  EXPECT_EQ(parse_dtype("i1"), INGOT_DTYPE_BOOL);
  EXPECT_EQ(parse_dtype("f64"), std::nullopt);
  EXPECT_EQ(parse_dtype("F32"), std::nullopt);
  EXPECT_EQ(dtype_size(INGOT_DTYPE_I64), 8u);
  EXPECT_EQ(dtype_size(static_cast<ingot_dtype_t>(99)), 0u);
  EXPECT_EQ(dtype_name(static_cast<ingot_dtype_t>(99)), "dtype#99");
}

TEST(ToolsTensorIo, FormatType) {
  EXPECT_EQ(format_type({1, 64}, INGOT_DTYPE_F32), "1x64xf32");
  EXPECT_EQ(format_type({}, INGOT_DTYPE_I64), "i64");
  EXPECT_EQ(format_type({0, 3}, INGOT_DTYPE_BOOL), "0x3xbool");
}

TEST(ToolsTensorIo, ParseDims) {
  EXPECT_EQ(parse_dims("1x3x224x224"), (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_EQ(parse_dims("7"), (std::vector<int64_t>{7}));
  EXPECT_EQ(parse_dims("0x5"), (std::vector<int64_t>{0, 5}));
  EXPECT_NE(error_of([] { parse_dims(""); }).find("empty shape"), std::string::npos);
  EXPECT_NE(error_of([] { parse_dims("1xx2"); }).find("empty dimension"), std::string::npos);
  EXPECT_NE(error_of([] { parse_dims("1x-2"); }).find("dimension '-2'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_dims("1x2a"); }).find("dimension '2a'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_dims("1x99999999999999999999"); }).find("too large"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_dims("1x1x1x1x1x1x1x1x1"); }).find("more than 8"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_dims("4294967296x4294967296x4294967296"); }).find("too many"),
            std::string::npos);
}

TEST(ToolsTensorIo, ParseType) {
  TypeSpec spec = parse_type("2x3xi32");
  EXPECT_EQ(spec.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(spec.dtype, INGOT_DTYPE_I32);
  spec = parse_type("bool");
  EXPECT_TRUE(spec.dims.empty());
  EXPECT_EQ(spec.dtype, INGOT_DTYPE_BOOL);
  EXPECT_NE(error_of([] { parse_type("1x4"); }).find("dtype '4' is not one of"), std::string::npos);
  EXPECT_NE(error_of([] { parse_type("1x4xf64"); }).find("dtype 'f64'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_type(""); }).find("expected DIMSxDTYPE"), std::string::npos);
}

// ---- inline tensors -----------------------------------------------------------------

TEST(ToolsTensorIo, InlineTensor) {
  Tensor t = parse_inline_tensor("1x4xf32=1,2.5,-3e2,4");
  EXPECT_EQ(t.dtype, INGOT_DTYPE_F32);
  EXPECT_EQ(t.dims, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(values_of<float>(t), (std::vector<float>{1, 2.5f, -300, 4}));

  t = parse_inline_tensor("f32=3");
  EXPECT_TRUE(t.dims.empty());
  EXPECT_EQ(values_of<float>(t), (std::vector<float>{3}));

  t = parse_inline_tensor("2x2xi64= 9223372036854775807 , -9223372036854775808, +1,0");
  EXPECT_EQ(values_of<int64_t>(t), (std::vector<int64_t>{std::numeric_limits<int64_t>::max(),
                                                         std::numeric_limits<int64_t>::min(), 1, 0}));
  t = parse_inline_tensor("3xi32=-2147483648,0,2147483647");
  EXPECT_EQ(values_of<int32_t>(t), (std::vector<int32_t>{INT32_MIN, 0, INT32_MAX}));
  t = parse_inline_tensor("2xu8=0,255");
  EXPECT_EQ(values_of<uint8_t>(t), (std::vector<uint8_t>{0, 255}));
  t = parse_inline_tensor("2xi8=-128,127");
  EXPECT_EQ(values_of<int8_t>(t), (std::vector<int8_t>{-128, 127}));
  t = parse_inline_tensor("4xbool=1,0,true,FALSE");
  EXPECT_EQ(values_of<uint8_t>(t), (std::vector<uint8_t>{1, 0, 1, 0}));
  t = parse_inline_tensor("2xi1=1,0");
  EXPECT_EQ(t.dtype, INGOT_DTYPE_BOOL);
}

TEST(ToolsTensorIo, InlineSpecialFloats) {
  Tensor t = parse_inline_tensor("4xf32=nan,inf,-inf,-0");
  std::vector<float> v = values_of<float>(t);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[2], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(v[3]));
}

TEST(ToolsTensorIo, InlineSplatAndEmpty) {
  Tensor t = parse_inline_tensor("2x3xf32=7");
  EXPECT_EQ(values_of<float>(t), std::vector<float>(6, 7.0f));
  t = parse_inline_tensor("0x3xi64=");
  EXPECT_EQ(t.element_count(), 0u);
  EXPECT_TRUE(t.bytes.empty());
}

TEST(ToolsTensorIo, InlineErrors) {
  EXPECT_NE(error_of([] { parse_inline_tensor("1x4xf32=1,2,3"); })
                .find("1x4xf32 needs 4 values, got 3"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("1x4xf32"); }).find("expected @FILE.npy or TYPE=VALUES"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("2xf32=1,x"); }).find("value 'x' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("2xf32=1,"); }).find("empty value"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("f32=1e39"); }).find("out of range for f32"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("u8=256"); }).find("out of range for u8 (0..255)"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("i8=-129"); }).find("out of range for i8"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("i32=2147483648"); }).find("out of range for i32"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("i64=9223372036854775808"); }).find("out of range"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("i32=1.5"); }).find("not an integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("bool=2"); }).find("not a bool"), std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("1x2xf16=1,2"); }).find("dtype 'f16'"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_inline_tensor("f32="); }).find("needs 1 value, got 0"),
            std::string::npos);
}

TEST(ToolsTensorIo, TensorArg) {
  EXPECT_EQ(parse_tensor_arg("2xi32=4,5").element_count(), 2u);
  EXPECT_NE(error_of([] { parse_tensor_arg("@"); }).find("'@' must be followed"), std::string::npos);
  EXPECT_NE(error_of([] { parse_tensor_arg("@/nonexistent/x.npy"); })
                .find("cannot open '/nonexistent/x.npy'"),
            std::string::npos);
}

// ---- .npy ---------------------------------------------------------------------------

TEST(ToolsTensorIo, NpyRoundTripEveryDtypeAndRank) {
  std::vector<Tensor> tensors = {
      make_tensor<float>(INGOT_DTYPE_F32, {2, 3}, {1, -2, 3.5f, NAN, INFINITY, 0}),
      make_tensor<int64_t>(INGOT_DTYPE_I64, {3}, {INT64_MIN, 0, INT64_MAX}),
      make_tensor<int32_t>(INGOT_DTYPE_I32, {}, {-7}),
      make_tensor<uint8_t>(INGOT_DTYPE_BOOL, {2, 1, 2}, {1, 0, 0, 1}),
      make_tensor<uint8_t>(INGOT_DTYPE_U8, {1, 1, 1, 1, 1, 1, 1, 1}, {200}),
      make_tensor<int8_t>(INGOT_DTYPE_I8, {0, 4}, {}),
  };
  for (const Tensor& t : tensors) {
    std::vector<uint8_t> bytes = encode_npy(t);
    ASSERT_GE(bytes.size(), 10u);
    const size_t data_start = bytes.size() - t.bytes.size();
    EXPECT_EQ(data_start % 64, 0u) << "data must start 64-byte aligned";
    EXPECT_EQ(bytes[data_start - 1], '\n');
    Tensor back = decode_npy(bytes.data(), bytes.size(), "t.npy");
    EXPECT_EQ(back.dtype, t.dtype);
    EXPECT_EQ(back.dims, t.dims);
    EXPECT_EQ(back.bytes, t.bytes);
  }
}

TEST(ToolsTensorIo, NpyHeaderMatchesNumpy) {
  // Byte for byte what numpy.save writes: the dict, space padding, '\n' at byte 127.
  auto header_of = [](const Tensor& t) {
    std::vector<uint8_t> bytes = encode_npy(t);
    EXPECT_EQ(bytes[6], 1);
    const size_t len = bytes[8] | (bytes[9] << 8);
    return std::string(bytes.begin() + 10, bytes.begin() + 10 + static_cast<long>(len));
  };
  auto padded = [](std::string dict) {
    dict.resize(117, ' ');
    return dict + "\n";
  };
  EXPECT_EQ(header_of(make_tensor<float>(INGOT_DTYPE_F32, {1, 64}, std::vector<float>(64, 0))),
            padded("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 64), }"));
  EXPECT_EQ(header_of(make_tensor<int64_t>(INGOT_DTYPE_I64, {3}, {1, 2, 3})),
            padded("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"));
  EXPECT_EQ(header_of(make_tensor<int8_t>(INGOT_DTYPE_I8, {}, {5})),
            padded("{'descr': '|i1', 'fortran_order': False, 'shape': (), }"));
  EXPECT_EQ(header_of(make_tensor<uint8_t>(INGOT_DTYPE_BOOL, {1}, {1})),
            padded("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }"));
}

TEST(ToolsTensorIo, NpyLongHeaderUsesVersion2) {
  // Only a header over 64 KiB needs format 2: 30000 dimensions of 1.
  Tensor t = make_tensor<uint8_t>(INGOT_DTYPE_U8, std::vector<int64_t>(30000, 1), {7});
  std::vector<uint8_t> bytes = encode_npy(t);
  EXPECT_EQ(bytes[6], 2);
  const size_t len = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (bytes[11] << 24);
  EXPECT_EQ(12 + len + 1, bytes.size());
  EXPECT_EQ((12 + len) % 64, 0u);
  EXPECT_EQ(bytes.back(), 7);
  EXPECT_NE(decode_error(bytes).find("too many dimensions"), std::string::npos);
}

#ifdef INGOT_SOURCE_DIR
TEST(ToolsTensorIo, ReadsAndRewritesNumpyFileExactly) {
  const std::string path = std::string(INGOT_SOURCE_DIR) + "/examples/digits/samples/sample_0.npy";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not present";
  std::vector<uint8_t> original = read_file(path);
  Tensor t = read_npy(path);
  EXPECT_EQ(t.dtype, INGOT_DTYPE_F32);
  EXPECT_EQ(t.dims, (std::vector<int64_t>{1, 64}));
  EXPECT_EQ(encode_npy(t), original);
}
#endif

TEST(ToolsTensorIo, NpyReadsVersion2AndDoubleQuotes) {
  std::vector<uint8_t> bytes =
      npy_bytes("{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (2, 2)}\n", 16, 2);
  Tensor t = decode_npy(bytes.data(), bytes.size(), "t.npy");
  EXPECT_EQ(t.dtype, INGOT_DTYPE_I32);
  EXPECT_EQ(t.dims, (std::vector<int64_t>{2, 2}));
  bytes = npy_bytes("{'shape': (3L,), 'fortran_order': False, 'descr': '<u1'}", 3, 3);
  t = decode_npy(bytes.data(), bytes.size(), "t.npy");
  EXPECT_EQ(t.dtype, INGOT_DTYPE_U8);
  EXPECT_EQ(t.dims, (std::vector<int64_t>{3}));
}

TEST(ToolsTensorIo, NpyMalformedHeaders) {
  const std::string ok_tail = "'fortran_order': False, 'shape': (2,), }";
  std::vector<uint8_t> bytes = npy_bytes("{'descr': '<f4', " + ok_tail, 8);
  bytes[1] = 'X';
  EXPECT_NE(decode_error(bytes).find("not a .npy file"), std::string::npos);
  EXPECT_NE(decode_error({0x93, 'N', 'U'}).find("not a .npy file"), std::string::npos);

  bytes = npy_bytes("{'descr': '<f4', " + ok_tail, 8);
  bytes[6] = 9;
  EXPECT_NE(decode_error(bytes).find("unsupported .npy format version 9.0"), std::string::npos);

  bytes = npy_bytes("{'descr': '<f4', " + ok_tail, 0);
  bytes[8] = 0xff;
  bytes[9] = 0x7f;
  EXPECT_NE(decode_error(bytes).find("truncated .npy header"), std::string::npos);

  struct Case {
    std::string header;
    std::string message;
  };
  const Case cases[] = {
      {"{'descr': '<f4', 'shape': (2,), }", "missing key 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (2,), }", "missing key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
      {"{'descr': '<f4', 'color': 1, " + ok_tail, "unexpected key 'color'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", "expected True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "expected '(' to start"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "non-negative shape"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", "expected ':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "unexpected text after"},
      {"'descr': '<f4'", "expected '{'"},
      {"{'descr': [('a', '<f4')], " + ok_tail, "structured dtypes are not supported"},
      {"{'descr': '>f4', " + ok_tail, "big-endian .npy data ('>f4') is not supported"},
      {"{'descr': '<f8', " + ok_tail, "float64 ('<f8') is not supported"},
      {"{'descr': '<U4', " + ok_tail, "dtype '<U4' is not supported"},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", "Fortran-order"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,2), }",
       "rank 9 is above"},
  };
  for (const Case& c : cases) {
    std::string message = decode_error(npy_bytes(c.header, 8));
    EXPECT_NE(message.find(c.message), std::string::npos) << c.header << " -> " << message;
    EXPECT_EQ(message.rfind("t.npy: ", 0), 0u) << message;
  }
}

TEST(ToolsTensorIo, NpyTruncatedAndTrailingData) {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_NE(decode_error(npy_bytes(header, 23)).find(
                "truncated .npy data: shape 2x3xf32 needs 24 bytes, file has 23"),
            std::string::npos);
  EXPECT_NE(decode_error(npy_bytes(header, 25)).find("1 unexpected bytes after the .npy data"),
            std::string::npos);
  EXPECT_EQ(decode_error(npy_bytes(header, 24)), "");
  // A shape whose byte count overflows must not wrap around.
  const std::string huge =
      "{'descr': '<i8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }";
  EXPECT_NE(decode_error(npy_bytes(huge, 8)), "");
}

TEST_F(ToolsTensorIoFiles, WriteAndReadNpyFile) {
  Tensor t = make_tensor<int32_t>(INGOT_DTYPE_I32, {2, 2}, {1, 2, 3, 4});
  write_npy(t, path("a.npy"));
  EXPECT_EQ(file_count(), 1u) << "no temporary file left behind";
  Tensor back = read_npy(path("a.npy"));
  EXPECT_EQ(back.bytes, t.bytes);
  // Overwrites an existing file.
  Tensor u = make_tensor<int32_t>(INGOT_DTYPE_I32, {1}, {9});
  write_npy(u, path("a.npy"));
  EXPECT_EQ(read_npy(path("a.npy")).dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(file_count(), 1u);
}

TEST_F(ToolsTensorIoFiles, PendingFileLeavesNothingUntilCommitted) {
  {
    PendingFile file(path("b.npy"), {1, 2, 3});
    EXPECT_FALSE(fs::exists(path("b.npy")));
    EXPECT_EQ(file_count(), 1u);  // the temporary
  }
  EXPECT_EQ(file_count(), 0u);
  PendingFile file(path("b.npy"), {1, 2, 3});
  file.commit();
  EXPECT_EQ(read_file(path("b.npy")), (std::vector<uint8_t>{1, 2, 3}));
  EXPECT_NE(error_of([&] { file.commit(); }).find("already written"), std::string::npos);
  EXPECT_EQ(file_count(), 1u);
}

TEST_F(ToolsTensorIoFiles, WriteErrorsNameThePath) {
  Tensor t = make_tensor<float>(INGOT_DTYPE_F32, {1}, {1});
  const std::string missing = path("no/such/dir/y.npy");
  EXPECT_NE(error_of([&] { write_npy(t, missing); }).find("cannot write '" + missing + "'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { write_npy(t, path("")); }).find("names a folder"), std::string::npos);
  // Renaming onto a folder fails and removes the temporary.
  fs::create_directories(path("folder.npy/inner"));
  EXPECT_NE(error_of([&] { write_npy(t, path("folder.npy")); }).find("cannot write"),
            std::string::npos);
  EXPECT_EQ(file_count(), 1u);
  EXPECT_NE(error_of([&] { read_file(dir_.string()); }).find("not a regular file"),
            std::string::npos);
}

TEST_F(ToolsTensorIoFiles, ReadNpyNamesTheFile) {
  std::vector<uint8_t> bytes = {'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0, 0, 0};
  PendingFile(path("junk.npy"), bytes).commit();
  EXPECT_EQ(error_of([&] { read_npy(path("junk.npy")); }),
            path("junk.npy") + ": not a .npy file (missing the \\x93NUMPY magic)");
}

// ---- ONNX TensorProto (.pb) ------------------------------------------------------------

std::vector<uint8_t> proto_bytes(const onnx::TensorProto& proto) {
  std::string s = proto.SerializeAsString();
  return std::vector<uint8_t>(s.begin(), s.end());
}

std::string proto_error(const onnx::TensorProto& proto) {
  std::vector<uint8_t> bytes = proto_bytes(proto);
  return error_of([&] { decode_tensor_proto(bytes.data(), bytes.size(), "t.pb"); });
}

TEST(ToolsTensorIo, TensorProtoRoundTripsEveryDtype) {
  const std::vector<Tensor> tensors = {
      make_tensor<float>(INGOT_DTYPE_F32, {2, 2}, {1.5f, -0.0f, NAN, INFINITY}),
      make_tensor<int64_t>(INGOT_DTYPE_I64, {3}, {INT64_MIN, 0, INT64_MAX}),
      make_tensor<int32_t>(INGOT_DTYPE_I32, {}, {-7}),
      make_tensor<uint8_t>(INGOT_DTYPE_BOOL, {2, 1}, {1, 0}),
      make_tensor<uint8_t>(INGOT_DTYPE_U8, {2}, {0, 255}),
      make_tensor<int8_t>(INGOT_DTYPE_I8, {2}, {-128, 127}),
      make_tensor<float>(INGOT_DTYPE_F32, {0, 3}, {}),
  };
  for (const Tensor& t : tensors) {
    std::vector<uint8_t> bytes = encode_tensor_proto(t, "y");
    onnx::TensorProto proto;
    ASSERT_TRUE(proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
    EXPECT_EQ(proto.name(), "y");
    Tensor back = decode_tensor_proto(bytes.data(), bytes.size(), "t.pb");
    EXPECT_EQ(back.dtype, t.dtype);
    EXPECT_EQ(back.dims, t.dims);
    EXPECT_EQ(back.bytes, t.bytes);
  }
}

TEST(ToolsTensorIo, TensorProtoTypedFields) {
  onnx::TensorProto f;
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(2);
  f.add_float_data(0.25f);
  f.add_float_data(-3.0f);
  std::vector<uint8_t> bytes = proto_bytes(f);
  Tensor t = decode_tensor_proto(bytes.data(), bytes.size(), "t.pb");
  EXPECT_EQ(values_of<float>(t), (std::vector<float>{0.25f, -3.0f}));

  onnx::TensorProto b;  // bools travel in int32_data
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  for (int v : {1, 0, 1}) b.add_int32_data(v);
  bytes = proto_bytes(b);
  t = decode_tensor_proto(bytes.data(), bytes.size(), "t.pb");
  EXPECT_EQ(t.dtype, INGOT_DTYPE_BOOL);
  EXPECT_EQ(values_of<uint8_t>(t), (std::vector<uint8_t>{1, 0, 1}));

  onnx::TensorProto i;
  i.set_data_type(onnx::TensorProto::INT64);
  i.add_int64_data(-5);  // no dims: a scalar
  bytes = proto_bytes(i);
  t = decode_tensor_proto(bytes.data(), bytes.size(), "t.pb");
  EXPECT_TRUE(t.dims.empty());
  EXPECT_EQ(values_of<int64_t>(t), (std::vector<int64_t>{-5}));
}

TEST(ToolsTensorIo, TensorProtoErrorsNameTheProblem) {
  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_dims(1);
  d.add_double_data(1.0);
  EXPECT_EQ(proto_error(d), "t.pb: TensorProto element type DOUBLE is not supported (supported: FLOAT, "
                            "INT64, INT32, BOOL, UINT8, INT8)");
  onnx::TensorProto short_raw;
  short_raw.set_data_type(onnx::TensorProto::FLOAT);
  short_raw.add_dims(2);
  short_raw.set_raw_data(std::string(4, '\0'));
  EXPECT_EQ(proto_error(short_raw), "t.pb: raw_data holds 4 bytes; 2xf32 needs 8");
  onnx::TensorProto few;
  few.set_data_type(onnx::TensorProto::INT32);
  few.add_dims(3);
  few.add_int32_data(1);
  EXPECT_EQ(proto_error(few), "t.pb: int32_data holds 1 values; 3xi32 needs 3");
  onnx::TensorProto negative;
  negative.set_data_type(onnx::TensorProto::FLOAT);
  negative.add_dims(-1);
  EXPECT_EQ(proto_error(negative), "t.pb: negative dimension -1 in the TensorProto");
  onnx::TensorProto external;
  external.set_data_type(onnx::TensorProto::FLOAT);
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  EXPECT_NE(proto_error(external).find("external data"), std::string::npos);
  const uint8_t junk[] = {0xff, 0xff, 0xff};
  EXPECT_NE(error_of([&] { decode_tensor_proto(junk, sizeof junk, "t.pb"); }).find("not a valid ONNX TensorProto"),
            std::string::npos);
}

TEST_F(ToolsTensorIoFiles, FilesChooseTheirFormatByExtension) {
  Tensor t = make_tensor<int32_t>(INGOT_DTYPE_I32, {2}, {4, -4});
  PendingFile(path("x.pb"), encode_tensor_file(t, path("x.pb"), "x")).commit();
  PendingFile(path("x.npy"), encode_tensor_file(t, path("x.npy"))).commit();
  EXPECT_TRUE(is_tensor_proto_path(path("x.pb")));
  EXPECT_FALSE(is_tensor_proto_path(path("x.npy")));
  EXPECT_FALSE(is_tensor_proto_path(".pb"));
  for (const char* name : {"x.pb", "x.npy"}) {
    Tensor back = parse_tensor_arg("@" + path(name));
    EXPECT_EQ(back.dtype, INGOT_DTYPE_I32) << name;
    EXPECT_EQ(back.bytes, t.bytes) << name;
  }
  EXPECT_NE(error_of([&] { read_tensor_file(path("x.npy.pb")); }).find("cannot open"), std::string::npos);
  // A .npy file named .pb is read as a TensorProto and refused.
  PendingFile(path("wrong.pb"), encode_npy(t)).commit();
  EXPECT_NE(error_of([&] { read_tensor_file(path("wrong.pb")); }).find(path("wrong.pb")), std::string::npos);
}

// ---- printing -------------------------------------------------------------------------

TEST(ToolsTensorIo, FormatValues) {
  Tensor small = make_tensor<float>(INGOT_DTYPE_F32, {3}, {1, 0.5f, -2e-7f});
  EXPECT_EQ(format_values(small), "  [1, 0.5, -2e-07]\n");
  Tensor ints = make_tensor<int64_t>(INGOT_DTYPE_I64, {2}, {INT64_MAX, -1});
  EXPECT_EQ(format_values(ints, 16, ""), "[9223372036854775807, -1]\n");
  Tensor flags = make_tensor<uint8_t>(INGOT_DTYPE_BOOL, {2}, {3, 0});
  EXPECT_EQ(format_values(flags), "  [1, 0]\n");
  Tensor empty = make_tensor<float>(INGOT_DTYPE_F32, {0}, {});
  EXPECT_EQ(format_values(empty), "  []\n");

  std::vector<float> many(100);
  for (int i = 0; i < 100; ++i) many[i] = static_cast<float>(i);
  Tensor big = make_tensor<float>(INGOT_DTYPE_F32, {10, 10}, many);
  EXPECT_EQ(format_values(big),
            "  [0, 1, 2, 3, 4, 5, ..., 94, 95, 96, 97, 98, 99]  (100 values)\n"
            "  min 0  max 99  mean 49.5\n");
  many[50] = NAN;
  big = make_tensor<float>(INGOT_DTYPE_F32, {100}, many);
  EXPECT_NE(format_values(big).find("(1 nan)"), std::string::npos);
  Tensor nans = make_tensor<float>(INGOT_DTYPE_F32, {20}, std::vector<float>(20, NAN));
  EXPECT_NE(format_values(nans).find("all 20 values are nan"), std::string::npos);
}

}  // namespace
}  // namespace ingot::tools
