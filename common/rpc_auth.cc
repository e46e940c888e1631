#include "nabla/common/rpc_auth.hh"

#include <fcntl.h>
#include <grp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <optional>
#include <span>
#include <stdexcept>

#include "nabla/common/error.hh"
#include "nabla/common/fd.hh"

namespace nabla::common {
namespace {

// Key files hold a few keys; anything larger is not a key file.
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

namespace {

// Others never; the group may read only when it is the key group.
void check_key_file_mode(const std::string& path, const struct stat& st,
                         std::string_view key_group) {
  const mode_t mode = st.st_mode & 07777;
  const bool group_read_only = (mode & 070) == 040;
  const bool group_ok = (mode & 070) == 0 || (group_read_only && group_id(key_group) == st.st_gid);
  if ((mode & 07) == 0 && group_ok) return;
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
  throw std::runtime_error("key file " + path + " has mode " + text +
                           " (readable or writable by group/others); run: chmod 600 " + path +
                           " (or chgrp " + std::string(key_group) + " and chmod 640 to let group " +
                           std::string(key_group) + " use it)");
}

std::string read_key_text(const FileDescriptor& fd, const std::string& path, off_t size) {
  if (size > static_cast<off_t>(kMaxKeyFileBytes)) {
    throw std::runtime_error("key file " + path + " is too large to be a key file (over " +
                             std::to_string(kMaxKeyFileBytes) + " bytes)");
  }
  std::string text(kMaxKeyFileBytes + 1, '\0');
  std::size_t got = 0;
  for (;;) {
    const std::size_t n =
        fd.read_some(std::as_writable_bytes(std::span<char>(text.data() + got, text.size() - got)));
    got += n;
    if (n == 0 || got >= text.size()) break;
  }
  text.resize(got);
  return text;
}

Key parse_key_line(const std::string& path, std::size_t line_number, std::string_view line) {
  const std::string where = "key file " + path + " line " + std::to_string(line_number);
  std::vector<uint8_t> bytes;
  if (!from_hex(line, bytes)) {
    OPENSSL_cleanse(bytes.data(), bytes.size());
    throw std::runtime_error(where +
                             ": a key must be only hex digits (make one with: nabla key new FILE)");
  }
  if (bytes.size() < kMinKeyBytes) {
    throw std::runtime_error(where + " holds " + std::to_string(bytes.size()) +
                             " bytes; at least " + std::to_string(kMinKeyBytes) +
                             " random bytes (" + std::to_string(2 * kMinKeyBytes) +
                             " hex digits) are required");
  }
  return Key(std::move(bytes));
}

}  // namespace

std::vector<Key> parse_key_text(const std::string& path, std::string_view text) {
  std::vector<Key> keys;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = trim(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    keys.push_back(parse_key_line(path, line_number, line));
  }
  if (keys.empty()) {
    throw std::runtime_error("key file " + path +
                             " holds no key (one hex key per line; make one with: nabla key new "
                             "FILE)");
  }
  return keys;
}

std::optional<unsigned> group_id(std::string_view name) {
  std::array<char, 16384> buf{};
  struct group entry {};
  struct group* found = nullptr;
  const std::string name_text(name);
  if (::getgrnam_r(name_text.c_str(), &entry, buf.data(), buf.size(), &found) != 0 ||
      found == nullptr) {
    return std::nullopt;
  }
  return found->gr_gid;
}

std::vector<Key> load_keys(const std::string& path, std::string_view key_group) {
  // O_NOFOLLOW is not used: a symlink to a 0600 file is fine; fstat checks
  // the file itself.
  FileDescriptor fd = FileDescriptor::open(path, O_RDONLY | O_NOCTTY);
  struct stat st {};
  check_syscall("fstat " + path, ::fstat(fd.get(), &st));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("key file " + path + " is not a regular file");
  check_key_file_mode(path, st, key_group);
  std::string text = read_key_text(fd, path, st.st_size);
  try {
    std::vector<Key> keys = parse_key_text(path, text);
    OPENSSL_cleanse(text.data(), text.size());
    return keys;
  } catch (...) {
    OPENSSL_cleanse(text.data(), text.size());
    throw;
  }
}

Key load_key_file(const std::string& path, std::string_view key_group) {
  return std::move(load_keys(path, key_group).front());
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

std::string key_id(const Key& key) {
  constexpr std::string_view kLabel = "nabla-key-id";
  const auto mac = hmac_sha256(key, reinterpret_cast<const uint8_t*>(kLabel.data()), kLabel.size());
  return to_hex(mac.data(), 8);
}

bool constant_time_equal(const uint8_t* a, const uint8_t* b, std::size_t size) noexcept {
  return CRYPTO_memcmp(a, b, size) == 0;
}

}  // namespace nabla::common
