package remote

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/internal/atomicfile"
)

// Env servers found through a rendezvous directory: every server started
// with `agenttrainer env-server --announce DIR` writes DIR/<rank>.addr
// holding its HOST:PORT, rank 0, 1, 2, … (a Slurm task's SLURM_PROCID, a
// job array's SLURM_ARRAY_TASK_ID, or --rank). The trainer waits for the
// ranks 0 … workers−1 and connects worker w to rank w.
//
// With env.args.launcher = "srun" the trainer starts those servers itself,
// inside its Slurm allocation: one srun step of env.args.workers tasks, each
// an env-server that runs env.args.command per connection, in a fresh
// rendezvous directory with a fresh secret.

// AnnounceSuffix ends the name of an announcement file.
const AnnounceSuffix = ".addr"

// SecretFileName is the secret's file in a directory the launcher makes.
const SecretFileName = "secret"

// idleExit is how long a launched env-server lives without a connection
// (it outlives a trainer killed with SIGKILL by no more than that).
const idleExit = 2 * time.Minute

// launch is the servers a pool found or started.
type launch struct {
	dir     string
	ownDir  bool // made by the launcher: removed at stop
	secret  []byte
	timeout time.Duration

	srun   *exec.Cmd
	srunIO *tailWriter
	exited chan struct{}
	status error
}

// startLaunch finds (rendezvous) or starts (srun) the servers of o's pool.
func startLaunch(o *RemoteOptions, workers int) (*launch, error) {
	l := &launch{dir: o.Pool.Rendezvous, secret: o.Secret, timeout: o.Pool.LaunchTimeout}
	if o.Pool.Launcher != "srun" {
		if fi, err := os.Stat(l.dir); err != nil || !fi.IsDir() {
			return nil, &envs.ArgsError{Err: fmt.Errorf("env.args.rendezvous %q is not a directory (%v): create it on storage every node sees and start the servers with agenttrainer env-server --announce %s", l.dir, err, l.dir)}
		}
		return l, nil
	}
	if os.Getenv("SLURM_JOB_ID") == "" {
		return nil, errors.New("env.args.launcher = \"srun\" starts env workers on the nodes of a Slurm allocation, but SLURM_JOB_ID is not set: run the training inside salloc or an sbatch script (scripts/slurm-env-workers.sh)")
	}
	srun, err := exec.LookPath("srun")
	if err != nil {
		return nil, fmt.Errorf("env.args.launcher = \"srun\": srun is not on PATH (%v)", err)
	}
	exe := o.Pool.ServerExe
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("env.args.launcher: cannot find this program to run as the env server (%v); set env.args.server_exe to the agenttrainer binary", err)
		}
	}
	if l.dir == "" {
		// The working directory: the nodes of a cluster usually share it
		// (the job's submit directory), unlike /tmp.
		if l.dir, err = os.MkdirTemp(".", ".agenttrainer-env-workers-"); err != nil {
			return nil, fmt.Errorf("env.args.launcher: cannot make a rendezvous directory in the working directory (%v); set env.args.rendezvous to a directory every node sees", err)
		}
		if l.dir, err = filepath.Abs(l.dir); err != nil {
			return nil, err
		}
		l.ownDir = true
	}
	if l.secret, err = NewSecret(); err == nil {
		err = atomicfile.Write(filepath.Join(l.dir, SecretFileName), append(l.secret, '\n'), 0o600)
	}
	if err != nil {
		l.stop()
		return nil, fmt.Errorf("env.args.launcher: cannot write the workers' secret: %v", err)
	}
	args := []string{"--ntasks=" + strconv.Itoa(workers), "--kill-on-bad-exit=1", "--job-name=agenttrainer-env-workers"}
	args = append(args, o.Pool.SrunArgs...)
	args = append(args, exe, "env-server", "--listen", ":0", "--secret-file", filepath.Join(l.dir, SecretFileName),
		"--announce", l.dir, "--idle-exit", idleExit.String())
	if o.Dir != "" {
		args = append(args, "--dir", o.Dir)
	}
	args = append(args, "--")
	args = append(args, o.Command...)
	l.srun = exec.Command(srun, args...)
	l.srun.Env = os.Environ()
	for _, k := range sortedKeys(o.Env) {
		l.srun.Env = append(l.srun.Env, k+"="+o.Env[k]) // srun passes its environment on to the tasks
	}
	l.srunIO = &tailWriter{copyTo: o.Stderr}
	l.srun.Stdout, l.srun.Stderr = l.srunIO, l.srunIO
	l.srun.WaitDelay = time.Second
	if err := l.srun.Start(); err != nil {
		l.stop()
		return nil, fmt.Errorf("env.args.launcher: cannot start srun: %v", err)
	}
	l.exited = make(chan struct{})
	go func() {
		l.status = l.srun.Wait()
		close(l.exited)
	}()
	return l, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// addresses waits until ranks 0 … workers−1 have announced themselves and
// returns their addresses in rank order.
func (l *launch) addresses(workers int) ([]string, error) {
	deadline := time.Now().Add(l.timeout)
	pause := 20 * time.Millisecond
	for {
		addrs, missing, err := readAnnouncements(l.dir, workers)
		if err != nil {
			return nil, err
		}
		if len(missing) == 0 {
			return addrs, nil
		}
		what := fmt.Sprintf("%d of %d env servers have announced themselves in %s (missing ranks %s)", workers-len(missing), workers, l.dir, rankList(missing))
		if l.exited != nil {
			select {
			case <-l.exited:
				return nil, fmt.Errorf("env.args.launcher: srun ended (%s) before %s%s", describeExit(l.status), what, l.output())
			default:
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %s after %v (env.args.launch_timeout_s): are they running, and do they see this directory?%s", what, l.timeout, l.output())
		}
		time.Sleep(pause)
		pause = min(2*pause, 500*time.Millisecond)
	}
}

func (l *launch) output() string {
	if l.srunIO == nil {
		return ""
	}
	if t := l.srunIO.tail(20); t != "" {
		return "\nsrun's last lines:\n" + indent(t)
	}
	return ""
}

func rankList(ranks []int) string {
	s := make([]string, 0, min(len(ranks), 8))
	for i, r := range ranks {
		if i == 8 {
			s = append(s, "…")
			break
		}
		s = append(s, strconv.Itoa(r))
	}
	return strings.Join(s, ", ")
}

// readAnnouncements reads DIR/<rank>.addr for ranks 0 … workers−1.
func readAnnouncements(dir string, workers int) (addrs []string, missing []int, err error) {
	addrs = make([]string, workers)
	for r := range workers {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(r)+AnnounceSuffix))
		if errors.Is(err, os.ErrNotExist) {
			missing = append(missing, r)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading env server %d's announcement: %v", r, err)
		}
		a := strings.TrimSpace(string(b))
		if _, _, err := net.SplitHostPort(a); err != nil || len(a) > 1024 {
			return nil, nil, fmt.Errorf("%s holds %s, not HOST:PORT", filepath.Join(dir, strconv.Itoa(r)+AnnounceSuffix), quoteBytes(b))
		}
		addrs[r] = a
	}
	return addrs, missing, nil
}

// Announce writes addr as rank's announcement in dir (atomically, so a
// reader never sees half of it).
func Announce(dir string, rank int, addr string) error {
	return atomicfile.Write(filepath.Join(dir, strconv.Itoa(rank)+AnnounceSuffix), []byte(addr+"\n"), 0o644)
}

// stop ends the servers the launcher started and removes what it made.
func (l *launch) stop() {
	if l.srun != nil && l.srun.Process != nil && l.exited != nil {
		// srun passes SIGTERM on to the tasks and ends the step.
		l.srun.Process.Signal(syscall.SIGTERM)
		select {
		case <-l.exited:
		case <-time.After(10 * time.Second):
			l.srun.Process.Kill()
			<-l.exited
		}
	}
	if l.ownDir {
		os.RemoveAll(l.dir)
	}
}
