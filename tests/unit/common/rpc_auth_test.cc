#include "nabla/common/rpc_auth.hh"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace nabla::common {
namespace {

class KeyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nabla-keytest-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string write(const std::string& name, const std::string& text, mode_t mode) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }

  std::string dir_;
};

const std::string kHexKey = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";

TEST(Hex, RoundTrip) {
  const uint8_t bytes[] = {0x00, 0x7f, 0xab, 0xff};
  EXPECT_EQ(to_hex(bytes, 4), "007fabff");
  std::vector<uint8_t> out;
  ASSERT_TRUE(from_hex("007FabfF", out));
  EXPECT_EQ(out, std::vector<uint8_t>(bytes, bytes + 4));
  EXPECT_FALSE(from_hex("abc", out));
  EXPECT_FALSE(from_hex("zz", out));
  EXPECT_TRUE(from_hex("", out));
  EXPECT_TRUE(out.empty());
}

TEST(Hmac, Rfc4231TestCase1) {
  const Key key(std::vector<uint8_t>(20, 0x0b));
  const std::string data = "Hi There";
  const auto mac = hmac_sha256(key, reinterpret_cast<const uint8_t*>(data.data()), data.size());
  EXPECT_EQ(to_hex(mac.data(), mac.size()),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(Hmac, ConstantTimeEqualAndNonces) {
  const uint8_t a[] = {1, 2, 3};
  const uint8_t b[] = {1, 2, 4};
  EXPECT_TRUE(constant_time_equal(a, a, 3));
  EXPECT_FALSE(constant_time_equal(a, b, 3));
  EXPECT_NE(random_nonce(), random_nonce());
}

TEST_F(KeyFileTest, LoadsHexKeyWithStrictMode) {
  const Key k = load_key_file(write("k", kHexKey + "\n", 0600));
  ASSERT_EQ(k.bytes().size(), 32u);
  EXPECT_EQ(k.bytes()[0], 0x00);
  EXPECT_EQ(k.bytes()[31], 0x1f);
  EXPECT_EQ(load_key_file(write("ro", "  " + kHexKey + kHexKey + "\r\n", 0400)).bytes().size(),
            64u);
}

TEST_F(KeyFileTest, RefusesGroupOrOtherPermissions) {
  for (const mode_t mode : {0640, 0604, 0644, 0660, 0777}) {
    const std::string path = write("k" + std::to_string(mode), kHexKey, mode);
    try {
      load_key_file(path);
      ADD_FAILURE() << "mode " << std::oct << mode << " accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("chmod 600 " + path), std::string::npos) << e.what();
    }
  }
}

TEST_F(KeyFileTest, RefusesShortJunkAndNonRegular) {
  EXPECT_THROW(load_key_file(write("short", kHexKey.substr(0, 62), 0600)), std::runtime_error);
  EXPECT_THROW(load_key_file(write("odd", kHexKey + "a", 0600)), std::runtime_error);
  EXPECT_THROW(load_key_file(write("junk", kHexKey + " xyz", 0600)), std::runtime_error);
  EXPECT_THROW(load_key_file(write("empty", "", 0600)), std::runtime_error);
  EXPECT_THROW(load_key_file(write("big", std::string(5000, 'a'), 0600)), std::runtime_error);
  try {
    load_key_file(write("short2", kHexKey.substr(0, 40), 0600));
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 20 bytes; at least 32"), std::string::npos)
        << e.what();
  }
  const std::string sub = dir_ + "/sub";
  ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
  EXPECT_THROW(load_key_file(sub), std::runtime_error);
  try {
    load_key_file(dir_ + "/missing");
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
  }
}

TEST_F(KeyFileTest, GenerateWritesLoadableFileAndNeverOverwrites) {
  const std::string path = dir_ + "/gen.key";
  const Key generated = generate_key_file(path);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 65);  // 64 hex digits + newline
  EXPECT_EQ(load_key_file(path).bytes(), generated.bytes());
  try {
    generate_key_file(path);
    FAIL();
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EEXIST);
  }
}

}  // namespace
}  // namespace nabla::common
