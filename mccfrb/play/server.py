"""The HTTP face of a `PlaySession`: the page and a small JSON API.

  GET  /                the page (static/index.html, play.js, play.css)
  GET  /api/state       the match and the current hand
  POST /api/new_hand    {"after": last hand id or null} -> deals the next hand
  POST /api/act         {"hand_id": ..., "action": OpenSpiel action id}

Every answer of the API is JSON; a refused request gets a 4xx status and
{"error": "..."} (405 for any method but GET and POST, 400 for a bad
Content-Length or a body that is not JSON, nested too deep included), and
the server goes on serving. A client that goes away mid-request costs one
line on standard error. Connections wait for their request without a
thread, and requests are served by a bounded pool of threads (play/pool.py):
a connection that sends nothing for `TIMEOUT` seconds is closed, and one
that stalls mid-request for `READ_TIMEOUT` seconds too, so idle or slow
clients cannot hold more than `WORKERS` threads. Standard library only
(`http.server`).
"""

import http.server
import importlib.resources
import json
import socket
import sys

from mccfrb.play import pool
from mccfrb.play import session as session_lib

STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/index.html": ("index.html", "text/html; charset=utf-8"),
          "/play.js": ("play.js", "text/javascript; charset=utf-8"),
          "/play.css": ("play.css", "text/css; charset=utf-8")}
MAX_BODY = 1 << 16
TIMEOUT = 30.0  # Seconds a connection may wait before sending its request.
READ_TIMEOUT = 10.0  # Seconds a request may stall while a worker reads it.
WORKERS = 16  # Threads serving requests.


def _static(name):
  return (importlib.resources.files("mccfrb.play") / "static" / name).read_bytes()


def _json_body(handler):
  """The request's JSON object; PlayError for anything else."""
  try:
    length = int(handler.headers.get("Content-Length", "0"))
  except ValueError:
    raise session_lib.PlayError(400, "bad Content-Length header.") from None
  if length < 0:
    raise session_lib.PlayError(400, f"negative Content-Length: {length}.")
  if length > MAX_BODY:
    raise session_lib.PlayError(413, f"request body over {MAX_BODY} bytes.")
  raw = handler.rfile.read(length) if length > 0 else b""
  try:
    body = json.loads(raw or b"{}")
  except (ValueError, RecursionError):  # RecursionError: nested too deep.
    raise session_lib.PlayError(400, "the request body is not valid JSON.") from None
  if not isinstance(body, dict):
    raise session_lib.PlayError(400, "the request body must be a JSON object.")
  return body


def _require(body, key):
  if key not in body:
    raise session_lib.PlayError(400, f"the request lacks {key!r}.")
  return body[key]


def _handler_class(session, quiet):
  """A request handler class bound to `session`."""

  class Handler(http.server.BaseHTTPRequestHandler):
    """Serves the page and the JSON API of one session."""

    server_version = "mccfrb-play"
    timeout = READ_TIMEOUT  # Seconds a request may stall mid-read.

    def __getattr__(self, name):
      # http.server answers a method without a do_METHOD with an HTML 501.
      if name.startswith("do_"):
        return self._method_not_allowed
      raise AttributeError(name)

    def _method_not_allowed(self):
      self.close_connection = True
      self._send_json(405, {"error": f"{self.command} is not allowed: this "
                                     "server takes GET and POST."},
                      allow="GET, POST")

    def log_message(self, fmt, *args):  # pylint: disable=arguments-differ
      if not quiet:
        super().log_message(fmt, *args)

    def _send(self, status, body, content_type, allow=None):
      self.send_response(status)
      if allow:
        self.send_header("Allow", allow)
      self.send_header("Content-Type", content_type)
      self.send_header("Content-Length", str(len(body)))
      self.send_header("Cache-Control", "no-store")
      self.end_headers()
      self.wfile.write(body)

    def _send_json(self, status, obj, allow=None):
      self._send(status, json.dumps(obj, ensure_ascii=False).encode("utf-8"),
                 "application/json; charset=utf-8", allow)

    def _answer(self, compute):
      try:
        self._send_json(200, compute())
      except session_lib.PlayError as e:
        self._send_json(e.status, {"error": str(e)})

    def _path(self):
      return self.path.split("?", 1)[0]

    def do_GET(self):  # pylint: disable=invalid-name
      path = self._path()
      if path in STATIC:
        name, content_type = STATIC[path]
        self._send(200, _static(name), content_type)
      elif path == "/api/state":
        self._answer(session.to_json)
      elif path in POST_ROUTES:
        self._send_json(405, {"error": f"{path} takes POST, not GET."},
                        allow="POST")
      else:
        self._send_json(404, {"error": f"no such page: {path}"})

    def do_POST(self):  # pylint: disable=invalid-name
      path = self._path()
      route = POST_ROUTES.get(path)
      if route is None:
        self._send_json(404 if path not in STATIC and path != "/api/state"
                        else 405, {"error": f"cannot POST to {path}"})
        return
      self._answer(lambda: route(_json_body(self)))

  POST_ROUTES = {
      "/api/new_hand": lambda body: session.new_hand(body.get("after")),
      "/api/act": lambda body: session.act(_require(body, "hand_id"),
                                           _require(body, "action")),
  }
  return Handler


class _Server(pool.PooledMixIn, http.server.HTTPServer):
  """Requests served by a bounded pool of threads; one line, not a
  traceback, for a client that went away."""

  def handle_error(self, request, client_address):
    error = sys.exc_info()[1]
    if isinstance(error, (ConnectionError, TimeoutError)):
      sys.stderr.write(f"mccfrb-play: client {client_address[0]} went away "
                       f"({type(error).__name__})\n")
    else:
      super().handle_error(request, client_address)


def make_server(session, host="127.0.0.1", port=0, quiet=True):
  """An HTTP server for `session` (port 0: any free port).

  Call `serve_forever()` on it (in a thread for tests) and `shutdown()` /
  `server_close()` to stop. Raises OSError when the address is taken.
  """
  cls = _Server
  if ":" in host:  # An IPv6 address.
    cls = type("ThreadingHTTPServerV6", (cls,),
               {"address_family": socket.AF_INET6})
  server = cls((host, port), _handler_class(session, quiet))
  server.workers, server.idle_timeout = WORKERS, TIMEOUT
  return server


def url(server):
  """The address a browser opens for `server`."""
  host, port = server.server_address[:2]
  if ":" in host:
    host = f"[{host}]"
  return f"http://{host}:{port}/"
