// Package remote is the environment served by another process: the remote protocol, its transports and the batch backend registered as "remote".
package remote

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/anynum"
	"github.com/agenttrainer/agenttrainer/internal/suggest"
)

// RemoteID is the env.id of environments served by another process over
// the remote protocol (remote/PROTOCOL.md).
const RemoteID = "remote"

// Defaults of the remote environment's env.args.
const (
	DefaultRemoteTimeout          = 30 * time.Second
	DefaultRemoteHandshakeTimeout = 15 * time.Second
)

// maxTimeoutSeconds bounds env.args.timeout_s and handshake_timeout_s.
const maxTimeoutSeconds = 86400

// ErrRemoteIsBatch is what the registry's constructor for "remote" answers:
// a remote server steps all sub-environments with one message, so they are
// built together by NewRemoteVector (the registry entry's NewBatch).
var ErrRemoteIsBatch = errors.New("remote environments are built as one batch of env.num_envs sub-environments by remote.NewRemoteVector, not one at a time; " +
	"set env.args.command (a server to start, e.g. [\"python3\", \"remote/gym_server.py\", \"--env\", \"CartPole-v1\"]) or env.args.address (one already listening, e.g. \"127.0.0.1:5555\"); see remote/PROTOCOL.md")

// init adds "remote" to the registry as a batch environment: NewBatch
// builds all sub-environments at once, and New answers ErrRemoteIsBatch.
func init() {
	envs.Register(envs.Spec{
		ID:          RemoteID,
		Description: "an environment served by other processes (Gymnasium via remote/gym_server.py, any language): env.args.command or env.args.address; env.args.workers for several",
		New:         func(envs.Params) (envs.Env, error) { return nil, ErrRemoteIsBatch },
		NewBatch:    NewRemoteVector,
	})
}

// RemoteOptions configure a connection to an environment server, or to
// several (workers); they are parsed from env.args by ParseRemoteArgs.
type RemoteOptions struct {
	Command     []string          // a server to start, speaking over its stdin/stdout
	Dir         string            // the command's working directory ("" = ours)
	Env         map[string]string // variables added to the command's environment
	Address     string            // or a server listening on TCP at HOST:PORT
	AllowRemote bool              // accept an Address that is not loopback

	Timeout          time.Duration // bound on every request after the handshake
	HandshakeTimeout time.Duration // bound on start-up, connecting and hello
	MaxFrameBytes    int           // bound on a frame's payload

	// Stderr, when set, receives a copy of the server's stderr; the last
	// lines are kept for error messages either way.
	Stderr io.Writer
	// Options are sent to the server in hello (env.args.options).
	Options map[string]any

	// Secret, when set, authenticates the connection to a TCP server
	// (env.args.secret_file; remote/PROTOCOL.md, Authentication).
	Secret     []byte
	SecretFile string
	// EnvOffset is the index of the connection's first sub-environment
	// among all workers' (the hello's env_offset).
	EnvOffset int

	Pool PoolOptions // several workers (env.args.workers and what goes with it)
}

// PoolOptions say how many servers (workers) share the sub-environments
// and how they are found, started and stepped.
type PoolOptions struct {
	Workers        int      // servers sharing env.num_envs (0 or 1: one)
	Addresses      []string // env.args.address as a list: connection j goes to Addresses[j mod len]
	BatchSize      int      // asynchronous stepping: sub-environments per rollout step (0: all)
	RestartWorkers bool     // restart a failed worker instead of stopping
	MaxRestarts    int      // restarts allowed over the pool's life
	Rendezvous     string   // a directory where env servers announce HOST:PORT
	Launcher       string   // "srun": start env servers on the allocation's nodes
	SrunArgs       []string // extra srun arguments
	LaunchTimeout  time.Duration
	ServerExe      string // the agenttrainer binary srun runs (default: this program)
}

// Defaults of the worker pool's env.args.
const (
	DefaultMaxRestarts   = 10
	DefaultLaunchTimeout = 5 * time.Minute
	// MaxWorkers bounds env.args.workers: each is a process or a connection.
	MaxWorkers = 1024
)

var remoteArgKeys = []string{"command", "dir", "env", "address", "allow_remote", "timeout_s", "handshake_timeout_s", "max_frame_bytes", "stderr", "options",
	"workers", "batch_size", "restart_workers", "max_restarts", "secret_file", "rendezvous", "launcher", "srun_args", "launch_timeout_s", "server_exe"}

// ParseRemoteArgs reads the remote environment's env.args:
//
//	command             ["python3", "server.py", …] (or one string, split on spaces)
//	dir                 working directory for command
//	env                 a table of environment variables for command, e.g. {PYTHONPATH = "…"}
//	address             "127.0.0.1:PORT" (instead of command), or a list of them
//	allow_remote        accept a non-loopback address (default false)
//	secret_file         a file holding the secret shared with the servers at address or rendezvous
//	timeout_s           seconds a request may take (default 30; at most 86400)
//	handshake_timeout_s seconds start-up and hello may take (default 15; at most 86400)
//	max_frame_bytes     largest payload accepted (default 64 MiB)
//	stderr              "capture" (default: keep the last lines for errors) or "inherit" (also copy to ours)
//	options             a table passed to the server in hello
//	workers             servers sharing env.num_envs, stepped concurrently (default 1, or one per address)
//	batch_size          step asynchronously: each rollout step takes the first batch_size ready sub-environments
//	restart_workers     restart a worker that fails, truncating its episodes (default false)
//	max_restarts        restarts allowed over the run (default 10)
//	rendezvous          a directory where env servers announce their HOST:PORT (agenttrainer env-server --announce)
//	launcher            "srun": start the workers on a Slurm allocation's nodes
//	srun_args           extra arguments for srun, e.g. ["--cpus-per-task=2"]
//	launch_timeout_s    seconds to wait for launched or announced servers (default 300)
//	server_exe          the agenttrainer binary srun starts (default: this program)
func ParseRemoteArgs(args envs.Params) (RemoteOptions, error) {
	o := RemoteOptions{Timeout: DefaultRemoteTimeout, HandshakeTimeout: DefaultRemoteHandshakeTimeout, MaxFrameBytes: DefaultMaxFrameBytes}
	o.Pool.MaxRestarts, o.Pool.LaunchTimeout = DefaultMaxRestarts, DefaultLaunchTimeout
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	maxRestartsSet := false
	for _, k := range keys {
		v := args[k]
		bad := func(want string) error {
			return fmt.Errorf("env.args.%s must be %s, got %v (%T)", k, want, v, v)
		}
		switch k {
		case "command", "srun_args":
			list, ok := stringList(v, k == "command")
			if !ok {
				return o, bad(`a list of strings such as ["python3", "server.py"]`)
			}
			if k == "srun_args" {
				o.Pool.SrunArgs = list
				continue
			}
			o.Command = list
			if len(o.Command) == 0 || o.Command[0] == "" {
				return o, fmt.Errorf("env.args.command is empty; give the server to start, e.g. [\"python3\", \"remote/cartpole_server.py\"]")
			}
		case "address":
			list, ok := stringList(v, false)
			if !ok || len(list) == 0 {
				return o, bad(`"HOST:PORT" or a list of them such as ["10.0.0.5:5555", "10.0.0.6:5555"]`)
			}
			for _, a := range list {
				if a == "" {
					return o, bad(`"HOST:PORT" or a list of them such as ["10.0.0.5:5555", "10.0.0.6:5555"]`)
				}
			}
			if len(list) == 1 {
				o.Address = list[0]
			} else {
				o.Pool.Addresses = list
			}
		case "dir", "stderr", "secret_file", "rendezvous", "launcher", "server_exe":
			s, ok := v.(string)
			if !ok {
				return o, bad("a string")
			}
			switch k {
			case "dir":
				o.Dir = s
			case "secret_file":
				o.SecretFile = s
			case "rendezvous":
				o.Pool.Rendezvous = s
			case "server_exe":
				o.Pool.ServerExe = s
			case "launcher":
				if s != "srun" {
					return o, fmt.Errorf("env.args.launcher must be \"srun\" (start the workers on a Slurm allocation's nodes), got %q", s)
				}
				o.Pool.Launcher = s
			case "stderr":
				switch s {
				case "capture":
					o.Stderr = nil
				case "inherit":
					o.Stderr = os.Stderr
				default:
					return o, fmt.Errorf("env.args.stderr must be \"capture\" or \"inherit\", got %q", s)
				}
			}
		case "allow_remote", "restart_workers":
			b, ok := v.(bool)
			if !ok {
				return o, bad("true or false")
			}
			if k == "allow_remote" {
				o.AllowRemote = b
			} else {
				o.Pool.RestartWorkers = b
			}
		case "timeout_s", "handshake_timeout_s", "launch_timeout_s":
			f, ok := anynum.Float(v)
			if !ok || !(f > 0) || f > maxTimeoutSeconds {
				return o, bad(fmt.Sprintf("a number of seconds above 0 and at most %d (one day)", maxTimeoutSeconds))
			}
			d := time.Duration(f * float64(time.Second))
			switch k {
			case "timeout_s":
				o.Timeout = d
			case "handshake_timeout_s":
				o.HandshakeTimeout = d
			default:
				o.Pool.LaunchTimeout = d
			}
		case "workers", "batch_size", "max_restarts":
			lo, hi := 1, MaxWorkers
			if k == "batch_size" {
				hi = math.MaxInt32
			}
			if k == "max_restarts" {
				lo, hi = 0, 1_000_000
			}
			f, ok := anynum.Float(v)
			if !ok || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
				return o, bad(fmt.Sprintf("a whole number from %d to %d", lo, hi))
			}
			switch k {
			case "workers":
				o.Pool.Workers = int(f)
			case "batch_size":
				o.Pool.BatchSize = int(f)
			default:
				o.Pool.MaxRestarts, maxRestartsSet = int(f), true
			}
		case "max_frame_bytes":
			f, ok := anynum.Float(v)
			if !ok || f != math.Trunc(f) || f < 1024 || f > math.MaxInt32 {
				return o, bad(fmt.Sprintf("a whole number of bytes from 1024 to %d", math.MaxInt32))
			}
			o.MaxFrameBytes = int(f)
		case "env":
			m, ok := v.(map[string]any)
			if !ok {
				if ms, isMS := v.(map[string]string); isMS {
					m, ok = map[string]any{}, true
					for k, x := range ms {
						m[k] = x
					}
				}
			}
			if !ok {
				return o, bad(`a table of strings such as {PYTHONPATH = "lib"}`)
			}
			o.Env = map[string]string{}
			for name, x := range m {
				s, isS := x.(string)
				if !isS || name == "" || strings.ContainsAny(name, "=\x00") {
					return o, bad(`a table of strings such as {PYTHONPATH = "lib"}`)
				}
				o.Env[name] = s
			}
		case "options":
			m, ok := v.(map[string]any)
			if !ok {
				if p, isP := v.(envs.Params); isP {
					m, ok = p, true
				}
			}
			if !ok {
				return o, bad("a table")
			}
			o.Options = m
		default:
			msg := fmt.Sprintf("env.args.%s is not an argument of the remote environment (it takes %s)", k, strings.Join(remoteArgKeys, ", "))
			return o, errors.New(msg + suggest.DidYouMean(suggest.Names(k, remoteArgKeys)))
		}
	}
	err := o.check(maxRestartsSet)
	return o, err
}

// check refuses combinations of env.args that cannot work together.
func (o *RemoteOptions) check(maxRestartsSet bool) error {
	p := &o.Pool
	tcp := o.Address != "" || len(p.Addresses) > 0
	switch {
	case len(o.Command) > 0 && tcp:
		return errors.New("env.args has both command and address; give command to start a server, or address to connect to one that is running")
	case p.Rendezvous != "" && (tcp || (len(o.Command) > 0 && p.Launcher == "")):
		return errors.New("env.args.rendezvous finds servers that announce themselves there (agenttrainer env-server --announce DIR); it goes without env.args.address, and with env.args.command only when env.args.launcher starts them")
	case p.Launcher != "" && len(o.Command) == 0:
		return errors.New("env.args.launcher = \"srun\" starts env.args.command (a server over stdin/stdout) on every worker's node under agenttrainer env-server; set env.args.command")
	case tcp && (o.Dir != "" || o.Env != nil):
		return errors.New("env.args.dir and env.args.env apply to a server started with env.args.command, not to one at env.args.address")
	case len(o.Command) == 0 && !tcp && p.Rendezvous == "":
		return errors.New("the remote environment needs env.args.command (a server to start over stdin/stdout, e.g. [\"python3\", \"remote/cartpole_server.py\"]), " +
			"env.args.address (a server listening on TCP, e.g. \"127.0.0.1:5555\") or env.args.rendezvous (a directory where servers announce themselves); see remote/PROTOCOL.md")
	case o.SecretFile != "" && len(o.Command) > 0 && p.Launcher == "":
		return errors.New("env.args.secret_file authenticates servers at env.args.address or env.args.rendezvous; a server started with env.args.command talks over its own stdin and stdout, which need none")
	case o.SecretFile != "" && p.Launcher != "":
		return errors.New("env.args.launcher makes a fresh secret for the servers it starts; leave env.args.secret_file out")
	case p.BatchSize > 0 && p.Workers < 2 && len(p.Addresses) < 2:
		return errors.New("env.args.batch_size steps the sub-environments of several workers asynchronously; set env.args.workers to 2 or more (one server steps all its sub-environments with one message)")
	case maxRestartsSet && !p.RestartWorkers:
		return errors.New("env.args.max_restarts bounds env.args.restart_workers; set restart_workers = true as well")
	case p.Launcher == "" && (len(p.SrunArgs) > 0 || p.ServerExe != ""):
		return errors.New("env.args.srun_args and env.args.server_exe apply to env.args.launcher = \"srun\"")
	}
	if len(p.Addresses) > 0 && p.Workers != 0 && p.Workers < len(p.Addresses) {
		return fmt.Errorf("env.args.address lists %d servers but env.args.workers = %d: each address needs at least one worker (leave workers out for one per address)", len(p.Addresses), p.Workers)
	}
	if o.SecretFile != "" {
		s, err := ReadSecret(o.SecretFile)
		if err != nil {
			return fmt.Errorf("env.args.secret_file: %v", err)
		}
		o.Secret = s
	}
	return nil
}

// stringList reads a list of strings (or, when splitOne, one string split
// on spaces; else one string as a list of one).
func stringList(v any, splitOne bool) ([]string, bool) {
	switch c := v.(type) {
	case string:
		if splitOne {
			return strings.Fields(c), true
		}
		return []string{c}, true
	case []string:
		return slices.Clone(c), true
	case []any:
		out := make([]string, 0, len(c))
		for _, x := range c {
			s, ok := x.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

// workerCount is how many servers share the sub-environments.
func (o *RemoteOptions) workerCount() int {
	switch {
	case o.Pool.Workers > 0:
		return o.Pool.Workers
	case len(o.Pool.Addresses) > 0:
		return len(o.Pool.Addresses)
	}
	return 1
}

// NewRemoteVector connects to the environment server that args describe
// (see ParseRemoteArgs), asks it for n sub-environments and wraps them in a
// Vector. Check v.Err() after every Step and Reset, and call v.Close() when
// done (it stops a server the vector started).
func NewRemoteVector(n int, args envs.Params) (*envs.Vector, error) {
	o, err := ParseRemoteArgs(args)
	if err != nil {
		return nil, &envs.ArgsError{Err: err}
	}
	var b envs.BatchEnv
	if o.usesPool() {
		b, err = OpenPool(n, o)
	} else {
		b, err = OpenRemote(n, o)
	}
	if err != nil {
		return nil, err
	}
	v, err := envs.NewBatchVector(b)
	if err != nil {
		b.Close()
		return nil, err
	}
	return v, nil
}

// usesPool reports whether the options need a WorkerPool rather than one
// connection.
func (o *RemoteOptions) usesPool() bool {
	p := &o.Pool
	return o.workerCount() > 1 || p.Rendezvous != "" || p.Launcher != "" || p.RestartWorkers
}

// RemoteEnv is a connection to an environment server: a BatchEnv whose N
// sub-environments step with one message each way.
type RemoteEnv struct {
	t        remoteTransport
	n        int
	os, as   envs.Space
	layout   stepLayout
	timeout  time.Duration
	maxFrame int

	env             string
	maxEpisodeSteps int
	reportsSuccess  bool
	success         []bool

	rbuf, wbuf, hbuf, payload []byte
	steps                     int64
	lastID                    uint64 // the id of the last request sent
	broken                    error  // the stream failed: no more requests
	closed                    bool
}

// OpenRemote starts or connects to the server and performs the handshake,
// asking for n sub-environments.
func OpenRemote(n int, o RemoteOptions) (*RemoteEnv, error) {
	if n < 1 {
		return nil, fmt.Errorf("the remote environment needs at least one sub-environment (env.num_envs), got %d", n)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultRemoteTimeout
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = DefaultRemoteHandshakeTimeout
	}
	if o.MaxFrameBytes <= 0 {
		o.MaxFrameBytes = DefaultMaxFrameBytes
	}
	var t remoteTransport
	var err error
	if len(o.Command) > 0 {
		t, err = startRemoteProcess(o)
	} else {
		t, err = dialRemote(o)
	}
	if err != nil {
		return nil, err
	}
	return openRemote(t, n, o)
}

// openRemote performs the handshake over t, closing t when it fails.
func openRemote(t remoteTransport, n int, o RemoteOptions) (*RemoteEnv, error) {
	r := &RemoteEnv{t: t, n: n, timeout: o.Timeout, maxFrame: o.MaxFrameBytes}
	if err := r.handshake(o); err != nil {
		r.broken = err
		r.Close()
		return nil, err
	}
	return r, nil
}

// helloRequest is the hello request's header; call adds the id.
type helloRequest struct {
	Type      string         `json:"type"`
	Protocol  int            `json:"protocol"`
	NumEnvs   int            `json:"num_envs"`
	EnvOffset int            `json:"env_offset,omitempty"`
	Client    string         `json:"client"`
	Options   map[string]any `json:"options,omitempty"`
}

func (r *RemoteEnv) handshake(o RemoteOptions) error {
	// A step reply holds at least 17 bytes per sub-environment (a 1-float
	// observation and final observation, a reward, the flags).
	if need := 17 * int64(r.n); need > int64(r.maxFrame) {
		return r.errorf("handshake", "%d sub-environments (env.num_envs) need step replies of at least %d bytes, over the limit of %d (env.args.max_frame_bytes): raise env.args.max_frame_bytes or use fewer env.num_envs",
			r.n, need, r.maxFrame)
	}
	if o.Secret != nil {
		if err := r.authenticate(o.Secret, o); err != nil {
			return err
		}
	}
	f, err := r.call(helloRequest{Type: "hello", Protocol: RemoteProtocolVersion, NumEnvs: r.n, EnvOffset: o.EnvOffset, Client: "agenttrainer", Options: o.Options}, nil, "handshake", o.HandshakeTimeout)
	if err != nil {
		if strings.Contains(err.Error(), "speaks 2") || strings.Contains(err.Error(), "speaks protocol 2") {
			err = fmt.Errorf("%w\n(this client speaks protocol %d; the server's remote/protocol.py is older: copy this agenttrainer's remote/protocol.py next to it, or serve it with agenttrainer env-server)", err, RemoteProtocolVersion)
			r.broken = err
		}
		return err
	}
	h := &f.Header
	fail := func(format string, args ...any) error {
		return r.errorf("handshake", format, args...)
	}
	if h.Type != "hello" {
		return fail("the server answered hello with a %q message: it does not speak the agenttrainer remote protocol (remote/PROTOCOL.md)", h.Type)
	}
	// A conversation without authentication is version 2's: an older
	// server's hello reply is as good.
	if h.Protocol != RemoteProtocolVersion && (h.Protocol != 2 || o.Secret != nil) {
		return fail("the server speaks protocol version %d, this client speaks %d: use the protocol.py that comes with this agenttrainer (remote/protocol.py)", h.Protocol, RemoteProtocolVersion)
	}
	if !h.HasID { // call let it through for the version check above
		return r.breakf("handshake", "%s", idMismatch(h, r.lastID))
	}
	if h.NumEnvs != r.n {
		return fail("the server serves %d sub-environments, env.num_envs asks for %d: set env.num_envs = %d or start the server without a fixed --num-envs", h.NumEnvs, r.n, h.NumEnvs)
	}
	if len(f.Payload) != 0 {
		return fail("the hello reply has a %d-byte payload, want none", len(f.Payload))
	}
	// Frames must fit env.args.max_frame_bytes: a step reply holds two
	// observations, a reward and the flags per sub-environment, a step
	// request one action of 4-byte elements. Checked before any buffer is
	// sized from the spaces.
	n, limit := int64(r.n), int64(r.maxFrame)
	obsFits := func(dim int) error {
		if need := 8*n*int64(dim) + 9*n; need > limit {
			return frameErrorf("the observation_space is a box with dim = %d: a step reply for %d sub-environments may need %d bytes (f32 obs and final_obs of %d floats, f64 reward and u8 flags each), over the limit of %d (env.args.max_frame_bytes): raise env.args.max_frame_bytes or use fewer env.num_envs",
				dim, r.n, need, dim, limit)
		}
		return nil
	}
	actFits := func(dim int) error {
		if need := 4 * n * int64(dim); need > limit {
			return frameErrorf("the action_space is a box with dim = %d: a step request for %d sub-environments needs %d bytes (f32 actions[%d×%d]), over the limit of %d (env.args.max_frame_bytes): raise env.args.max_frame_bytes or use fewer env.num_envs",
				dim, r.n, need, r.n, dim, limit)
		}
		return nil
	}
	if r.os, err = decodeSpace(h.ObservationSpace, "observation_space", MaxObsDim, obsFits); err != nil {
		return fail("%v", err)
	}
	if r.os.Kind != envs.Box {
		return fail("the observation_space is %v; observations must be a box (flatten or one-hot encode them on the server)", r.os)
	}
	if r.as, err = decodeSpace(h.ActionSpace, "action_space", MaxActionDim, actFits); err != nil {
		return fail("%v", err)
	}
	r.layout = stepLayout{n: r.n, d: r.os.Dim}
	r.env, r.maxEpisodeSteps, r.reportsSuccess = h.Env, h.MaxEpisodeSteps, h.ReportsSuccess
	r.success = make([]bool, r.n)
	r.payload = make([]byte, 0, 4*r.n*r.as.Size())
	return nil
}

// NumEnvs implements BatchEnv.
func (r *RemoteEnv) NumEnvs() int { return r.n }

// ObservationSpace implements BatchEnv.
func (r *RemoteEnv) ObservationSpace() envs.Space { return r.os }

// ActionSpace implements BatchEnv.
func (r *RemoteEnv) ActionSpace() envs.Space { return r.as }

// Name is the environment's name as the server gave it at handshake.
func (r *RemoteEnv) Name() string { return r.env }

// MaxEpisodeSteps is the server's time limit (0 when it gave none); the
// server applies it, this is for display.
func (r *RemoteEnv) MaxEpisodeSteps() int { return r.maxEpisodeSteps }

// String describes the server.
func (r *RemoteEnv) String() string { return r.t.String() }

// ReportsSuccess implements BatchSuccessReporter.
func (r *RemoteEnv) ReportsSuccess() bool { return r.reportsSuccess }

// Succeeded implements BatchSuccessReporter.
func (r *RemoteEnv) Succeeded(i int) bool { return r.success[i] }

// resetRequest is the reset request's header; call adds the id.
type resetRequest struct {
	Type string `json:"type"`
	Seed *int64 `json:"seed"`
}

// stepRequest is the step request's header, encoded (and boxed) once; call
// adds the id.
var stepRequest any = []byte(`{"type":"step"}`)

// Reset implements BatchEnv.
func (r *RemoteEnv) Reset(seed int64, obs []float32) error {
	req := resetRequest{Type: "reset"}
	if seed != envs.NoSeed {
		req.Seed = &seed
	}
	f, err := r.call(req, nil, "reset", r.timeout)
	if err != nil {
		return err
	}
	if f.Header.Type != "reset" {
		return r.breakf("reset", "the server answered reset with a %q message, want \"reset\"", f.Header.Type)
	}
	if want := 4 * r.n * r.os.Dim; len(f.Payload) != want {
		return r.breakf("reset", "the reset reply's payload is %d bytes, want %d (f32 obs[%d×%d]): the server's observations do not match the observation_space it declared (%v)",
			len(f.Payload), want, r.n, r.os.Dim, r.os)
	}
	decodeF32(obs[:r.n*r.os.Dim], f.Payload)
	if err := r.checkObs(obs, nil, nil, "reset", "first observation"); err != nil {
		return err
	}
	return nil
}

// Step implements BatchEnv.
func (r *RemoteEnv) Step(actions, obs, finalObs []float32, rewards []float64, terminated, truncated []bool) error {
	r.steps++
	const op = "step" // errorf adds the request's number
	if r.broken != nil {
		return r.broken
	}
	p := r.payload[:0]
	if r.as.Kind == envs.Discrete {
		for i, a := range actions[:r.n] {
			if !(a >= 0 && a < float32(r.as.N)) || a != float32(int32(a)) {
				return r.breakf(op, "the action %v for sub-environment %d is not in %v", a, i, r.as)
			}
			p = binary.LittleEndian.AppendUint32(p, uint32(int32(a)))
		}
	} else {
		p = appendF32(p, actions[:r.n*r.as.Dim])
	}
	r.payload = p
	f, err := r.call(stepRequest, p, op, r.timeout)
	if err != nil {
		return err
	}
	if f.Header.Type != "step" {
		return r.breakf(op, "the server answered step with a %q message, want \"step\"", f.Header.Type)
	}
	k, err := r.layout.decode(f.Payload, obs, finalObs, rewards, terminated, truncated)
	if err != nil {
		return r.breakf(op, "%v", err)
	}
	if err := r.checkObs(obs, nil, nil, op, "observation"); err != nil {
		return err
	}
	if err := r.checkObs(finalObs, terminated, truncated, op, "final observation"); err != nil {
		return err
	}
	for i, x := range rewards[:r.n] {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return r.breakf(op, "the server sent a non-finite reward (%v) for sub-environment %d: check the environment's reward", x, i)
		}
		if math.Abs(x) > math.MaxFloat32 {
			return r.breakf(op, "the server sent a reward of %v for sub-environment %d, beyond float32 range: scale the environment's reward", x, i)
		}
	}
	if r.reportsSuccess {
		if len(f.Header.Success) != k {
			return r.breakf(op, "the step reply has %d success flags for %d ended episodes", len(f.Header.Success), k)
		}
		j := 0
		for i := range r.n {
			r.success[i] = false
			if terminated[i] || truncated[i] {
				r.success[i] = f.Header.Success[j]
				j++
			}
		}
	}
	return nil
}

// checkObs refuses NaN and ±Inf in the rows of obs: all rows when term is
// nil, else the rows of sub-environments whose episode ended.
func (r *RemoteEnv) checkObs(obs []float32, term, trunc []bool, op, what string) error {
	d := r.os.Dim
	for i := range r.n {
		if term != nil && !term[i] && !trunc[i] {
			continue
		}
		if j := firstNonFinite(obs[i*d : (i+1)*d]); j >= 0 {
			return r.breakf(op, "the server sent a non-finite %s (%v in element %d of sub-environment %d): check the environment's dynamics and observation wrappers",
				what, obs[i*d+j], j, i)
		}
	}
	return nil
}

// Close implements BatchEnv: it says goodbye when the connection is sound,
// and stops a server it started (killing it if it does not exit promptly).
func (r *RemoteEnv) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	defer func() {
		if r.broken == nil {
			r.broken = r.errorf("close", "the remote environment was closed")
		}
	}()
	if r.broken == nil {
		wait := min(r.timeout, 2*time.Second)
		if f, err := r.call(struct {
			Type string `json:"type"`
		}{"close"}, nil, "close", wait); err == nil && f.Header.Type == "bye" {
			r.t.finish(wait)
			return nil
		}
	}
	return r.t.Close()
}

// call sends one request and reads its reply within timeout. It gives the
// request the next id and makes sure the reply echoes it. Any failure
// breaks the connection for good and comes back as an error that names the
// server, the request and what to check.
func (r *RemoteEnv) call(header any, payload []byte, op string, timeout time.Duration) (frame, error) {
	if r.broken != nil {
		return frame{}, r.broken
	}
	hb, ok := header.([]byte)
	if !ok {
		var err error
		if hb, err = json.Marshal(header); err != nil {
			return frame{}, r.breakf(op, "cannot encode the request: %v", err)
		}
	}
	r.lastID++
	r.hbuf = appendRequestHeader(r.hbuf[:0], hb, r.lastID)
	var err error
	r.wbuf, err = appendFrameBytes(r.wbuf[:0], r.hbuf, payload)
	if err != nil {
		return frame{}, r.breakf(op, "cannot encode the request: %v", err)
	}
	stop := r.t.arm(timeout)
	defer stop()
	if _, err := r.t.Write(r.wbuf); err != nil {
		return frame{}, r.ioFailure(op, "sending the request", timeout, err)
	}
	f, buf, err := readFrame(r.t, r.rbuf, r.maxFrame)
	r.rbuf = buf
	if err != nil {
		return frame{}, r.ioFailure(op, "waiting for the reply", timeout, err)
	}
	// A server of protocol version 1 sends no ids: its hello reply or error
	// goes on to the version check (or shows its message, which names the
	// versions).
	v1Hello := op == "handshake" && !f.Header.HasID
	if !v1Hello && (!f.Header.HasID || f.Header.ID != r.lastID) {
		return frame{}, r.breakf(op, "%s", idMismatch(&f.Header, r.lastID))
	}
	if f.Header.Type == "error" {
		msg := strings.TrimSpace(f.Header.Message)
		if msg == "" {
			msg = "(no message)"
		}
		if tb := strings.TrimSpace(f.Header.Traceback); tb != "" {
			msg += "\nserver traceback:\n" + indent(tb)
		}
		return frame{}, r.breakf(op, "the server reported an error: %s", msg)
	}
	return f, nil
}

// idMismatch describes a reply h whose id is not want, the request's.
func idMismatch(h *frameHeader, want uint64) string {
	what := fmt.Sprintf("the %q reply", h.Type)
	if h.Type == "error" {
		what = fmt.Sprintf("the error reply (%q)", strings.TrimSpace(h.Message))
	}
	if !h.HasID {
		return fmt.Sprintf("%s carries no request id, want id %d: every reply must echo its request's id; the server breaks remote/PROTOCOL.md version %d",
			what, want, RemoteProtocolVersion)
	}
	return fmt.Sprintf("%s carries request id %d, want %d (the id of this request): the server answered an earlier request again, or out of order, so the conversation is out of step (remote/PROTOCOL.md version %d)",
		what, h.ID, want, RemoteProtocolVersion)
}

func (r *RemoteEnv) errorf(op, format string, args ...any) error {
	if op == "step" { // the protocol's count, one per vector step
		op = fmt.Sprintf("step request %d", r.steps)
	}
	return fmt.Errorf("remote environment %s, %s: %s", r.t, op, fmt.Sprintf(format, args...))
}

// breakf records a failure that leaves the stream unusable and returns it.
func (r *RemoteEnv) breakf(op, format string, args ...any) error {
	return r.fail(r.errorf(op, format, args...), false)
}

// fail adds what the transport knows about the server to err, remembers it
// and drops the connection: a server that broke the conversation, hung or
// crashed is of no further use, and one that hangs must not outlive us.
func (r *RemoteEnv) fail(err error, crashed bool) error {
	if d := r.t.diagnose(crashed); d != "" {
		err = fmt.Errorf("%w\n%s", err, d)
	}
	r.broken = err
	r.t.Close()
	return err
}

// ioFailure turns a transport error into one that says what happened.
func (r *RemoteEnv) ioFailure(op, doing string, timeout time.Duration, err error) error {
	var fe *frameError
	var msg string
	crashed := false
	switch {
	case r.t.timedOut() || errors.Is(err, os.ErrDeadlineExceeded) || isNetTimeout(err):
		key := "env.args.timeout_s"
		if op == "handshake" {
			key = "env.args.handshake_timeout_s"
		}
		what := "this request"
		if op == "handshake" {
			what = "starting it and building its environments"
		}
		msg = fmt.Sprintf("no progress %s within %v (%s): the server is hung, or %s takes longer than that; raise %s if it is only slow", doing, timeout, key, what, key)
	case errors.As(err, &fe):
		msg = fe.msg
		if strings.Contains(fe.msg, "magic") {
			msg += ": the server does not speak the agenttrainer remote protocol (remote/PROTOCOL.md), or something writes to its stdout (logs belong on stderr)"
		} else {
			msg += fmt.Sprintf(": the server breaks remote/PROTOCOL.md version %d", RemoteProtocolVersion)
		}
	case isClosedErr(err):
		crashed = true
		msg = fmt.Sprintf("the server closed the connection while the client was %s: it crashed or exited", doing)
	default:
		msg = fmt.Sprintf("%s failed: %v", doing, err)
	}
	return r.fail(r.errorf(op, "%s", msg), crashed)
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isClosedErr(err error) bool {
	return errors.Is(err, errStreamClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed)
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
