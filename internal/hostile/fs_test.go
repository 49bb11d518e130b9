package hostile

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// tmpfs mounts a small tmpfs at dir (root only); "" when it worked.
func tmpfs(dir, opts string) string {
	if os.Geteuid() != 0 {
		return "needs root to mount a tmpfs, and chmod cannot stop root"
	}
	os.MkdirAll(dir, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput(); err != nil {
		return fmt.Sprintf("mount -t tmpfs failed: %v %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

func umount(dir string) { exec.Command("umount", "-l", dir).Run() }

var canMount = sync.OnceValue(func() string {
	d, _ := os.MkdirTemp("", "hostile-mnt-")
	defer os.RemoveAll(d)
	if why := tmpfs(d, "size=64k"); why != "" {
		return why
	}
	umount(d)
	return ""
})

func fsCases() []hcase {
	train := func(c *cx, extra ...string) res {
		return c.run(opt{}, append([]string{"train", "--quiet", "env.id=CartPole-v1", "trainer.threads=1", "ppo.total_timesteps=20480", "trainer.save_freq=1"}, extra...)...)
	}
	cs := []hcase{
		{name: "fs/runs dir is a file", expect: "exit 1 or 2 naming the path, no panic", run: func(c *cx) {
			f := c.write("runs", []byte("x"))
			r := train(c, "trainer.runs_dir="+f)
			c.check(r.code == 1 || r.code == 2, "exit %d", r.code)
			c.check(strings.Contains(r.out, f), "no path in %s", lastLines(r.out, 2))
			c.note("exit %d: %s", r.code, firstErr(r.out))
		}},
		{name: "fs/run dir is a file", expect: "exit 1 or 2 naming the path, no panic", run: func(c *cx) {
			f := c.write("run", []byte("x"))
			r := train(c, "--run-dir", f)
			c.check(r.code == 1 || r.code == 2, "exit %d", r.code)
			c.note("exit %d: %s", r.code, firstErr(r.out))
		}},
		{name: "fs/run dir under a file", expect: "exit 1 or 2, no panic", run: func(c *cx) {
			f := c.write("file", []byte("x"))
			r := train(c, "--run-dir", filepath.Join(f, "run"))
			c.check(r.code == 1 || r.code == 2, "exit %d", r.code)
			c.note("exit %d: %s", r.code, firstErr(r.out))
		}},
		{name: "fs/run dir path of 5000 bytes", expect: "exit 1 or 2 (name too long), no panic", run: func(c *cx) {
			r := train(c, "--run-dir", c.path(strings.Repeat("a", 5000)))
			c.check(r.code == 1 || r.code == 2, "exit %d", r.code)
			c.note("exit %d: %s", r.code, firstErr(r.out))
		}},
		{name: "fs/run dir in /proc", expect: "exit 1 or 2, no panic", run: func(c *cx) {
			r := train(c, "--run-dir", "/proc/hostile-run")
			c.check(r.code == 1 || r.code == 2, "exit %d", r.code)
			c.note("exit %d: %s", r.code, firstErr(r.out))
		}},
		{name: "fs/run dir deleted during training", expect: "exit 1 saying the directory is gone (not \"kept in\"), no panic, no hang", run: func(c *cx) {
			l := startLive(c, "trainer.save_freq=1")
			if l == nil {
				return
			}
			os.RemoveAll(l.run)
			done := c.waitFor(30*time.Second, l.p.exited)
			if !done {
				l.p.signal(syscall.SIGTERM)
			}
			r := l.p.wait()
			c.check(r.code == 1 || r.code == 130, "exit %d", r.code)
			c.check(!strings.Contains(r.out, "is kept in"), "claims the work is kept: %s", lastLines(r.out, 2))
			c.note("exit %d: %s", r.code, lastLines(r.out, 1))
		}},
		{name: "fs/read-only runs dir (tmpfs ro)", expect: "exit 1 or 2 naming the path, nothing written", skip: canMount, run: func(c *cx) {
			d := c.path("ro")
			if why := tmpfs(d, "ro,size=1m"); why != "" {
				c.fail("%s", why)
				return
			}
			defer umount(d)
			r := train(c, "trainer.runs_dir="+d)
			c.check(r.code == 1 || r.code == 2, "exit %d", r.code)
			c.check(strings.Contains(r.out, "read-only") || strings.Contains(r.out, d), "no reason: %s", lastLines(r.out, 2))
			c.note("exit %d: %s", r.code, firstErr(r.out))
		}},
	}
	// The disk fills while a checkpoint is written (a run of 40 iterations
	// keeps 3 checkpoints of 117 KB: about 500 KB at its peak, so these
	// sizes fill), or, with 1 MiB, while metrics.jsonl grows: one
	// checkpoint at iteration 1000, then rows of about 470 bytes fill the
	// rest near iteration 2000. Either way the run ends saying why, keeps
	// its checkpoints, and its metrics.jsonl holds whole rows only.
	fulls := []struct {
		size, name string
		args       []string // beyond train's
		kept       bool     // a checkpoint must survive
	}{
		{"16k", "", nil, false},
		{"128k", "", nil, false},
		{"400k", "", nil, false},
		{"1m", ", filled by metrics", []string{"ppo.total_timesteps=2000000", "trainer.save_freq=1000"}, true},
	}
	for _, fl := range fulls {
		fl := fl
		expect := "exit 1 saying no space left, checkpoints valid or none, metrics rows ≥ newest checkpoint; resume works when one was kept"
		if fl.kept {
			expect = "exit 1 saying no space left, the checkpoint written before kept and valid, metrics.jsonl whole rows ≥ its iteration; resume works"
		}
		cs = append(cs, hcase{name: "fs/full disk (tmpfs " + fl.size + fl.name + ")", expect: expect, skip: canMount, run: func(c *cx) {
			d := c.path("full")
			if why := tmpfs(d, "size="+fl.size); why != "" {
				c.fail("%s", why)
				return
			}
			defer umount(d)
			run := filepath.Join(d, "run")
			r := train(c, append([]string{"--run-dir", run}, fl.args...)...)
			c.check(r.code == 1, "exit %d: %s", r.code, lastLines(r.out, 2))
			c.check(strings.Contains(r.out, "no space left"), "no reason: %s", lastLines(r.out, 2))
			c.note("exit %d: %s", r.code, firstErr(r.out))
			kept := latestIter(run)
			c.check(kept > 0 || !fl.kept, "no valid checkpoint kept")
			if kept > 0 {
				c.checkRecords(run, 0)
				// Room again: copy out and resume for ten iterations more.
				out := c.path("copy")
				copyDir(run, out)
				r2 := c.run(opt{}, "train", "--quiet", "--resume", out, fmt.Sprintf("ppo.total_timesteps=%d", (kept+10)*512))
				c.check(r2.code == 0, "resume: exit %d: %s", r2.code, lastLines(r2.out, 2))
				c.checkRecords(out, kept+10)
				c.note("checkpoint of iteration %d kept; resumed: exit %d", kept, r2.code)
			}
		}})
	}
	return cs
}

// ref is an uninterrupted run the signal cases compare with.
var ref struct {
	once sync.Once
	last map[string]any
	err  error
}

const sigSteps = 51200 // 100 iterations

var sigArgs = []string{"env.id=CartPole-v1", "trainer.threads=1", "trainer.seed=3", "trainer.save_freq=3", fmt.Sprintf("ppo.total_timesteps=%d", sigSteps)}

func refRun(c *cx) map[string]any {
	ref.once.Do(func() {
		dir, _ := os.MkdirTemp("", "hostile-ref-")
		r := c.run(opt{dir: dir}, append([]string{"train", "--quiet", "--run-dir", filepath.Join(dir, "run")}, sigArgs...)...)
		if r.code != 0 {
			ref.err = fmt.Errorf("reference run: exit %d", r.code)
			return
		}
		_, rows := metricsRows(filepath.Join(dir, "run"))
		ref.last = rows[len(rows)-1]
		os.RemoveAll(dir)
	})
	if ref.err != nil {
		c.fail("%v", ref.err)
	}
	return ref.last
}

func signalCases() []hcase {
	var cs []hcase
	sigs := []struct {
		name string
		s    syscall.Signal
		code int
	}{{"SIGINT", syscall.SIGINT, 130}, {"SIGTERM", syscall.SIGTERM, 130}, {"SIGKILL", syscall.SIGKILL, -1}}
	for _, sg := range sigs {
		for seed := int64(1); seed <= 8; seed++ {
			sg, seed := sg, seed
			for _, twice := range []bool{false, true} {
				twice := twice
				if twice && seed > 4 {
					continue
				}
				name := fmt.Sprintf("signal/%s at random moment seed %d", sg.name, seed)
				if twice {
					name = fmt.Sprintf("signal/%s during training and during resume seed %d", sg.name, seed)
				}
				cs = append(cs, hcase{
					name:   name,
					expect: fmt.Sprintf("exit %d (or 0 if done first), metrics rows ≥ newest checkpoint's iteration, resume ends exactly as an uninterrupted run", sg.code),
					fast:   seed == 1 && !twice && sg.s == syscall.SIGINT,
					run: func(c *cx) {
						want := refRun(c)
						if want == nil {
							return
						}
						rng := rand.New(rand.NewSource(seed))
						run := c.path("run")
						hit := func(args ...string) res {
							p := c.start(opt{}, args...)
							time.Sleep(time.Duration(rng.Int63n(int64(2500 * time.Millisecond))))
							p.signal(sg.s)
							r := p.wait()
							c.check(r.code == sg.code || r.code == 0, "exit %d, want %d: %s", r.code, sg.code, lastLines(r.out, 2))
							c.checkRecords(run, 0)
							return r
						}
						r := hit(append([]string{"train", "--quiet", "--run-dir", run}, sigArgs...)...)
						obs := fmt.Sprintf("exit %d at iter %d", r.code, latestIter(run))
						if twice && latestIter(run) > 0 {
							r = hit("train", "--quiet", "--resume", run)
							obs += fmt.Sprintf(", resume exit %d at iter %d", r.code, latestIter(run))
						}
						if latestIter(run) > 0 || r.code != 0 {
							r2 := c.run(opt{}, "train", "--quiet", "--resume", run)
							if !strings.Contains(r2.out, "nothing to do") {
								c.check(r2.code == 0, "resume: exit %d: %s", r2.code, lastLines(r2.out, 2))
							}
							obs += fmt.Sprintf(", resumed: exit %d", r2.code)
						}
						c.checkRecords(run, sigSteps/512)
						_, rows := metricsRows(run)
						if len(rows) > 0 {
							last := rows[len(rows)-1]
							for _, k := range []string{"step", "episodes", "ep_return_mean", "policy_loss", "value_loss", "entropy"} {
								c.check(fmt.Sprint(last[k]) == fmt.Sprint(want[k]), "%s %v, uninterrupted %v", k, last[k], want[k])
							}
						}
						c.note("%s", obs)
					},
				})
			}
		}
	}
	return cs
}
