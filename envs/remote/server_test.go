package remote

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
)

// TestEnvServerPool steps CartPole through env servers: a pool of three
// connections to one server (each its own process), and a pool of two
// servers found through a rendezvous directory, give exactly what one
// stdio server gives.
func TestEnvServerPool(t *testing.T) {
	requirePython(t)
	cartpole := filepath.Join("..", "..", "remote", "cartpole_server.py")
	secret := writeSecret(t, testSecret)
	addr, _ := startEnvServer(t, []byte(testSecret), "python3", cartpole)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 2)
	for rank := range 2 {
		go func() {
			done <- Serve(ctx, ServerOptions{Listen: "127.0.0.1:0", Secret: []byte(testSecret), Command: []string{"python3", cartpole},
				Announce: dir, Rank: rank, Log: &logBuf{}})
		}()
	}
	within(t, hangBound, "env-server pools", func() {
		one, err := NewRemoteVector(6, cartpoleServerArgs())
		if err != nil {
			t.Fatal(err)
		}
		want := record(t, one, 3, 300)
		one.Close()
		for _, args := range []envs.Params{
			{"address": addr, "workers": int64(3), "secret_file": secret},
			{"address": []any{addr, addr}, "secret_file": secret},
			{"rendezvous": dir, "workers": int64(2), "secret_file": secret},
		} {
			args["timeout_s"], args["handshake_timeout_s"] = generousTimeout, generousTimeout
			v, err := NewRemoteVector(6, args)
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			if got := record(t, v, 3, 300); !got.equal(want) {
				t.Errorf("%v: differs from one stdio server", args)
			}
			v.Close()
		}
	})
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestEnvServerWorkerCrash: when the process behind an env server dies,
// the client hears its exit status and last stderr lines from the server.
func TestEnvServerWorkerCrash(t *testing.T) {
	requirePython(t)
	script := filepath.Join("..", "..", "remote", "testdata", "misbehaving_server.py")
	addr, log := startEnvServer(t, nil, "python3", script, "--mode", "crash", "--at", "2", "--only-offset", "2")
	within(t, hangBound, "a crash behind env-server", func() {
		v, err := NewRemoteVector(4, envs.Params{"address": addr, "workers": int64(2), "timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		v.Reset(1)
		for range 3 {
			v.Step(make([]float32, 4))
		}
		checkErr(t, v.Err(), "env worker 1 of 2 (sub-environments 2–3)", "step request 2", "the environment process behind agenttrainer env-server stopped",
			"exit status 3", "simulated crash: the physics blew up at step 2")
		log.waitFor(t, "simulated crash")
	})
}

// TestEnvServerWorkerExitsIdle: a process that exits between requests is
// reported at the client's next request, with its exit status and stderr.
func TestEnvServerWorkerExitsIdle(t *testing.T) {
	requirePython(t)
	script := filepath.Join("..", "..", "remote", "testdata", "misbehaving_server.py")
	addr, _ := startEnvServer(t, nil, "python3", script, "--mode", "exit-idle", "--at", "2")
	within(t, hangBound, "an exit between requests behind env-server", func() {
		v, err := NewRemoteVector(2, envs.Params{"address": addr, "timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		v.Reset(1)
		for range 2 {
			v.Step(make([]float32, 2))
		}
		if err := v.Err(); err != nil {
			t.Fatalf("the step answered before the exit failed: %v", err)
		}
		v.Step(make([]float32, 2))
		checkErr(t, v.Err(), "step request 3", "the environment process behind agenttrainer env-server stopped", "exit status 4", "exiting between requests on purpose")
	})
}

// TestEnvServerAnnounceNeedsRank: outside Slurm, --announce needs --rank.
func TestEnvServerAnnounceNeedsRank(t *testing.T) {
	t.Setenv("SLURM_PROCID", "")
	t.Setenv("SLURM_ARRAY_TASK_ID", "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := Serve(ctx, ServerOptions{Listen: "127.0.0.1:0", Command: []string{"true"}, Announce: t.TempDir(), Rank: -1, Log: &logBuf{}})
	checkErr(t, err, "--announce needs the server's rank")
	t.Setenv("SLURM_PROCID", "x")
	err = Serve(ctx, ServerOptions{Listen: "127.0.0.1:0", Command: []string{"true"}, Announce: t.TempDir(), Rank: -1, Log: &logBuf{}})
	checkErr(t, err, `SLURM_PROCID="x" is not a rank`)
	err = Serve(ctx, ServerOptions{Listen: "0.0.0.0:0", Command: []string{"true"}, Rank: -1, Log: &logBuf{}})
	checkErr(t, err, "not a loopback address", "--secret-file")
}

// TestRendezvousTimeout: servers that never announce themselves end the
// wait after env.args.launch_timeout_s with what is missing.
func TestRendezvousTimeout(t *testing.T) {
	dir := t.TempDir()
	if err := Announce(dir, 1, "127.0.0.1:9"); err != nil {
		t.Fatal(err)
	}
	_, err := NewRemoteVector(4, envs.Params{"rendezvous": dir, "workers": int64(3), "launch_timeout_s": 0.3})
	checkErr(t, err, "only 1 of 3 env servers have announced themselves", "missing ranks 0, 2", "env.args.launch_timeout_s")
}

// TestSrunLauncherOutsideSlurm: env.args.launcher = "srun" outside an
// allocation says where it works.
func TestSrunLauncherOutsideSlurm(t *testing.T) {
	t.Setenv("SLURM_JOB_ID", "")
	_, err := NewRemoteVector(4, envs.Params{"command": "python3 x.py", "launcher": "srun", "workers": int64(2)})
	checkErr(t, err, "SLURM_JOB_ID is not set", "salloc", "scripts/slurm-env-workers.sh")
}
