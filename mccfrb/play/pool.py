"""Connections served by a bounded pool of threads (for the play server).

`PooledMixIn` replaces socketserver's thread per connection: accepted
connections wait in one thread (a selector) until the client sends
something, and only then go to one of at most `workers` threads, which
serves the request with a read timeout (the handler's `timeout`) and
closes the connection. A connection that sends nothing for `idle_timeout`
seconds is closed, and past `max_waiting` idle connections the oldest is
closed. So idle or slow clients hold at most `workers` + 1 threads, and
the page keeps answering while hundreds of connections sit idle. Standard
library only.
"""

import collections
import contextlib
import queue
import selectors
import socket
import threading
import time


class PooledMixIn:
  """Mixed in before a `socketserver.TCPServer` (one request per
  connection, as `http.server` serves HTTP/1.0)."""

  workers = 16  # Threads serving requests, at most.
  idle_timeout = 30.0  # Seconds a connection may wait without sending.
  max_waiting = 1024  # Idle connections kept open, at most.

  _pool = None

  def process_request(self, request, client_address):
    """Called by `serve_forever` for each accepted connection."""
    if self._pool is None:
      self._pool = _Pool(self)
    self._pool.add(request, client_address)

  def server_close(self):
    if self._pool is not None:
      self._pool.close()
    super().server_close()

  def pool_threads(self):
    """Threads the pool runs now (the waiting thread and the workers)."""
    return 0 if self._pool is None else self._pool.num_threads()

  def serve_connection(self, request, client_address):
    """Serves one connection in a worker thread, then closes it."""
    try:
      self.finish_request(request, client_address)
    except Exception:  # pylint: disable=broad-except
      self.handle_error(request, client_address)
    finally:
      self.shutdown_request(request)


class _Pool:
  """The waiting thread, the workers and their queue of one server."""

  def __init__(self, server):
    self._server = server
    self._lock = threading.Lock()
    self._incoming = []
    self._closing = False
    self._jobs = queue.SimpleQueue()
    self._workers = []
    self._idle = 0
    self._selector = selectors.DefaultSelector()
    self._wake_read, self._wake_write = socket.socketpair()
    self._wake_read.setblocking(False)
    self._wake_write.setblocking(False)
    self._selector.register(self._wake_read, selectors.EVENT_READ)
    self._waiter = threading.Thread(target=self._wait, daemon=True,
                                    name="mccfrb-play-wait")
    self._waiter.start()

  def num_threads(self):
    with self._lock:
      return 1 + len(self._workers)

  def add(self, request, client_address):
    with self._lock:
      if not self._closing:
        self._incoming.append((request, client_address))
        request = None
    if request is not None:
      self._server.shutdown_request(request)
      return
    self._wake()

  def close(self):
    with self._lock:
      self._closing = True
      workers = list(self._workers)
    self._wake()
    self._waiter.join(timeout=5)
    for _ in workers:
      self._jobs.put(None)

  def _wake(self):
    try:
      self._wake_write.send(b"\0")
    except (BlockingIOError, OSError):
      pass  # Already awake (the buffer is full) or closed.

  def _wait(self):
    """Waits for the idle connections; hands the ready ones to workers."""
    waiting = collections.OrderedDict()  # socket: (address, deadline)
    try:
      while True:
        timeout = 1.0
        if waiting:
          first = next(iter(waiting.values()))[1]
          timeout = min(timeout, max(0.0, first - time.monotonic()))
        for key, _ in self._selector.select(timeout):
          if key.fileobj is self._wake_read:
            # Drain the wake-up bytes; the non-blocking socket raises
            # BlockingIOError once it is empty.
            with contextlib.suppress(BlockingIOError):
              while self._wake_read.recv(4096):
                continue
            continue
          self._selector.unregister(key.fileobj)
          address, _ = waiting.pop(key.fileobj)
          self._dispatch(key.fileobj, address)
        with self._lock:
          incoming, self._incoming = self._incoming, []
          closing = self._closing
        if closing:
          for request, _ in incoming:
            self._server.shutdown_request(request)
          break
        now = time.monotonic()
        for request, address in incoming:
          self._selector.register(request, selectors.EVENT_READ)
          waiting[request] = (address, now + self._server.idle_timeout)
        while waiting and (len(waiting) > self._server.max_waiting or next(
            iter(waiting.values()))[1] <= now):
          request, _ = waiting.popitem(last=False)
          self._selector.unregister(request)
          self._server.shutdown_request(request)
    finally:
      for request in waiting:
        self._server.shutdown_request(request)
      self._selector.close()
      self._wake_read.close()
      self._wake_write.close()

  def _dispatch(self, request, address):
    with self._lock:
      if self._idle == 0 and len(self._workers) < self._server.workers:
        worker = threading.Thread(target=self._work, daemon=True,
                                  name="mccfrb-play-worker")
        self._workers.append(worker)
        self._idle += 1
        worker.start()
    self._jobs.put((request, address))

  def _work(self):
    while True:
      job = self._jobs.get()
      if job is None:
        return
      with self._lock:
        self._idle -= 1
      try:
        self._server.serve_connection(*job)
      finally:
        with self._lock:
          self._idle += 1
