package hostile

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The env worker cases (issue 30): workers of a pool that crash, hang or
// keep failing, restarted workers, and env servers that refuse clients
// without the shared secret or with the wrong one.

func noPython() string {
	if _, err := exec.LookPath("python3"); err != nil {
		return "python3 is not on PATH"
	}
	return ""
}

// workerTrain runs a training of 8 sub-environments on 4 workers of the
// misbehaving server; extra are more key=value overrides.
func workerTrain(c *cx, run string, serverArgs []string, extra ...string) res {
	cmd, _ := json.Marshal(append([]string{"python3", filepath.Join(repo, "remote/testdata/misbehaving_server.py")}, serverArgs...))
	args := append([]string{"train", "--quiet", "--run-dir", run, "env.id=remote", "env.args.command=" + string(cmd), "env.num_envs=8",
		"env.args.workers=4", "env.args.handshake_timeout_s=60", "trainer.save_freq=1", "trainer.log_every_steps=0", "ppo.num_steps=32", "ppo.total_timesteps=4096", "trainer.threads=1"}, extra...)
	return c.run(opt{}, args...)
}

func workerCases() []hcase {
	var cs []hcase
	for _, w := range []struct {
		mode  string
		extra []string
		want  []string
	}{
		// Step 300 is in the third iteration (8 × 32 per iteration, one
		// request per step): two checkpoints are written by then.
		{"crash", nil, []string{"env worker 1 of 4 (sub-environments 2–3)", "step request 300", "exit status 3", "simulated crash"}},
		{"hang", []string{"env.args.timeout_s=3"}, []string{"env worker 1 of 4 (sub-environments 2–3)", "no progress", "env.args.timeout_s"}},
		{"garbage", nil, []string{"env worker 1 of 4", "not a protocol frame"}},
	} {
		cs = append(cs, hcase{
			name:   "workers/" + w.mode + " of one worker of four",
			expect: "exit 1 naming the worker, its sub-environments and the failure (with its stderr), the other workers stopped, checkpoints kept, no lost rows",
			fast:   w.mode == "crash",
			rssKiB: 512 << 10,
			skip:   noPython,
			run: func(c *cx) {
				run := c.path("run")
				r := workerTrain(c, run, []string{"--mode", w.mode, "--at", "300", "--only-offset", "2"}, w.extra...)
				c.note("exit %d: %s", r.code, firstErr(r.out))
				c.expectExit(r, 1, w.want...)
				c.check(latestIter(run) >= 1, "no checkpoint kept")
				c.checkRecords(run, 0)
				c.check(r.dur < 45*time.Second, "took %v", r.dur)
			},
		})
	}
	cs = append(cs, hcase{
		name:   "workers/restart a crashed worker",
		expect: "exit 0: the worker is restarted once (its episodes truncated), the run trains to the end and says so",
		rssKiB: 512 << 10,
		skip:   noPython,
		run: func(c *cx) {
			run := c.path("run")
			r := workerTrain(c, run, []string{"--mode", "crash", "--at", "300", "--only-offset", "4", "--once-file", c.path("crashed")},
				"env.args.restart_workers=true")
			c.note("exit %d: %s", r.code, lastLines(r.out, 1))
			c.expectExit(r, 0, "env worker 2 of 4 (sub-environments 4–5)", "restarted it (restart 1 of at most 10")
			c.checkRecords(run, 16)
		},
	}, hcase{
		name:   "workers/restarts used up",
		expect: "exit 1 after env.args.max_restarts restarts of a worker that crashes every time, checkpoints kept",
		rssKiB: 512 << 10,
		skip:   noPython,
		run: func(c *cx) {
			run := c.path("run")
			r := workerTrain(c, run, []string{"--mode", "crash", "--at", "100", "--only-offset", "0"}, "env.args.restart_workers=true", "env.args.max_restarts=3")
			c.note("exit %d: %s", r.code, firstErr(r.out))
			c.expectExit(r, 1, "env worker 0 of 4", "not restarted: the workers have been restarted 3 times, env.args.max_restarts")
			c.check(strings.Count(r.out, "restarted it") == 3, "%d restarts reported", strings.Count(r.out, "restarted it"))
			c.checkRecords(run, 0)
		},
	})
	return append(cs, authCases()...)
}

// envServer starts `agenttrainer env-server` with a secret in front of the
// pure-Python CartPole and returns its address (or "" when it did not
// listen).
func envServer(c *cx, secretFile string, extra ...string) (string, *proc) {
	args := append([]string{"env-server", "--listen", "127.0.0.1:0", "--secret-file", secretFile}, extra...)
	args = append(args, "--", "python3", filepath.Join(repo, "remote/cartpole_server.py"))
	p := c.start(opt{}, args...)
	re := regexp.MustCompile(`listening on (\S+)`)
	var addr string
	c.waitFor(30*time.Second, func() bool {
		if m := re.FindStringSubmatch(p.out.String()); m != nil {
			addr = m[1]
		}
		return addr != "" || p.exited()
	})
	c.check(addr != "", "env-server did not listen: %s", lastLines(p.out.String(), 3))
	return addr, p
}

func writeSecretFile(c *cx, name, secret string, mode os.FileMode) string {
	p := c.write(name, []byte(secret+"\n"))
	os.Chmod(p, mode)
	return p
}

func authCases() []hcase {
	return []hcase{
		authCase("auth/wrong secret", "exit 1 on both sides' word: the client says the server's proof does not match, the server logs the refusal", 1,
			func(c *cx, good string) []string {
				return []string{"env.args.secret_file=" + writeSecretFile(c, "wrong", "another secret, long enough", 0o600)}
			}, []string{"authentication failed: the server's proof does not match env.args.secret_file"}, "the client hung up after the challenge"),
		authCase("auth/missing secret", "exit 1: the server requires authentication and says how to give it, and logs the refusal", 1,
			func(c *cx, good string) []string { return nil }, []string{"requires authentication", "env.args.secret_file"}, "refused: this env server requires authentication"),
		authCase("auth/world-readable secret file", "exit 2 (a configuration mistake) naming the file and chmod 600; nothing sent", 2,
			func(c *cx, good string) []string {
				return []string{"env.args.secret_file=" + writeSecretFile(c, "open", "correct horse battery staple!", 0o644)}
			}, []string{"may be read or written by other users", "chmod 600"}, ""),
		authCase("auth/short secret", "exit 2 naming the length and how to make a good one", 2,
			func(c *cx, good string) []string {
				return []string{"env.args.secret_file=" + writeSecretFile(c, "short", "hunter2", 0o600)}
			}, []string{"fewer than 16", "/dev/urandom"}, ""),
		{
			name:   "auth/silent and garbage clients",
			expect: "the env server keeps serving: 40 connections that send nothing or garbage or a bad challenge do not stop an authenticated training",
			rssKiB: 512 << 10,
			skip:   noPython,
			run: func(c *cx) {
				withEnvServer(c, func(addr, good string, srv *proc) { silentAndGarbage(c, addr, good, srv) })
			},
		},
	}
}

// silentAndGarbage opens 40 connections that send nothing, HTTP, a bad
// challenge or an oversized header, then trains through the same server.
func silentAndGarbage(c *cx, addr, good string, srv *proc) {
	var conns []net.Conn
	for i := range 40 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			c.fail("dial %d: %v", i, err)
			break
		}
		conns = append(conns, conn)
		switch i % 4 {
		case 1:
			conn.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		case 2: // a challenge with a nonce that is not one
			h := `{"type":"challenge","id":1,"protocol":3,"nonce":"zz"}`
			conn.Write(append([]byte(fmt.Sprintf("AGTP%s%s", le32(len(h)), le32(0))), h...))
		case 3: // a header of 1 MiB + 1
			conn.Write([]byte("AGTP" + le32(1<<20+1) + le32(0)))
		}
	}
	r := c.run(opt{}, "train", "--quiet", "--run-dir", c.path("run"), "env.id=remote", "env.args.address="+addr, "env.args.secret_file="+good,
		"env.args.workers=2", "ppo.total_timesteps=2048", "trainer.threads=1")
	for _, conn := range conns {
		conn.Close()
	}
	c.note("exit %d: %s", r.code, lastLines(r.out, 1))
	c.expectExit(r, 0, "done: 2048 steps")
	c.check(!srv.exited(), "the env server stopped")
	c.check(strings.Contains(srv.out.String(), "refused"), "the server logged no refusal: %s", lastLines(srv.out.String(), 3))
}

// withEnvServer runs body against an env server holding a good secret
// (good names its file).
func withEnvServer(c *cx, body func(addr, good string, srv *proc)) {
	good := writeSecretFile(c, "secret", "correct horse battery staple!", 0o600)
	addr, srv := envServer(c, good)
	if addr == "" {
		return
	}
	defer srv.signal(9)
	body(addr, good, srv)
}

// authCase trains against an env server holding a good secret with the
// client settings client gives, expecting exit code and wants; serverSays,
// when set, must appear in the server's log.
func authCase(name, expect string, code int, client func(c *cx, good string) []string, wants []string, serverSays string) hcase {
	return hcase{
		name:   name,
		expect: expect,
		fast:   name == "auth/wrong secret",
		rssKiB: 512 << 10,
		skip:   noPython,
		run: func(c *cx) {
			withEnvServer(c, func(addr, good string, srv *proc) {
				args := append([]string{"train", "--quiet", "--run-dir", c.path("run"), "env.id=remote", "env.args.address=" + addr, "ppo.total_timesteps=1024"}, client(c, good)...)
				r := c.run(opt{}, args...)
				c.note("exit %d: %s", r.code, firstErr(r.out))
				c.expectExit(r, code, wants...)
				if serverSays != "" {
					c.check(c.waitFor(10*time.Second, func() bool { return strings.Contains(srv.out.String(), serverSays) }),
						"the server's log lacks %q: %s", serverSays, lastLines(srv.out.String(), 3))
				}
				if code == 2 {
					_, err := os.Stat(c.path("run"))
					c.check(os.IsNotExist(err), "a run directory was created")
				}
			})
		},
	}
}

func le32(n int) string {
	return string([]byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)})
}
