#include "nabla/common/rpc_auth.hh"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <stdexcept>

#include "nabla/common/error.hh"
#include "nabla/common/fd.hh"

namespace nabla::common {
namespace {

// Key files are tiny; anything larger is not a key file.
constexpr std::size_t kMaxKeyFileBytes = 4096;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace

Key::~Key() {
  if (!bytes_.empty()) OPENSSL_cleanse(bytes_.data(), bytes_.size());
}

std::string to_hex(const uint8_t* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 0xf]);
  }
  return out;
}

bool from_hex(std::string_view hex, std::vector<uint8_t>& out) {
  if (hex.size() % 2 != 0) return false;
  out.clear();
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = hex_value(hex[i]);
    const int lo = hex_value(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return true;
}

Key load_key_file(const std::string& path) {
  // O_NOFOLLOW is not used: a symlink to a 0600 file is fine; fstat checks
  // the file itself.
  FileDescriptor fd = FileDescriptor::open(path, O_RDONLY | O_NOCTTY);
  struct stat st {};
  check_syscall("fstat " + path, ::fstat(fd.get(), &st));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("key file " + path + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw std::runtime_error("key file " + path + " has mode " + mode +
                             " (readable or writable by group/others); run: chmod 600 " + path);
  }
  if (st.st_size > static_cast<off_t>(kMaxKeyFileBytes)) {
    throw std::runtime_error("key file " + path + " is too large to be a key (over " +
                             std::to_string(kMaxKeyFileBytes) + " bytes)");
  }
  std::string text(kMaxKeyFileBytes + 1, '\0');
  std::size_t got = 0;
  for (;;) {
    const std::size_t n =
        fd.read_some(std::as_writable_bytes(std::span<char>(text.data() + got, text.size() - got)));
    if (n == 0 || got + n >= text.size()) {
      got += n;
      break;
    }
    got += n;
  }
  text.resize(got);
  std::vector<uint8_t> bytes;
  const bool ok = from_hex(trim(text), bytes);
  OPENSSL_cleanse(text.data(), text.size());
  if (!ok) {
    throw std::runtime_error("key file " + path +
                             " must contain only hex digits, e.g. the output of: head -c 32 "
                             "/dev/urandom | xxd -p -c 64");
  }
  if (bytes.size() < kMinKeyBytes) {
    throw std::runtime_error("key file " + path + " holds " + std::to_string(bytes.size()) +
                             " bytes; at least " + std::to_string(kMinKeyBytes) +
                             " random bytes (" + std::to_string(2 * kMinKeyBytes) +
                             " hex digits) are required");
  }
  return Key(std::move(bytes));
}

Key generate_key_file(const std::string& path) {
  std::vector<uint8_t> bytes(kMinKeyBytes);
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed while generating " + path);
  }
  FileDescriptor fd = FileDescriptor::open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  // The umask can only clear bits, but make the mode explicit anyway.
  check_syscall("fchmod " + path, ::fchmod(fd.get(), 0600));
  std::string text = to_hex(bytes.data(), bytes.size()) + "\n";
  fd.write_all(text);
  OPENSSL_cleanse(text.data(), text.size());
  return Key(std::move(bytes));
}

std::array<uint8_t, kNonceBytes> random_nonce() {
  std::array<uint8_t, kNonceBytes> nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return nonce;
}

std::array<uint8_t, kHmacBytes> hmac_sha256(const Key& key, const uint8_t* data, std::size_t size) {
  std::array<uint8_t, kHmacBytes> out{};
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.bytes().data(), static_cast<int>(key.bytes().size()), data, size,
           out.data(), &len) == nullptr ||
      len != kHmacBytes) {
    throw std::runtime_error("HMAC-SHA256 failed");
  }
  return out;
}

bool constant_time_equal(const uint8_t* a, const uint8_t* b, std::size_t size) noexcept {
  return CRYPTO_memcmp(a, b, size) == 0;
}

}  // namespace nabla::common
