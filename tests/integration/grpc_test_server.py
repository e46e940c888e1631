"""A gRPC server for nabla's protocol tests, on python3-grpcio, no protoc.

Usage: grpc_test_server.py PORT SERVICE_SECONDS CALL_LOG [ADDRESS [CERT KEY]]

Service nabla.Test, unary, raw bytes (a generic handler without serializers):
  /nabla.Test/Sleep  sleeps SERVICE_SECONDS, then answers the request's bytes
  /nabla.Test/Fail   answers status UNAVAILABLE (14) at once
Every call appends one line "<method> <request bytes>" to CALL_LOG before it
answers, so a test counts exactly what the server was asked. Listens on
ADDRESS:PORT (default 127.0.0.1) until killed: cleartext HTTP/2, or TLS
with the PEM certificate and key CERT and KEY.
"""
import sys
import threading
import time
from concurrent import futures

import grpc


def main():
    port = int(sys.argv[1])
    service_s = float(sys.argv[2])
    log = open(sys.argv[3], "a", buffering=1)
    address = sys.argv[4] if len(sys.argv) > 4 else "127.0.0.1"
    lock = threading.Lock()

    def record(method, request):
        with lock:
            log.write("%s %d\n" % (method, len(request)))

    def sleep(request, context):
        time.sleep(service_s)
        record("Sleep", request)
        return request

    def fail(request, context):
        record("Fail", request)
        context.abort(grpc.StatusCode.UNAVAILABLE, "asked to fail")

    handlers = {
        "Sleep": grpc.unary_unary_rpc_method_handler(sleep),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
    }
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("nabla.Test", handlers),))
    where = "%s:%d" % (address, port)
    if len(sys.argv) > 6:
        with open(sys.argv[5], "rb") as cert, open(sys.argv[6], "rb") as key:
            credentials = grpc.ssl_server_credentials([(key.read(), cert.read())])
        bound = server.add_secure_port(where, credentials)
    else:
        bound = server.add_insecure_port(where)
    if bound == 0:
        sys.exit("cannot listen on " + where)
    server.start()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
