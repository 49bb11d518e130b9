package hostile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// sweepFileCases are F4/F6/F7 and F12 for a sweep's own files: a sweep that
// ran, then its sweep.jsonl or sweep.toml replaced or spoiled, then
// --resume (and its dry run).
func sweepFileCases() []hcase {
	var cs []hcase
	for _, file := range []string{"sweep.jsonl", "sweep.toml"} {
		for _, k := range fileKinds {
			file, k := file, k
			expect := "resume ends within its bound; exit 0 with every finished trial kept done and none relaunched"
			if file == "sweep.toml" && (k.bad || k.name == "empty" || k.name == "torn last line") {
				expect = "resume exits 2 naming sweep.toml, within its bound, nothing changed"
			}
			if file == "sweep.jsonl" && k.name == "directory" {
				expect = "resume exits 2 saying sweep.jsonl is a directory"
			}
			cs = append(cs, hcase{
				name:   fmt.Sprintf("sweep-file/resume: %s is a %s", file, k.name),
				expect: expect,
				bound:  120 * time.Second,
				rssKiB: 512 << 10,
				run: func(c *cx) {
					dir := c.ranSweep("seeds = [1, 2]\n")
					if dir == "" {
						return
					}
					k.make(c, filepath.Join(dir, file))
					r := c.run(opt{limit: 90 * time.Second}, "sweep", "--resume", dir)
					switch {
					case strings.HasPrefix(expect, "resume exits 2"):
						c.expectExit(r, 2, file)
					default:
						c.expectExit(r, 0)
						c.check(strings.Count(r.out, " started") == 0, "a finished trial was started again: %s", lastLines(r.out, 4))
						c.check(strings.Contains(r.out, "2 done"), "the trials are not all done: %s", lastLines(r.out, 3))
					}
					c.checkClean(r, "sweep --resume")
					c.note("exit %d: %s", r.code, lastLines(strings.ReplaceAll(r.out, c.dir, "."), 1))
				},
			})
		}
	}
	// An interrupted sweep whose sweep.jsonl then broke: the interrupted
	// trial continues from its checkpoint, the finished one stays done.
	spoils := []struct {
		name  string
		spoil func(path string)
	}{
		{"torn", func(p string) { b, _ := os.ReadFile(p); os.WriteFile(p, b[:len(b)/2], 0o644) }},
		{"garbage line", func(p string) { b, _ := os.ReadFile(p); os.WriteFile(p, append([]byte("}{ not json\n"), b...), 0o644) }},
		{"missing", func(p string) { os.Remove(p) }},
		{"empty", func(p string) { os.WriteFile(p, nil, 0o644) }},
	}
	for _, sp := range spoils {
		sp := sp
		cs = append(cs, hcase{
			name:   "sweep-resume/interrupted, sweep.jsonl " + sp.name,
			expect: "resume exits 0: the interrupted trial continues from its checkpoint, the finished one is not relaunched",
			bound:  150 * time.Second,
			run: func(c *cx) {
				dir := c.ranSweep("seeds = [1, 2]\n")
				if dir == "" {
					return
				}
				// trial-001 as a sweep killed mid-way leaves it: its last
				// iterations gone, its record "interrupted".
				c.markInterrupted(dir, "trial-001")
				sp.spoil(filepath.Join(dir, "sweep.jsonl"))
				r := c.run(opt{limit: 120 * time.Second}, "sweep", "--resume", dir)
				c.expectExit(r, 0, "2 done")
				c.check(!strings.Contains(r.out, "trial-000 started"), "the finished trial-000 was started again: %s", lastLines(r.out, 4))
				c.check(!strings.Contains(r.out, "already holds a run"), "a trial failed on its own directory: %s", lastLines(r.out, 4))
				c.note("exit %d: %s", r.code, lastLines(strings.ReplaceAll(r.out, c.dir, "."), 1))
			},
		})
	}
	cs = append(cs, fullDiskSweepCase())
	cs = append(cs,
		hcase{name: "sweep-resume/sweep.toml edited to fewer values", expect: "exit 2 naming the trial it no longer draws; sweep.jsonl unchanged", bound: 120 * time.Second, run: func(c *cx) {
			dir := c.ranSweep("seeds = [1, 2]\n")
			if dir == "" {
				return
			}
			p := filepath.Join(dir, "sweep.toml")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), "seeds = [1, 2]", "seeds = [1]", 1)), 0o644)
			before, _ := os.ReadFile(filepath.Join(dir, "sweep.jsonl"))
			r := c.run(opt{}, "sweep", "--resume", dir)
			c.expectExit(r, 2, "trial-001")
			after, _ := os.ReadFile(filepath.Join(dir, "sweep.jsonl"))
			c.check(string(before) == string(after), "sweep.jsonl changed")
			c.note("exit %d: %s", r.code, c.brief(r.out))
		}},
		hcase{name: "sweep-resume/failed trials (as a full disk leaves them)", expect: "resume tries them again and exits 0 with both done", bound: 150 * time.Second, run: func(c *cx) {
			dir := c.ranSweep("seeds = [1, 2]\n")
			if dir == "" {
				return
			}
			p := filepath.Join(dir, "sweep.jsonl")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.ReplaceAll(string(b), `"state":"done"`, `"state":"failed","reason":"exit 1: "`)), 0o644)
			r := c.run(opt{limit: 120 * time.Second}, "sweep", "--resume", dir)
			c.expectExit(r, 0, "trying it again", "2 done")
			c.note("exit %d: %s", r.code, lastLines(strings.ReplaceAll(r.out, c.dir, "."), 1))
		}},
		hcase{name: "sweep-resume/copied sweep directory while a trial runs", expect: "resuming the copy leaves the original's training alive", bound: 150 * time.Second, run: func(c *cx) {
			// A sweep whose one trial trains long; the sweep directory is
			// copied while it runs, the copy resumed.
			spec := c.write("s.toml", []byte("name = \"sw\"\nbudget = 100000000\n[params]\n\"ppo.learning_rate\" = [1e-3]\n"))
			p := c.start(opt{}, "sweep", spec, "trainer.runs_dir="+c.path("a", "runs"), "trainer.threads=1")
			orig := c.path("a", "runs", "sw")
			trial := filepath.Join(orig, "trial-000")
			if !c.waitFor(60*time.Second, func() bool { _, err := os.Stat(filepath.Join(trial, "control.json")); return err == nil }) {
				c.fail("the trial never served its socket: %s", lastLines(p.out.String(), 2))
				p.signal(9)
				return
			}
			pid := pidOf(c, trial)
			cp := c.path("b", "sw")
			os.MkdirAll(filepath.Dir(cp), 0o755)
			copyDir(orig, cp)
			r := c.start(opt{}, "sweep", "--resume", cp, "--parallel", "1")
			time.Sleep(3 * time.Second) // time to have (wrongly) stopped the original
			alive := pidAlive(pid)
			r.signal(2)
			r.wait()
			c.check(alive, "the original's training (pid %d) was stopped by resuming the copy", pid)
			p.signal(2)
			p.wait()
			c.note("original trial pid %d alive after resuming the copy: %v", pid, alive)
		}},
	)
	return cs
}

// fullDiskSweepCase is F7: a sweep whose runs directory fills, then is
// given room, then resumed.
func fullDiskSweepCase() hcase {
	return hcase{name: "sweep-resume/full disk, then room, then resume", expect: "the trials fail saying why (never \"exit 1: \" alone); after the disk grows, --resume tries them again and exits 0", skip: canMount, bound: 240 * time.Second, run: func(c *cx) {
		d := c.path("full")
		if why := tmpfs(d, "size=200k"); why != "" {
			c.fail("%s", why)
			return
		}
		defer umount(d)
		spec := c.write("s.toml", []byte("name = \"sw\"\nseeds = [1, 2]\nbudget = 20480\n[params]\n\"ppo.learning_rate\" = [1e-3]\n"))
		r := c.run(opt{limit: 120 * time.Second}, "sweep", spec, "trainer.runs_dir="+d, "trainer.threads=1", "trainer.save_freq=1")
		c.check(r.code == 1 || r.code == 0, "the full sweep: exit %d: %s", r.code, lastLines(r.out, 3))
		c.check(!strings.Contains(r.out, "exit 1: \n"), "a failure without a reason: %s", lastLines(r.out, 4))
		if out, err := exec.Command("mount", "-o", "remount,size=64m", d).CombinedOutput(); err != nil {
			c.fail("remount: %v %s", err, out)
			return
		}
		r2 := c.run(opt{limit: 120 * time.Second}, "sweep", "--resume", filepath.Join(d, "sw"))
		c.expectExit(r2, 0, "2 done")
		c.note("full: exit %d (%s); resumed: exit %d: %s", r.code, lastLines(strings.ReplaceAll(r.out, c.dir, "."), 1), r2.code, lastLines(r2.out, 1))
	}}
}

func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// sweepSpecCases are F8-F11: values in a spec that crashed or ran for
// minutes in --dry-run, and env.args keys.
func sweepSpecCases() []hcase {
	type sc struct {
		name, spec, want string
		code             int
	}
	huge := func(n int) string { return strings.TrimSuffix(strings.Repeat("1,", n), ",") }
	specs := []sc{
		{"reduction nan", oneTrialSpec + "[early_stop]\nmethod = \"asha\"\nmilestones = [1024]\nreduction = nan\n", "early_stop.reduction", 2},
		{"reduction inf", oneTrialSpec + "[early_stop]\nmethod = \"asha\"\nmilestones = [1024]\nreduction = inf\n", "early_stop.reduction", 2},
		{"reduction -inf", oneTrialSpec + "[early_stop]\nmethod = \"asha\"\nmilestones = [1024]\nreduction = -inf\n", "early_stop.reduction", 2},
		{"reduction 1", oneTrialSpec + "[early_stop]\nmethod = \"asha\"\nmilestones = [1024]\nreduction = 1\n", "early_stop.reduction", 2},
		{"min_trials -1", oneTrialSpec + "[early_stop]\nmethod = \"median\"\nmilestones = [1024]\nmin_trials = -1\n", "early_stop.min_trials", 2},
		{"milestones past budget", oneTrialSpec + "[early_stop]\nmethod = \"median\"\nmilestones = [99999999]\n", "early_stop.milestones", 2},
		{"trials 1e9", "budget = 2048\ntrials = 1000000000\n[params]\n\"ppo.learning_rate\" = { distribution = \"log_uniform\", min = 1e-4, max = 1e-2 }\n", "trials", 2},
		{"trials 2^62", "budget = 2048\ntrials = 4611686018427387904\n[params]\n\"ppo.learning_rate\" = { distribution = \"log_uniform\", min = 1e-4, max = 1e-2 }\n", "trials", 2},
		{"grid num 1e9", "budget = 2048\n[params]\n\"ppo.learning_rate\" = { min = 1e-4, max = 1e-2, num = 1000000000 }\n", "ppo.learning_rate", 2},
		{"grid product 1e12", "budget = 2048\n[params]\n\"ppo.learning_rate\" = { min = 1e-4, max = 1e-2, num = 10000 }\n\"ppo.gamma\" = { min = 0.9, max = 0.99, num = 10000 }\n\"ppo.gae_lambda\" = { min = 0.9, max = 0.99, num = 10000 }\n", "10000", 2},
		{"grid product overflowing int64", "budget = 2048\n[params]\n" + strings.Repeat("", 0) + func() string {
			var b strings.Builder
			for _, k := range []string{"ppo.learning_rate", "ppo.gamma", "ppo.gae_lambda", "ppo.clip_coef", "ppo.ent_coef", "ppo.vf_coef"} {
				fmt.Fprintf(&b, "%q = { min = 0.01, max = 0.5, num = 9999 }\n", k)
			}
			return b.String()
		}(), "10000", 2},
		{"100000 seeds", "budget = 2048\nseeds = [" + huge(100000) + "]\n[params]\n\"ppo.learning_rate\" = [1e-3]\n", "seeds", 2},
		{"a million seeds (a 2 MB spec)", "budget = 2048\nseeds = [" + huge(1000000) + "]\n[params]\n\"ppo.learning_rate\" = [1e-3]\n", "s.toml", 2},
		{"100000 values", "budget = 2048\n[params]\n\"ppo.learning_rate\" = [" + strings.TrimSuffix(strings.Repeat("1e-3,", 100000), ",") + "]\n", "ppo.learning_rate", 2},
		{"env.args key", "budget = 2048\n[params]\n\"env.args.map\" = [\"4x4\", \"8x8\"]\n", "", 0},
		{"env.args range", "budget = 2048\n[params]\n\"env.args.slip\" = { min = 0.1, max = 0.3, num = 3 }\n", "", 0},
		{"env.args nested table", "budget = 2048\n[params.env.args]\nmap = [\"4x4\"]\n", "", 0},
	}
	var cs []hcase
	for _, s := range specs {
		s := s
		expect := fmt.Sprintf("--dry-run exits %d", s.code)
		if s.want != "" {
			expect += " naming " + s.want
		}
		expect += " within seconds, in bounded memory, nothing written"
		cs = append(cs, hcase{
			name:   "sweep-spec/" + s.name,
			expect: expect,
			bound:  60 * time.Second,
			rssKiB: 400 << 10,
			run: func(c *cx) {
				spec := c.write("s.toml", []byte(s.spec))
				t0 := time.Now()
				r := c.run(opt{}, "sweep", "--dry-run", spec, "trainer.runs_dir="+c.path("runs"))
				if s.want != "" {
					c.expectExit(r, s.code, s.want)
				} else {
					c.expectExit(r, s.code)
				}
				c.checkOnly("s.toml")
				c.note("exit %d in %.1fs: %s", r.code, time.Since(t0).Seconds(), c.brief(r.out))
			},
		})
	}
	return cs
}

const oneTrialSpec = "budget = 4096\nseeds = [1, 2]\n[params]\n\"ppo.learning_rate\" = [1e-3]\n"

// plotValueCases are F16-F20: values and names that hung, crashed or broke
// plot, and its signals.
func plotValueCases() []hcase {
	ulp := math.Nextafter(0.1, 1)
	series := []struct {
		name string
		ys   []float64
		logY bool
	}{
		{"one ulp apart", []float64{0.1, ulp, 0.1, ulp}, false},
		{"one ulp apart, log-y", []float64{0.1, ulp}, true},
		{"min = max", []float64{7, 7, 7}, false},
		{"min = max = 0", []float64{0, 0}, false},
		{"5e-324, log-y", []float64{5e-324, 5e-324}, true},
		{"5e-324 to 1e308, log-y", []float64{5e-324, 1e308}, true},
		{"±1.7e308", []float64{1.7e308, -1.7e308}, false},
		{"1.7e308, log-y", []float64{1.7e308, 1.7e308}, true},
		{"1e300 and a step of 1e284", []float64{1e300, 1e300 + 1e284}, false},
		{"all negative, log-y", []float64{-1, -2}, true},
	}
	var cs []hcase
	for _, sr := range series {
		for _, format := range []string{"png", "svg"} {
			sr, format := sr, format
			cs = append(cs, hcase{
				name:   fmt.Sprintf("plot-values/%s (%s)", sr.name, format),
				expect: "a picture (exit 0), or exit 2 saying there is nothing to draw; within seconds, no panic",
				bound:  60 * time.Second,
				rssKiB: 512 << 10,
				run: func(c *cx) {
					dir := c.path("runs", "r1")
					fakeRun(c, dir, "CartPole-v1", "")
					var b strings.Builder
					for i, y := range sr.ys {
						fmt.Fprintf(&b, `{"iter":%d,"step":%d,"time_s":%d,"value_loss":%s}`+"\n", i+1, 512*(i+1), i+1, jsonNum(y))
					}
					os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(b.String()), 0o644)
					args := []string{"plot", dir, "--metric", "value_loss", "--out", c.path("p." + format)}
					if sr.logY {
						args = append(args, "--log-y")
					}
					r := c.run(opt{}, args...)
					c.check(r.code == 0 || r.code == 2 && strings.Contains(r.out, "no finite points"), "exit %d: %s", r.code, lastLines(r.out, 2))
					if r.code == 0 && format == "svg" {
						c.checkXML(c.path("p.svg"))
					}
					c.note("exit %d: %s", r.code, c.brief(r.out))
				},
			})
		}
	}
	for _, t := range []struct{ name, title, dir string }{
		{"--title with ESC and NUL-like controls", "t\x1b]0;x\x07\x01\x02<&>", "r1"},
		{"a run directory named with controls", "", "r\x1b[2J\x07\x01"},
		{"env.id with controls", "", "r1"},
	} {
		t := t
		cs = append(cs, hcase{
			name:   "plot-values/SVG of " + t.name,
			expect: "exit 0, a well-formed SVG",
			run: func(c *cx) {
				dir := c.path("runs", t.dir)
				env := "CartPole-v1"
				if strings.HasPrefix(t.name, "env.id") {
					env = "E\x1b]0;x\x07\x01"
				}
				fakeRun(c, dir, env, "")
				args := []string{"plot", dir, "--out", c.path("p.svg")}
				if t.title != "" {
					args = append(args, "--title", t.title)
				}
				r := c.run(opt{}, args...)
				c.expectExit(r, 0)
				c.checkXML(c.path("p.svg"))
				c.checkClean(r, "plot")
				c.note("exit %d, well-formed SVG", r.code)
			},
		})
	}
	cs = append(cs,
		hcase{name: "plot-values/--out names an existing directory", expect: "exit 2 saying it is a directory, nothing written", run: func(c *cx) {
			dir := c.path("runs", "r1")
			fakeRun(c, dir, "CartPole-v1", "")
			os.MkdirAll(c.path("dir2.png"), 0o755)
			r := c.run(opt{}, "plot", dir, "--out", c.path("dir2.png"))
			c.expectExit(r, 2, "is a directory")
			c.check(len(dirEntries(c.path("dir2.png"))) == 0, "wrote into the directory")
			c.note("exit %d: %s", r.code, c.brief(r.out))
		}},
	)
	for _, sig := range []struct {
		name string
		num  int
	}{{"SIGINT", 2}, {"SIGTERM", 15}} {
		sig := sig
		cs = append(cs, hcase{name: "plot-values/" + sig.name + " while reading a large metrics file", expect: "exit 130 within seconds, nothing written", bound: 90 * time.Second, run: func(c *cx) {
			dir := c.path("runs", "r1")
			fakeRun(c, dir, "CartPole-v1", "")
			f, err := os.Create(filepath.Join(dir, "metrics.jsonl"))
			if err != nil {
				c.fail("%v", err)
				return
			}
			for i := 1; i <= 600000; i++ { // about 60 MB: seconds of reading
				fmt.Fprintf(f, `{"iter":%d,"step":%d,"time_s":%d,"ep_return_mean":%d,"ep_return_min":1,"ep_return_max":30,"value_loss":0.5,"policy_loss":0.1}`+"\n", i, 512*i, i, i%500)
			}
			f.Close()
			p := c.start(opt{}, "plot", dir, "--out", c.path("p.png"))
			time.Sleep(300 * time.Millisecond)
			t0 := time.Now()
			p.signal(sigNum(sig.num))
			r := p.wait()
			d := time.Since(t0)
			c.check(r.code == 130 || r.code == 0, "exit %d: %s", r.code, lastLines(r.out, 2))
			c.check(d < 10*time.Second, "plot took %.1fs to end after %s", d.Seconds(), sig.name)
			if r.code == 130 {
				_, err := os.Stat(c.path("p.png"))
				c.check(err != nil, "a picture was written after the interrupt")
			}
			c.note("exit %d %.1fs after %s", r.code, d.Seconds(), sig.name)
		}})
	}
	return cs
}

func jsonNum(f float64) string { return fmt.Sprintf("%v", f) }

// checkXML fails unless path is well-formed XML.
func (c *cx) checkXML(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		c.fail("%v", err)
		return
	}
	if err := wellFormed(b); err != nil {
		c.fail("%s is not well-formed XML: %v", filepath.Base(path), err)
	}
}

// configRangeCases are F26: coefficients that made the loss NaN after the
// run started, given at the start (exit 2 naming the key) and as live
// edits over the control socket (refused, naming the key; the run goes on).
func configRangeCases() []hcase {
	vals := map[string][]string{
		"ppo.vf_coef":        {"1e308", "1e30", "10001", "-1", "inf", "nan"},
		"ppo.ent_coef":       {"1e308", "1e30", "10001", "-1", "inf"},
		"agent.log_std_init": {"700", "-700", "21", "-21", "1e308", "nan"},
	}
	var cs []hcase
	for _, key := range []string{"ppo.vf_coef", "ppo.ent_coef", "agent.log_std_init"} {
		for _, v := range vals[key] {
			key, v := key, v
			cs = append(cs, hcase{
				name:   fmt.Sprintf("config-range/%s=%s at start", key, v),
				expect: "exit 2 naming " + key + ", nothing written",
				run:    func(c *cx) { refused(c, []string{key}, key+"="+v) },
			})
		}
	}
	cs = append(cs, hcase{
		name:   "config-range/live edits of vf_coef, ent_coef to 1e308",
		expect: "each edit refused naming its key; the training goes on and ends with exit 0",
		bound:  120 * time.Second,
		run: func(c *cx) {
			run := c.path("run")
			stop, ok := c.startDetached(run)
			if !ok {
				return
			}
			defer stop()
			for _, kv := range [][2]string{{"ppo.vf_coef", "1e308"}, {"ppo.ent_coef", "1e308"}, {"ppo.vf_coef", "nan"}} {
				ans, err := controlRequest(c, run, fmt.Sprintf(`{"op":"edit","key":%q,"value":%q}`, kv[0], kv[1]))
				c.check(err == nil && strings.Contains(ans, `"ok":false`) && strings.Contains(ans, kv[0]), "edit %s=%s: %v %s", kv[0], kv[1], err, ans)
			}
			ans, _ := controlRequest(c, run, `{"op":"info"}`)
			c.check(strings.Contains(ans, `"ok":true`), "the training no longer answers: %s", ans)
			c.note("3 live edits refused naming their keys; the training answers")
		},
	})
	return cs
}

// frozenLakeCases are F29/F30: task counts a lake cannot give, and large
// sets in bounded memory.
func frozenLakeCases() []hcase {
	var cs []hcase
	for _, a := range []struct {
		size, n string
		code    int
		want    string
	}{
		{"2", "10000000", 2, "distinct maps"},
		{"2", "49", 2, "distinct maps"},
		{"3", "10000", 2, "distinct maps"},
		{"4", "10000000", 2, "distinct maps"},
		{"2", "46", 2, "only 44"},
		{"16", "10000001", 2, "between 1 and 10000000"},
	} {
		a := a
		cs = append(cs, hcase{
			name:   fmt.Sprintf("frozenlake/--size %s --n %s", a.size, a.n),
			expect: fmt.Sprintf("exit %d saying %q within seconds, no file written", a.code, a.want),
			bound:  30 * time.Second,
			rssKiB: 256 << 10,
			run: func(c *cx) {
				t0 := time.Now()
				r := c.run(opt{}, "data", "frozenlake", "--size", a.size, "--n", a.n, "--out", c.path("t.jsonl"))
				c.expectExit(r, a.code, a.want)
				c.checkOnly()
				c.note("exit %d in %.1fs: %s", r.code, time.Since(t0).Seconds(), c.brief(r.out))
			},
		})
	}
	cs = append(cs, hcase{
		name:   "frozenlake/--size 16 --n 300000 in bounded memory",
		expect: "exit 0 with 300000 rows; peak RSS well under the rows' size in memory",
		bound:  240 * time.Second,
		rssKiB: 200 << 10,
		run: func(c *cx) {
			r := c.run(opt{}, "data", "frozenlake", "--size", "16", "--n", "300000", "--out", c.path("t.jsonl"))
			c.expectExit(r, 0, "wrote 300000")
			st, _ := os.Stat(c.path("t.jsonl"))
			if st != nil {
				c.note("exit %d: %d MB written", r.code, st.Size()>>20)
			}
		},
	}, hcase{
		name:   "frozenlake/SIGINT while drawing 10000000 tasks",
		expect: "exit 130 within seconds, no file and no temporary file left",
		bound:  60 * time.Second,
		run: func(c *cx) {
			p := c.start(opt{}, "data", "frozenlake", "--size", "16", "--n", "10000000", "--out", c.path("t.jsonl"))
			time.Sleep(time.Second)
			t0 := time.Now()
			p.signal(sigNum(2))
			r := p.wait()
			c.check(r.code == 130, "exit %d: %s", r.code, lastLines(r.out, 2))
			c.check(time.Since(t0) < 10*time.Second, "took %.1fs to stop", time.Since(t0).Seconds())
			c.checkOnly()
			c.note("exit %d %.1fs after SIGINT; nothing left", r.code, time.Since(t0).Seconds())
		},
	})
	return cs
}

func sigNum(n int) syscall.Signal { return syscall.Signal(n) }

// wellFormed reports whether b parses as XML to its end.
func wellFormed(b []byte) error {
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// controlRequest sends one request line to the training serving runDir's
// control socket and returns the answer line.
func controlRequest(c *cx, runDir, req string) (string, error) {
	b, err := os.ReadFile(filepath.Join(runDir, "control.json"))
	if err != nil {
		return "", err
	}
	var ep struct{ Socket string }
	if err := json.Unmarshal(b, &ep); err != nil {
		return "", err
	}
	conn, err := net.DialTimeout("unix", ep.Socket, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write([]byte(req + "\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}
