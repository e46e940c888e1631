#pragma once
// Shared-key authentication for the control protocol (HMAC-SHA256
// challenge-response, see rpc.hh for the handshake).
//
// Key files are hex text: at least 64 hex digits (= 32 key bytes), optional
// surrounding whitespace (a trailing newline is normal), nothing else. The
// decoded bytes are the HMAC key. A key file must be a regular file with no
// group or other permission bits (0600 or 0400); anything looser is refused
// with a message saying `chmod 600 FILE`. Create one with
// generate_key_file() (or `head -c 32 /dev/urandom | xxd -p -c 64`).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nabla::common {

inline constexpr std::size_t kMinKeyBytes = 32;
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kHmacBytes = 32;

// Secret key bytes; wiped (OPENSSL_cleanse) when destroyed.
class Key {
 public:
  explicit Key(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  ~Key();
  Key(const Key&) = default;
  Key& operator=(const Key&) = default;
  Key(Key&&) noexcept = default;
  Key& operator=(Key&&) noexcept = default;

  const std::vector<uint8_t>& bytes() const noexcept { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Throws std::runtime_error (permission, format, size problems, each naming
// the file) or std::system_error (open/fstat/read failures).
Key load_key_file(const std::string& path);

// Writes kMinKeyBytes random bytes as hex plus '\n' to a NEW file with mode
// 0600 (O_EXCL: an existing file is never overwritten) and returns the key.
Key generate_key_file(const std::string& path);

// Cryptographically random bytes (RAND_bytes); throws std::runtime_error.
std::array<uint8_t, kNonceBytes> random_nonce();

std::array<uint8_t, kHmacBytes> hmac_sha256(const Key& key, const uint8_t* data, std::size_t size);

// Constant-time equality of two equally sized byte strings (CRYPTO_memcmp).
bool constant_time_equal(const uint8_t* a, const uint8_t* b, std::size_t size) noexcept;

std::string to_hex(const uint8_t* data, std::size_t size);
// Lower- or upper-case hex, even length; returns false on anything else.
bool from_hex(std::string_view hex, std::vector<uint8_t>& out);

}  // namespace nabla::common
