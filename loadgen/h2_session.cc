#include "h2_session.hh"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace nabla::loadgen::detail {
namespace {

std::string_view view(const uint8_t* p, size_t n) {
  return {reinterpret_cast<const char*>(p), n};
}

int parse_int(std::string_view text) {
  int v = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && ptr == text.data() + text.size() ? v : -1;
}

}  // namespace

std::string grpc_frame(std::string_view message) {
  std::string out;
  out.push_back(0);  // not compressed
  const auto n = static_cast<uint32_t>(message.size());
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((n >> shift) & 0xff));
  out += message;
  return out;
}

H2Requests::H2Requests(const ProtocolSpec& spec) {
  const std::vector<std::string> names = type_names(spec);  // validates
  std::vector<double> weights;
  auto base = [&](const char* method, const std::string& path) {
    return std::vector<std::pair<std::string, std::string>>{{":method", method},
                                                            {":scheme", spec.scheme},
                                                            {":authority", spec.host_header},
                                                            {":path", path}};
  };
  if (spec.kind == ProtocolSpec::Kind::kHttp2) {
    for (const auto& u : spec.urls) {
      requests_.push_back({base("GET", u.path), {}, {}});
      weights.push_back(u.weight);
    }
  } else if (spec.kind == ProtocolSpec::Kind::kGrpc) {
    grpc_ = true;
    for (const auto& c : spec.grpc_calls) {
      H2Request r{base("POST", c.method), grpc_frame(c.message), {}};
      r.headers.emplace_back("content-type", "application/grpc");
      r.headers.emplace_back("te", "trailers");
      requests_.push_back(std::move(r));
      weights.push_back(c.weight);
    }
  } else {
    throw std::invalid_argument("protocol: not an HTTP/2 protocol");
  }
  (void)names;
  pick_ = std::discrete_distribution<uint32_t>(weights.begin(), weights.end());
  // Only now that requests_ no longer moves do its strings stay put.
  for (H2Request& r : requests_) {
    for (const auto& [name, value] : r.headers) {
      r.nva.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                       reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                       value.size(), NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE});
    }
  }
}

H2Session::H2Session() {
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return;
  nghttp2_session_callbacks_set_on_header_callback(callbacks, &H2Session::on_header);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, &H2Session::on_stream_close);
  // The client checks what it needs itself (a :status, a grpc-status, the
  // stream's end); nghttp2's HTTP messaging checks of every response header
  // are a seventh of the session's cost per request and change no count.
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) == 0) nghttp2_option_set_no_http_messaging(option, 1);
  const int rv = nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  nghttp2_session_callbacks_del(callbacks);
  if (rv != 0) {
    session_ = nullptr;
    return;
  }
  // No server push: every stream is one of ours.
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
}

H2Session::~H2Session() {
  if (session_ != nullptr) nghttp2_session_del(session_);
}

bool H2Session::submit(const H2Request& request, uint64_t request_id) {
  if (session_ == nullptr) return false;
  auto [it, fresh] = streams_.try_emplace(request_id);
  if (!fresh) return false;
  Stream& stream = it->second;
  stream.request_id = request_id;
  nghttp2_data_provider body{};
  if (!request.body.empty()) {
    stream.body = &request.body;
    body.source.ptr = &stream;
    body.read_callback = &H2Session::read_body;
  }
  const int32_t id =
      nghttp2_submit_request(session_, nullptr, request.nva.data(), request.nva.size(),
                             request.body.empty() ? nullptr : &body, &stream);
  if (id < 0) {
    streams_.erase(it);
    return false;
  }
  return true;
}

bool H2Session::receive(std::string_view bytes) {
  if (session_ == nullptr) return false;
  const ssize_t n = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return n >= 0 && static_cast<size_t>(n) == bytes.size();
}

bool H2Session::drain(std::string& out) {
  if (session_ == nullptr) return false;
  for (;;) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) return false;
    if (n == 0) return true;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
}

bool H2Session::all_drained() const {
  return session_ != nullptr && nghttp2_session_want_write(session_) == 0;
}

bool H2Session::accepting() const {
  return session_ != nullptr && nghttp2_session_check_request_allowed(session_) != 0;
}

bool H2Session::alive() const {
  return session_ != nullptr &&
         (nghttp2_session_want_read(session_) != 0 || nghttp2_session_want_write(session_) != 0);
}

int H2Session::on_header(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name,
                         size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void*) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  auto* stream =
      static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, frame->hd.stream_id));
  if (stream == nullptr) return 0;
  const std::string_view n = view(name, namelen);
  if (n == ":status") {
    stream->http_status = parse_int(view(value, valuelen));
  } else if (n == "grpc-status") {
    stream->grpc_status = parse_int(view(value, valuelen));
  }
  return 0;
}

int H2Session::on_stream_close(nghttp2_session* session, int32_t stream_id, uint32_t error_code,
                               void* user) {
  auto* self = static_cast<H2Session*>(user);
  auto* stream = static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, stream_id));
  if (stream == nullptr) return 0;
  self->completions_.push_back(
      {stream->request_id, stream->http_status, stream->grpc_status, error_code});
  self->streams_.erase(stream->request_id);
  return 0;
}

ssize_t H2Session::read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                             uint32_t* data_flags, nghttp2_data_source* source, void*) {
  auto* stream = static_cast<Stream*>(source->ptr);
  const std::string& body = *stream->body;
  const size_t n = std::min(length, body.size() - stream->body_sent);
  std::copy_n(body.data() + stream->body_sent, n, buf);
  stream->body_sent += n;
  if (stream->body_sent == body.size()) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

}  // namespace nabla::loadgen::detail
