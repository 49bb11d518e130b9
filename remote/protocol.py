"""Server side of the agenttrainer remote environment protocol, version 3.

Standard library only, Python 3.9+. See PROTOCOL.md next to this file for the
wire format. A server supplies a *backend factory*: a callable taking
(num_envs, options) and returning an object with

    num_envs            int
    observation_space   dict: box_space(...)  (observations are flat float vectors)
    action_space        dict: discrete_space(n) or box_space(...)
    env_name            str (optional)
    max_episode_steps   int (optional, 0 = none)
    reports_success     bool (optional)
    reset(seed)         -> N*D floats (seed is an int or None; sub-env i uses seed + i)
    step(actions)       -> StepResult; actions is a list of N ints (discrete)
                           or N lists of A floats (box). Auto-reset ended episodes.
    close()
    handle(type, header, payload) (optional) -> (header, payload) for extra
                           message types; raise UnknownMessage for others.

and serves with serve_main(factory, args) from its __main__ block, where
args come from a parser given add_server_args (--listen, --num-envs, --once,
--allow-remote, --max-frame-bytes, --secret-file): stdio by default, TCP with
--listen. A factory that takes a third argument also gets the hello's
env_offset: the index of the connection's first sub-environment among all
the trainer's workers (a default random stream can be seeded by it).

With --secret-file, a TCP server makes every client prove that it holds the
same secret before hello (a challenge and response with HMAC-SHA256 over two
nonces; the secret never crosses the wire), and proves it in turn.

Every reply, errors included, echoes the "id" of the request it answers
(Channel.write adds it); a backend's handle() need not.
"""

import hashlib
import hmac
import inspect
import json
import os
import signal
import socket
import struct
import sys
import threading
import traceback
from array import array

VERSION = 3
# Versions whose hello this server accepts: a conversation without
# authentication is version 2's.
ACCEPTED_VERSIONS = (2, 3)
MAGIC = b"AGTP"
PREFIX = struct.Struct("<4sII")
MAX_HEADER = 1 << 20
DEFAULT_MAX_FRAME = 64 << 20
_BIG_ENDIAN = sys.byteorder == "big"


class ProtocolError(Exception):
    """The peer broke the protocol; the stream cannot be trusted any more."""


class AuthError(Exception):
    """The client failed authentication; the connection is dropped."""


class UnknownMessage(Exception):
    """A backend's handle() does not know the message type."""


class StepResult(object):
    """What a backend's step returns.

    obs:        N*D floats, the observations to act on next (after auto-reset)
    rewards:    N floats
    terminated: N bools
    truncated:  N bools
    final_obs:  {sub-env index: D floats} for every sub-env whose episode ended
    success:    {sub-env index: bool} for ended episodes (when reports_success)
    """

    __slots__ = ("obs", "rewards", "terminated", "truncated", "final_obs", "success")

    def __init__(self, obs, rewards, terminated, truncated, final_obs, success=None):
        self.obs = obs
        self.rewards = rewards
        self.terminated = terminated
        self.truncated = truncated
        self.final_obs = final_obs
        self.success = success


def discrete_space(n):
    return {"kind": "discrete", "n": int(n)}


def box_space(dim, low=None, high=None):
    """A flat box of dim floats; infinite or None bounds are unbounded."""

    def bound(vals):
        if vals is None:
            return None
        out = []
        for v in vals:
            v = float(v)
            out.append(None if v != v or v in (float("inf"), float("-inf")) else v)
        if len(out) != dim:
            raise ValueError("box of dim %d given %d bounds" % (dim, len(out)))
        return out

    space = {"kind": "box", "dim": int(dim)}
    if low is not None:
        space["low"] = bound(low)
    if high is not None:
        space["high"] = bound(high)
    return space


def f32_bytes(values):
    """Little-endian float32 bytes of a flat sequence (or a NumPy array);
    bytes are taken as already encoded."""
    if isinstance(values, (bytes, bytearray)):
        return bytes(values)
    if hasattr(values, "astype"):  # NumPy, without importing it here
        return values.astype("<f4").tobytes()
    a = array("f", values)  # out-of-range values become ±inf, NaN stays NaN
    if _BIG_ENDIAN:
        a.byteswap()
    return a.tobytes()


def f64_bytes(values):
    a = array("d", [float(v) for v in values])
    if _BIG_ENDIAN:
        a.byteswap()
    return a.tobytes()


def f32_values(data):
    a = array("f")
    a.frombytes(data)
    if _BIG_ENDIAN:
        a.byteswap()
    return a


def encode_frame(header, payload=b""):
    hb = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    return PREFIX.pack(MAGIC, len(hb), len(payload)) + hb + payload


class Channel(object):
    """Frames over a pair of binary streams (stdio pipes or a socket's files)."""

    def __init__(self, rfile, wfile, max_frame=DEFAULT_MAX_FRAME):
        self.rfile = rfile
        self.wfile = wfile
        self.max_frame = max_frame
        # The id of the request being answered: write() echoes it.
        self.request_id = None

    def _read_exact(self, n):
        chunks = []
        left = n
        while left > 0:
            b = self.rfile.read(left)
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)

    def read(self):
        """The next (header, payload), or None at a clean end of stream."""
        prefix = self._read_exact(PREFIX.size)
        if not prefix:
            return None
        if len(prefix) < PREFIX.size:
            raise ProtocolError("the stream ended inside a frame prefix")
        magic, hlen, plen = PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise ProtocolError("bytes that are not a frame (magic %r, want %r)" % (magic, MAGIC))
        if hlen < 2 or hlen > MAX_HEADER:
            raise ProtocolError("header length %d outside 2..%d" % (hlen, MAX_HEADER))
        if plen > self.max_frame:
            raise ProtocolError("payload of %d bytes over the limit of %d (--max-frame-bytes)" % (plen, self.max_frame))
        body = self._read_exact(hlen + plen)
        if len(body) < hlen + plen:
            raise ProtocolError("the stream ended inside a frame")
        try:
            header = json.loads(body[:hlen].decode("utf-8"))
        except ValueError as e:
            raise ProtocolError("header is not JSON: %s" % e)
        if not isinstance(header, dict) or not isinstance(header.get("type"), str):
            raise ProtocolError("header is not an object with a string type")
        return header, body[hlen:]

    def write(self, header, payload=b""):
        """Send one frame; the header gets the id of the request being
        answered, right after its type ({"type":"step","id":7,...}, the
        form the client reads fastest)."""
        if self.request_id is not None and "id" not in header:
            h = {"type": header.get("type"), "id": self.request_id}
            h.update(header)
            header = h
        self.wfile.write(encode_frame(header, payload))
        self.wfile.flush()


def _log(msg):
    sys.stderr.write(msg.rstrip("\n") + "\n")
    sys.stderr.flush()


def serve_connection(channel, factory, fixed_num_envs=None, name="server", secret=None, peer=""):
    """Answer requests on one channel until close or end of stream. With a
    secret, the client must authenticate before hello."""
    backend = None
    auth = _Auth(secret) if secret is not None else None
    try:
        while True:
            try:
                msg = channel.read()
            except ProtocolError as e:
                _log("%s: protocol error from the client: %s" % (name, e))
                _send_error(channel, "protocol error: %s" % e)
                return
            if msg is None:
                if auth is not None and not auth.done and auth.client_nonce is not None:
                    _log("%s: refused a client%s: it hung up after the challenge: it holds a different secret, "
                         "which does not match this server's proof" % (name, peer))
                return
            header, payload = msg
            kind = header["type"]
            rid = header.get("id")
            channel.request_id = rid if _is_id(rid) else None
            try:
                if rid is None and kind != "hello":
                    # (a hello without one is refused by its version check)
                    raise ProtocolError("a %r request without an \"id\" (protocol %d numbers every request)" % (kind, VERSION))
                if rid is not None and not _is_id(rid):
                    raise ProtocolError("request id %r is not a whole number" % (rid,))
                if kind in ("challenge", "auth"):
                    if auth is None:
                        raise ProtocolError("this server has no secret, so there is nothing to authenticate: leave env.args.secret_file out "
                                            "(or start the server with --secret-file)")
                    auth.answer(channel, kind, header)
                elif auth is not None and not auth.done:
                    raise AuthError("this server requires authentication (protocol %d): set env.args.secret_file to a file holding "
                                    "the secret of the server's --secret-file" % VERSION)
                elif kind == "hello":
                    if backend is not None:
                        raise ProtocolError("a second hello")
                    backend = _hello(channel, header, factory, fixed_num_envs)
                elif kind == "close":
                    channel.write({"type": "bye"})
                    return
                elif backend is None:
                    raise ProtocolError("%r before hello" % kind)
                elif kind == "reset":
                    seed = header.get("seed")
                    if seed is not None and not isinstance(seed, int):
                        raise ProtocolError("reset seed %r is not an integer or null" % (seed,))
                    obs = f32_bytes(backend.reset(seed))
                    _check_len("reset observations", len(obs), 4 * backend.num_envs * backend.observation_space["dim"])
                    channel.write({"type": "reset", "id": channel.request_id}, obs)
                elif kind == "step":
                    _step(channel, backend, payload)
                else:
                    handle = getattr(backend, "handle", None)
                    if handle is None:
                        raise UnknownMessage()
                    reply, data = handle(kind, header, payload)
                    channel.write(reply, data)
            except ProtocolError as e:
                _send_error(channel, "protocol error: %s" % e)
                return
            except AuthError as e:
                _log("%s: refused a client%s: %s" % (name, peer, e))
                _send_error(channel, "authentication failed: %s" % e)
                return
            except UnknownMessage:
                _send_error(channel, "unknown message type %r (this server speaks protocol %d)" % (kind, VERSION))
            except (BrokenPipeError, ConnectionError):
                raise
            except Exception as e:  # environment code failed: tell the client
                tb = traceback.format_exc()
                _log("%s: %s failed: %s: %s" % (name, kind, type(e).__name__, e))
                _send_error(channel, "%s: %s" % (type(e).__name__, e), tb)
    except (BrokenPipeError, ConnectionError):
        return  # the client went away
    finally:
        if backend is not None:
            try:
                backend.close()
            except Exception:
                pass


class _Auth(object):
    """The server's side of the challenge and response (PROTOCOL.md,
    Authentication)."""

    CLIENT_LABEL = b"agenttrainer remote v3 client proof"
    SERVER_LABEL = b"agenttrainer remote v3 server proof"

    def __init__(self, secret):
        self.secret = secret
        self.client_nonce = None
        self.server_nonce = None
        self.done = False

    def _proof(self, label):
        m = hmac.new(self.secret, label + b"\0" + self.client_nonce.encode("ascii") + self.server_nonce.encode("ascii"), hashlib.sha256)
        return m.hexdigest()

    def answer(self, channel, kind, header):
        if self.done:
            raise ProtocolError("a second %r after authentication" % kind)
        if kind == "challenge":
            if self.client_nonce is not None:
                raise ProtocolError("a second challenge")
            nonce = header.get("nonce")
            if not isinstance(nonce, str) or len(nonce) != 2 * NONCE_BYTES or nonce.strip("0123456789abcdef"):
                raise AuthError("the challenge's nonce must be %d lower-case hex digits" % (2 * NONCE_BYTES))
            self.client_nonce = nonce
            self.server_nonce = os.urandom(NONCE_BYTES).hex()
            channel.write({"type": "challenge", "protocol": VERSION, "nonce": self.server_nonce,
                           "proof": self._proof(self.SERVER_LABEL)})
            return
        if self.client_nonce is None:
            raise AuthError("auth before challenge")
        got = header.get("proof")
        if not isinstance(got, str) or not hmac.compare_digest(got.encode("ascii", "replace"), self._proof(self.CLIENT_LABEL).encode("ascii")):
            raise AuthError("the client's proof does not match this server's secret: give env.args.secret_file the secret of the "
                            "server's --secret-file")
        self.done = True
        channel.write({"type": "auth", "ok": True})


NONCE_BYTES = 32
MIN_SECRET_BYTES = 16


def read_secret(path):
    """The secret in path (trailing white space dropped); refuses a file
    other users may read, or a secret under MIN_SECRET_BYTES."""
    st = os.stat(path)
    if os.name == "posix" and st.st_mode & 0o007:
        raise SystemExit("the secret file %s may be read or written by other users (mode %04o): run chmod 600 %s"
                         % (path, st.st_mode & 0o777, path))
    with open(path, "rb") as f:
        secret = f.read(1 << 16).rstrip(b" \t\r\n")
    if len(secret) < MIN_SECRET_BYTES:
        raise SystemExit("the secret in %s is %d bytes, fewer than %d: write a random one, e.g. "
                         "head -c 32 /dev/urandom | base64 > %s; chmod 600 %s" % (path, len(secret), MIN_SECRET_BYTES, path, path))
    return secret


def _is_id(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64


def _send_error(channel, message, tb=None):
    header = {"type": "error", "message": message}
    if tb:
        header["traceback"] = tb
    try:
        channel.write(header)
    except (OSError, ValueError):
        pass


def _check_len(what, got, want):
    if got != want:
        raise RuntimeError("server bug: %s are %d bytes, want %d" % (what, got, want))


def _hello(channel, header, factory, fixed_num_envs):
    version = header.get("protocol")
    if version not in ACCEPTED_VERSIONS:
        raise ProtocolError("client speaks protocol version %r, this server speaks %s" % (version, " and ".join(str(v) for v in ACCEPTED_VERSIONS)))
    if header.get("id") is None:
        raise ProtocolError("hello without an \"id\" (protocol %d numbers every request)" % VERSION)
    n = header.get("num_envs")
    if not isinstance(n, int) or n < 1:
        raise ProtocolError("num_envs %r is not a positive integer" % (n,))
    if fixed_num_envs is not None and n != fixed_num_envs:
        raise ProtocolError("this server was started with --num-envs %d; the client asks for %d (set env.num_envs = %d)"
                            % (fixed_num_envs, n, fixed_num_envs))
    offset = header.get("env_offset", 0)
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ProtocolError("env_offset %r is not a whole number" % (offset,))
    options = header.get("options") or {}
    backend = factory(n, options, offset) if _takes_offset(factory) else factory(n, options)
    reply = {
        "type": "hello",
        "protocol": version,
        "num_envs": backend.num_envs,
        "env": getattr(backend, "env_name", ""),
        "observation_space": backend.observation_space,
        "action_space": backend.action_space,
        "max_episode_steps": int(getattr(backend, "max_episode_steps", 0) or 0),
        "reports_success": bool(getattr(backend, "reports_success", False)),
    }
    channel.write(reply)
    return backend


def _takes_offset(factory):
    """Whether factory takes (num_envs, options, env_offset)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _step(channel, backend, payload):
    n = backend.num_envs
    aspace = backend.action_space
    if aspace["kind"] == "discrete":
        if len(payload) != 4 * n:
            raise ProtocolError("step payload is %d bytes, want %d (i32 actions[%d])" % (len(payload), 4 * n, n))
        actions = list(struct.unpack("<%di" % n, payload))
        for i, a in enumerate(actions):
            if not 0 <= a < aspace["n"]:
                raise ProtocolError("action %d for sub-env %d is outside Discrete(%d)" % (a, i, aspace["n"]))
    else:
        dim = aspace["dim"]
        if len(payload) != 4 * n * dim:
            raise ProtocolError("step payload is %d bytes, want %d (f32 actions[%dx%d])" % (len(payload), 4 * n * dim, n, dim))
        flat = f32_values(payload).tolist()
        actions = [flat[i * dim:(i + 1) * dim] for i in range(n)]
    r = backend.step(actions)
    d = backend.observation_space["dim"]
    flags = bytearray(n)
    ended = []
    for i in range(n):
        f = (1 if r.terminated[i] else 0) | (2 if r.truncated[i] else 0)
        flags[i] = f
        if f:
            ended.append(i)
    obs = f32_bytes(r.obs)
    _check_len("step observations", len(obs), 4 * n * d)
    parts = [obs, f64_bytes(r.rewards), bytes(flags)]
    for i in ended:
        fo = f32_bytes(r.final_obs[i])
        _check_len("final observations", len(fo), 4 * d)
        parts.append(fo)
    header = {"type": "step", "id": channel.request_id}
    if getattr(backend, "reports_success", False):
        success = r.success or {}
        header["success"] = [bool(success.get(i, False)) for i in ended]
    channel.write(header, b"".join(parts))


def serve_stdio(factory, fixed_num_envs=None, max_frame=DEFAULT_MAX_FRAME, name="server"):
    """Serve one client over stdin/stdout, keeping stray output off the stream."""
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    # Environment code that prints (to sys.stdout or to fd 1 from C) must not
    # corrupt the protocol stream: send it all to stderr instead, and give it
    # an empty stdin.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # The client decides when this server stops (Ctrl-C in a terminal reaches
    # the whole process group); it exits at end of input.
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):
        pass
    serve_connection(Channel(proto_in, proto_out, max_frame), factory, fixed_num_envs, name)


def _is_loopback(host):
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    for info in infos:
        addr = info[4][0]
        if not (addr.startswith("127.") or addr == "::1"):
            return False
    return bool(infos)


def serve_tcp(factory, host, port, fixed_num_envs=None, max_frame=DEFAULT_MAX_FRAME,
              once=False, allow_remote=False, name="server", secret=None):
    """Serve clients on TCP, each connection with its own sub-environments;
    with a secret, only clients that prove they hold it."""
    if not allow_remote and secret is None and not _is_loopback(host):
        raise SystemExit("%s: %s is not a loopback address: give the server a shared secret with --secret-file "
                         "(clients then need env.args.secret_file), or pass --allow-remote on a network you trust" % (name, host))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    srv = socket.socket(family, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, port))
    srv.listen(8)
    bound = srv.getsockname()
    _log("%s: listening on %s:%d" % (name, bound[0] if family == socket.AF_INET else "[%s]" % bound[0], bound[1]))

    def handle(conn, peer):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        rfile = conn.makefile("rb")
        wfile = conn.makefile("wb")
        try:
            serve_connection(Channel(rfile, wfile, max_frame), factory, fixed_num_envs, name, secret, " from %s:%s" % peer[:2])
        finally:
            for f in (rfile, wfile):
                try:
                    f.close()
                except OSError:
                    pass
            conn.close()

    try:
        while True:
            conn, peer = srv.accept()
            if once:
                handle(conn, peer)
                return
            threading.Thread(target=handle, args=(conn, peer), daemon=True).start()
    except KeyboardInterrupt:
        pass
    finally:
        srv.close()


def add_server_args(parser):
    parser.add_argument("--listen", metavar="HOST:PORT",
                        help="serve on TCP (loopback unless --allow-remote) instead of stdin/stdout; port 0 picks a free one")
    parser.add_argument("--num-envs", type=int, default=None,
                        help="serve exactly this many sub-environments (default: as many as the client asks for)")
    parser.add_argument("--once", action="store_true", help="with --listen: exit after the first client")
    parser.add_argument("--allow-remote", action="store_true",
                        help="with --listen: accept a non-loopback address without a secret (a network you trust)")
    parser.add_argument("--secret-file", metavar="FILE",
                        help="with --listen: clients must prove they hold the secret in FILE (env.args.secret_file); "
                             "a non-loopback address is then allowed")
    parser.add_argument("--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME, help="largest request payload accepted")


def serve_main(factory, args, name="server"):
    """Serve as args (from a parser given add_server_args) say."""
    if args.listen:
        host, sep, port = args.listen.rpartition(":")
        if not sep or not port.isdigit():
            raise SystemExit("%s: --listen wants HOST:PORT, got %r" % (name, args.listen))
        host = host.strip("[]")
        secret = read_secret(args.secret_file) if args.secret_file else None
        serve_tcp(factory, host, int(port), args.num_envs, args.max_frame_bytes, args.once, args.allow_remote, name, secret)
    else:
        if args.secret_file:
            raise SystemExit("%s: --secret-file authenticates TCP clients (with --listen); over stdin and stdout "
                             "the client started the server itself" % name)
        serve_stdio(factory, args.num_envs, args.max_frame_bytes, name)

