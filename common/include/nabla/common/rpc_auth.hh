#pragma once
// Shared-key authentication for the control protocol (HMAC-SHA256
// challenge-response, see rpc.hh for the handshake).
//
// Key files are hex text, one key per line: each key at least 64 hex digits
// (= 32 key bytes), surrounded by optional whitespace. Blank lines and lines
// starting with '#' are ignored. The decoded bytes are an HMAC key. A server
// accepts any key of its file; a client uses the first one, so when rotating
// put the new key first on the coordinator and anywhere among the daemons'
// keys (see docs/protocol.md, "Key files").
//
// A key file must be a regular file that others cannot touch. Its group may
// read it (0640, 0440) only when that group is kKeyGroup: the group whose
// members may control the daemons. Anything looser is refused with a message
// saying `chmod 600 FILE`. Create one with generate_key_file() (`nabla key
// new`).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nabla::common {

inline constexpr std::size_t kMinKeyBytes = 32;
// The group allowed to read key files (see above).
inline constexpr const char* kKeyGroup = "nabla";
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

// Every key of a key file, in file order (at least one). Throws
// std::runtime_error (permission, format, size problems, each one line
// naming the file and, for a bad key, its line number) or std::system_error
// (open/fstat/read failures).
// `key_group` is the group allowed to read the file (kKeyGroup but in tests).
std::vector<Key> load_keys(const std::string& path, std::string_view key_group = kKeyGroup);
// The keys in the text of a key file, in order, as load_keys reads them
// after its permission checks (`path` only names the file in errors).
// Throws std::runtime_error naming the line of a bad key, or saying the
// text holds none. No I/O, so it is fuzzed (tests/fuzz/fuzz_key_file.cc).
std::vector<Key> parse_key_text(const std::string& path, std::string_view text);
// The first key of a key file: the one a client authenticates with.
Key load_key_file(const std::string& path, std::string_view key_group = kKeyGroup);
// The id of the group named `name`, if it exists.
std::optional<unsigned> group_id(std::string_view name);

// Writes kMinKeyBytes random bytes as hex plus '\n' to a NEW file with mode
// 0600 (O_EXCL: an existing file is never overwritten) and returns the key.
Key generate_key_file(const std::string& path);

// Cryptographically random bytes (RAND_bytes); throws std::runtime_error.
std::array<uint8_t, kNonceBytes> random_nonce();

std::array<uint8_t, kHmacBytes> hmac_sha256(const Key& key, const uint8_t* data, std::size_t size);

// A key's public name, 16 hex digits: the start of HMAC-SHA256(key,
// "nabla-key-id"). Tells keys apart (in owners of injections, in logs)
// without revealing anything of them.
std::string key_id(const Key& key);

// Constant-time equality of two equally sized byte strings (CRYPTO_memcmp).
bool constant_time_equal(const uint8_t* a, const uint8_t* b, std::size_t size) noexcept;

std::string to_hex(const uint8_t* data, std::size_t size);
// Lower- or upper-case hex, even length; returns false on anything else.
bool from_hex(std::string_view hex, std::vector<uint8_t>& out);

}  // namespace nabla::common
