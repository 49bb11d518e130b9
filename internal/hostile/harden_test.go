package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The second round of hardening (issue 31): sweeps, Slurm job scripts,
// run-directory files, plot, `runs`, `ps`, `attach` and the SSH server's
// window sizes. Each group's cases are named by the group (slurm-inject/,
// sweep-name/, …) so that `-hostile.only GROUP/` runs one.
func hardenCases() []hcase {
	var all []hcase
	for _, f := range []func() []hcase{slurmInjectCases, sweepNameCases, termEscCases, sshWindowCases, runFileCases, runFileExtraCases, pinCases, sweepFileCases, sweepSpecCases, plotValueCases, configRangeCases, frozenLakeCases} {
		all = append(all, f()...)
	}
	return all
}

// sweepSpec is a small valid sweep spec (one trial of 2,048 steps) with
// extra appended.
func sweepSpec(extra string) string {
	return "budget = 2048\n[params]\n\"ppo.learning_rate\" = [1e-3]\n" + extra
}

// brief is the first error line of out with the case's directory written
// as ".", so that the table's observed column shows the message itself.
func (c *cx) brief(out string) string {
	return firstErr(strings.ReplaceAll(out, c.dir, "."))
}

// tomlString quotes s as a TOML basic string, control characters as \uXXXX
// (TOML has no \x escape).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// refusedSweep runs `sweep` with args (the spec and runs dir are the
// case's) and expects exit 2 naming every one of wants, and nothing
// written: no runs directory, and nothing the payload would have made.
func refusedSweep(c *cx, wants []string, args ...string) {
	full := append([]string{"sweep"}, args...)
	full = append(full, "trainer.runs_dir="+c.path("runs"))
	r := c.run(opt{}, full...)
	c.expectExit(r, 2, wants...)
	if _, err := os.Stat(c.path("runs")); err == nil {
		c.fail("runs/ was created: %v", dirEntries(c.path("runs")))
	}
	if _, err := os.Stat(c.path("PWNED")); err == nil {
		c.fail("the injected command ran")
	}
	c.note("exit %d: %s", r.code, c.brief(r.out))
}

// slurmInjectCases are the F3 class: text that would become lines of the
// Slurm job script (array.sh), from the spec's [slurm] table or flags.
func slurmInjectCases() []hcase {
	pwned := func(c *cx) string { return "touch " + c.path("PWNED") }
	payloads := []struct {
		name string
		make func(c *cx) string // the value, given the case
	}{
		{"newline", func(c *cx) string { return "debug\n" + pwned(c) }},
		{"CR", func(c *cx) string { return "debug\r" + pwned(c) }},
		{"CRLF", func(c *cx) string { return "debug\r\n" + pwned(c) }},
		{"NEL", func(c *cx) string { return "debug\u0085" + pwned(c) }},
		{"wrap", func(c *cx) string { return "--wrap=" + pwned(c) }},
		{"command substitution", func(c *cx) string { return "--comment=$(" + pwned(c) + ")" }},
		{"backticks", func(c *cx) string { return "--comment=`" + pwned(c) + "`" }},
		{"ESC", func(c *cx) string { return "debug\x1b]0;owned\a" }},
	}
	var cs []hcase
	for _, field := range []string{"partition", "time", "extra"} {
		for _, p := range payloads {
			for _, dry := range []bool{true, false} {
				field, p, dry := field, p, dry
				mode := "run"
				if dry {
					mode = "dry-run"
				}
				cs = append(cs, hcase{
					name:   fmt.Sprintf("slurm-inject/spec %s %s (%s)", field, p.name, mode),
					expect: "exit 2 naming slurm." + field + ", nothing written, nothing run",
					fast:   field == "partition" && p.name == "newline" && dry,
					run: func(c *cx) {
						v := tomlString(p.make(c))
						if field == "extra" {
							v = "[" + v + "]"
						}
						spec := c.write("inj.toml", []byte(sweepSpec("[slurm]\n"+field+" = "+v+"\n")))
						args := []string{"--backend", "slurm", spec}
						if dry {
							args = append([]string{"--dry-run"}, args...)
						}
						refusedSweep(c, []string{"slurm." + field}, args...)
					},
				})
			}
		}
	}
	for _, flag := range []string{"--partition", "--time", "--sbatch"} {
		for _, p := range payloads {
			flag, p := flag, p
			cs = append(cs, hcase{
				name:   fmt.Sprintf("slurm-inject/flag %s %s", flag, p.name),
				expect: "exit 2 naming " + flag + ", nothing written, nothing run",
				run: func(c *cx) {
					spec := c.write("inj.toml", []byte(sweepSpec("")))
					refusedSweep(c, []string{flag}, "--backend", "slurm", flag+"="+p.make(c), spec)
				},
			})
		}
	}
	// The sweep directory is named in an #SBATCH line too.
	cs = append(cs, hcase{
		name:   "slurm-inject/runs dir with a newline",
		expect: "exit 2 naming trainer.runs_dir, nothing written",
		run: func(c *cx) {
			spec := c.write("inj.toml", []byte(sweepSpec("")))
			runs := filepath.Join(c.dir, "r\n"+strings.ReplaceAll(c.path("PWNED"), "/", "_"))
			r := c.run(opt{}, "sweep", "--dry-run", "--backend", "slurm", spec, "trainer.runs_dir="+runs)
			c.expectExit(r, 2, "trainer.runs_dir")
			if _, err := os.Stat(runs); err == nil {
				c.fail("%q was created", runs)
			}
			c.note("exit %d: %s", r.code, c.brief(r.out))
		},
	})
	return cs
}

// sweepNameCases are the F1/F2 class: a sweep's name, taken from the spec
// or the spec file's name, that would reach outside the runs directory,
// and trial directories replaced by links on resume.
func sweepNameCases() []hcase {
	var cs []hcase
	names := []string{"..", ".", "...", "../x", "../../x", "/tmp/x", "a/b", "./x", ".hidden", "a\\b", "\u0000", "x\u001b]0;t\u0007", strings.Repeat("n", 200), "é"}
	for _, n := range names {
		for _, dry := range []bool{true, false} {
			n, dry := n, dry
			mode := "run"
			if dry {
				mode = "dry-run"
			}
			cs = append(cs, hcase{
				name:   fmt.Sprintf("sweep-name/name %s (%s)", printable(n), mode),
				expect: "exit 2 naming name, nothing written anywhere",
				fast:   n == ".." && dry,
				run: func(c *cx) {
					spec := c.write("s.toml", []byte("name = \""+n+"\"\n"+sweepSpec("")))
					args := []string{"sweep", spec, "trainer.runs_dir=" + c.path("a", "runs")}
					if dry {
						args = append(args[:1], append([]string{"--dry-run"}, args[1:]...)...)
					}
					r := c.run(opt{}, args...)
					c.expectExit(r, 2, "name")
					c.checkOnly("s.toml")
					c.note("exit %d: %s", r.code, c.brief(r.out))
				},
			})
		}
	}
	for _, file := range []string{"...toml", "..toml", ".toml", "....toml", ". .toml", ".x.toml"} {
		file := file
		cs = append(cs, hcase{
			name:   "sweep-name/spec file " + printable(file),
			expect: "exit 2 saying the name comes from the file, nothing written anywhere",
			run: func(c *cx) {
				spec := c.write(file, []byte(sweepSpec("")))
				for _, dry := range []bool{true, false} {
					args := []string{"sweep", spec, "trainer.runs_dir=" + c.path("a", "runs")}
					if dry {
						args = []string{"sweep", "--dry-run", spec, "trainer.runs_dir=" + c.path("a", "runs")}
					}
					r := c.run(opt{}, args...)
					c.expectExit(r, 2, "name")
					c.note("exit %d: %s", r.code, c.brief(r.out))
				}
				c.checkOnly(file)
			},
		})
	}
	// A sweep that ran, then a trial directory replaced: resume must not
	// follow the replacement anywhere.
	swaps := []struct {
		name string
		swap func(c *cx, trial string) // replaces trial
	}{
		{"link to a directory of files", func(c *cx, trial string) { os.Symlink(c.path("victim"), trial) }},
		{"link to the runs directory's parent", func(c *cx, trial string) { os.Symlink(c.path("a"), trial) }},
		{"relative link to a sibling trial", func(c *cx, trial string) { os.Symlink("trial-000", trial) }},
		{"dangling link", func(c *cx, trial string) { os.Symlink(c.path("nowhere"), trial) }},
		{"a file", func(c *cx, trial string) { os.WriteFile(trial, []byte("x"), 0o644) }},
		{"a FIFO", func(c *cx, trial string) { mkfifo(trial) }},
	}
	for _, sw := range swaps {
		sw := sw
		cs = append(cs, hcase{
			name:   "sweep-symlink/trial replaced by " + sw.name,
			expect: "resume exits 2 naming the trial, nothing outside the sweep touched",
			bound:  120e9,
			run: func(c *cx) {
				dir := c.ranSweep("seeds = [1, 2]\n")
				if dir == "" {
					return
				}
				victim := c.path("victim")
				os.MkdirAll(victim, 0o755)
				os.WriteFile(filepath.Join(victim, "precious"), []byte("keep me"), 0o644)
				trial := filepath.Join(dir, "trial-001")
				if b, err := os.ReadFile(filepath.Join(trial, "trial.toml")); err == nil {
					os.WriteFile(filepath.Join(victim, "trial.toml"), b, 0o644)
				}
				os.RemoveAll(trial)
				sw.swap(c, trial)
				c.markInterrupted(dir, "trial-001")
				before := dirEntries(c.path("a"))
				r := c.run(opt{}, "sweep", "--resume", dir)
				c.expectExit(r, 2, "trial-001")
				if b, err := os.ReadFile(filepath.Join(victim, "precious")); err != nil || string(b) != "keep me" {
					c.fail("the victim directory lost its file: %v", err)
				}
				if n := dirEntries(victim); len(n) != 2 {
					c.fail("the victim directory now holds %v", n)
				}
				if after := dirEntries(c.path("a")); strings.Join(after, ",") != strings.Join(before, ",") {
					c.fail("the runs directory's parent changed: %v → %v", before, after)
				}
				c.note("exit %d: %s", r.code, c.brief(r.out))
			},
		})
	}
	return cs
}

// checkOnly fails unless the case's directory holds exactly names.
func (c *cx) checkOnly(names ...string) {
	got := dirEntries(c.dir)
	if strings.Join(got, "\x00") != strings.Join(names, "\x00") {
		c.fail("the case's directory holds %v, want only %v", got, names)
	}
}

// ranSweep runs a small sweep (2,048 CartPole steps a trial) with extra
// spec lines under c.path("a", "runs") and returns its directory ("" when
// it failed, which is recorded).
func (c *cx) ranSweep(extra string) string {
	spec := c.write("s.toml", []byte("name = \"sw\"\n"+extra+sweepSpec("")))
	r := c.run(opt{}, "sweep", spec, "trainer.runs_dir="+c.path("a", "runs"), "env.id=CartPole-v1", "trainer.threads=1", "--parallel", "2")
	if !c.check(r.code == 0, "the sweep to attack did not run: exit %d: %s", r.code, lastLines(r.out, 3)) {
		return ""
	}
	return c.path("a", "runs", "sw")
}

// markInterrupted rewrites a trial's record in sweep.jsonl as interrupted,
// as a sweep killed while it ran leaves it.
func (c *cx) markInterrupted(dir, trial string) {
	p := filepath.Join(dir, "sweep.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		c.fail("sweep.jsonl: %v", err)
		return
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(line, `"trial":"`+trial+`"`) {
			line = strings.Replace(line, `"state":"done"`, `"state":"interrupted"`, 1)
		}
		out = append(out, line)
	}
	os.WriteFile(p, []byte(strings.Join(out, "\n")+"\n"), 0o644)
}

// Escape sequences a hostile file could carry: the window title, an OSC 52
// clipboard write, clearing the screen, a C1 CSI, a bell, a
// right-to-left override.
var escPayloads = []struct{ name, s string }{
	{"title", "\x1b]0;owned\x07"},
	{"clipboard", "\x1b]52;c;ZWNobyBvd25lZA==\x07"},
	{"clear", "\x1b[2J\x1b[H"},
	{"C1 CSI", "\u009b31m"},
	{"bell", "\x07\x07"},
	{"RTL override", "\u202etxt.exe"},
}

// rawEscape names the first byte sequence of out a terminal would act on
// ("" when none): ESC, BEL, a C1 control in UTF-8, a bidi override.
func rawEscape(out string) string {
	for _, m := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
		if strings.Contains(out, m) {
			return fmt.Sprintf("%q", m)
		}
	}
	return ""
}

// fakeRun writes a run directory without training: config.toml with env
// id env, three metrics records, and meta.json when meta is not "".
func fakeRun(c *cx, dir, env, meta string) {
	os.MkdirAll(dir, 0o755)
	cfg := "[env]\nid = " + tomlString(env) + "\n[agent]\nname = \"mlp\"\n"
	os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644)
	var m strings.Builder
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&m, `{"iter":%d,"step":%d,"time_s":%d,"ep_return_mean":%d,"ep_return_min":1,"ep_return_max":30}`+"\n", i, 512*i, i, 10*i)
	}
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte(m.String()), 0o644)
	if meta != "" {
		os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta), 0o644)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// checkClean fails when r's output carries a raw escape.
func (c *cx) checkClean(r res, what string) {
	if e := rawEscape(r.out); e != "" {
		c.fail("%s printed a raw %s: %s", what, e, lastLines(fmt.Sprintf("%q", r.out), 2))
	}
}

// termEscCases are the F13 class: control characters in run files (meta.json
// names, notes and tags, config.toml's env id and agent, directory names,
// sweep records and trial logs) reaching the terminal through `runs`,
// `sweep`, `plot` and `ps`; and `runs note/name/tag` refusing them.
func termEscCases() []hcase {
	var cs []hcase
	for _, p := range escPayloads {
		p := p
		where := []struct {
			name string
			make func(c *cx, runs string)
		}{
			{"meta.json name", func(c *cx, runs string) {
				fakeRun(c, filepath.Join(runs, "r1"), "CartPole-v1", `{"name":`+jsonString("n"+p.s)+`}`)
			}},
			{"meta.json note", func(c *cx, runs string) {
				fakeRun(c, filepath.Join(runs, "r1"), "CartPole-v1", `{"note":`+jsonString("n"+p.s)+`}`)
			}},
			{"meta.json tags", func(c *cx, runs string) {
				fakeRun(c, filepath.Join(runs, "r1"), "CartPole-v1", `{"tags":[`+jsonString("t"+p.s)+`]}`)
			}},
			{"config.toml env.id", func(c *cx, runs string) { fakeRun(c, filepath.Join(runs, "r1"), "e"+p.s, "") }},
			{"directory name", func(c *cx, runs string) { fakeRun(c, filepath.Join(runs, "r"+p.s), "CartPole-v1", "") }},
			{"bad meta.json quoting it", func(c *cx, runs string) {
				fakeRun(c, filepath.Join(runs, "r1"), "CartPole-v1", "{"+p.s)
			}},
		}
		for _, w := range where {
			w := w
			cs = append(cs, hcase{
				name:   fmt.Sprintf("termesc/runs lists %s with %s", w.name, p.name),
				expect: "exit 0, the text shown as escapes (\\x1b…), no raw control character in stdout or stderr",
				fast:   p.name == "title" && w.name == "meta.json name",
				run: func(c *cx) {
					runs := c.path("runs")
					w.make(c, runs)
					fakeRun(c, filepath.Join(runs, "plain"), "CartPole-v1", "")
					r := c.run(opt{}, "runs", "--runs-dir", runs)
					c.check(r.code == 0, "exit %d: %s", r.code, lastLines(r.out, 2))
					c.check(strings.Contains(r.out, "plain"), "the plain run is not listed: %s", lastLines(r.out, 3))
					c.checkClean(r, "runs")
					c.note("exit %d, %d lines, no raw escape", r.code, strings.Count(r.out, "\n"))
				},
			})
		}
		for _, action := range []string{"note", "name", "tag"} {
			action := action
			cs = append(cs, hcase{
				name:   fmt.Sprintf("termesc/runs %s refuses %s", action, p.name),
				expect: "exit 2 saying control character, meta.json unchanged",
				run: func(c *cx) {
					dir := c.path("runs", "r1")
					fakeRun(c, dir, "CartPole-v1", `{"note":"before"}`)
					r := c.run(opt{}, "runs", action, dir, "x"+p.s)
					c.expectExit(r, 2, "control character")
					c.checkClean(r, "runs "+action)
					b, _ := os.ReadFile(filepath.Join(dir, "meta.json"))
					c.check(string(b) == `{"note":"before"}`, "meta.json changed: %q", b)
					c.note("exit %d: %s", r.code, c.brief(r.out))
				},
			})
		}
	}
	for _, p := range escPayloads {
		p := p
		cs = append(cs, hcase{
			name:   "termesc/sweep trial failure reason with " + p.name,
			expect: "exit 1 (every trial failed), the reason printed with escapes, results.csv and sweep.jsonl's reason hold it cleaned",
			run: func(c *cx) {
				spec := c.write("s.toml", []byte("name = \"e\"\nbudget = 2048\n[params]\n\"data.train_files\" = [["+tomlString("/nonexistent"+p.s+".jsonl")+"]]\n"))
				r := c.run(opt{}, "sweep", spec, "trainer.runs_dir="+c.path("runs"))
				c.expectExit(r, 1, "every trial failed")
				c.checkClean(r, "sweep")
				b, _ := os.ReadFile(c.path("runs", "e", "results.csv"))
				if e := rawEscape(string(b)); e != "" {
					c.fail("results.csv holds a raw %s", e)
				}
				b, _ = os.ReadFile(c.path("runs", "e", "sweep.jsonl"))
				var rec struct{ Reason string }
				json.Unmarshal(b, &rec)
				if e := rawEscape(rec.Reason); e != "" || rec.Reason == "" {
					c.fail("sweep.jsonl's reason %q holds a raw %s", rec.Reason, e)
				}
				c.note("exit %d: %s", r.code, c.brief(r.out))
			},
		})
		for _, field := range []string{"method", "metric", "direction", "backend"} {
			field := field
			cs = append(cs, hcase{
				name:   fmt.Sprintf("termesc/sweep spec %s with %s", field, p.name),
				expect: "exit 2 naming the field, the value shown with escapes",
				run: func(c *cx) {
					spec := c.write("s.toml", []byte(field+" = "+tomlString("x"+p.s)+"\n"+sweepSpec("")))
					r := c.run(opt{}, "sweep", "--dry-run", spec, "trainer.runs_dir="+c.path("runs"))
					c.expectExit(r, 2, field)
					c.checkClean(r, "sweep --dry-run")
					c.note("exit %d: %s", r.code, c.brief(r.out))
				},
			})
		}
	}
	cs = append(cs, hcase{
		name:   "termesc/ps and attach a live run in a directory named with escapes",
		expect: "ps lists it with the name as escapes; attach (headless) prints no raw control character and leaves on SIGINT",
		bound:  90e9,
		run: func(c *cx) {
			runs := c.path("runs")
			dir := filepath.Join(runs, "x\x1b]0;owned\x07\u009b2J")
			stop, ok := c.startDetached(dir)
			if !ok {
				return
			}
			defer stop()
			ps := c.run(opt{}, "ps", "--runs-dir", runs)
			c.check(ps.code == 0 && strings.Contains(ps.out, `x\x1b]0;owned\x07`), "ps: exit %d: %s", ps.code, lastLines(ps.out, 2))
			c.checkClean(ps, "ps")
			p := c.start(opt{}, "attach", "--runs-dir", runs)
			c.waitFor(20e9, func() bool { return strings.Contains(p.out.String(), "step") || p.exited() })
			p.signal(syscall.SIGINT)
			a := p.wait()
			c.check(a.code == 0 || a.code == 130, "attach: exit %d: %s", a.code, lastLines(a.out, 2))
			c.checkClean(a, "attach")
			c.note("ps exit %d, attach exit %d: %s", ps.code, a.code, lastLines(a.out, 1))
		},
	})
	cs = append(cs, hcase{
		name:   "termesc/sweep resume with escapes in sweep.jsonl",
		expect: "the dry run and the resumed sweep print no raw control character; unknown states continue",
		bound:  120e9,
		run: func(c *cx) {
			dir := c.ranSweep("seeds = [1, 2]\n")
			if dir == "" {
				return
			}
			b, _ := os.ReadFile(filepath.Join(dir, "sweep.jsonl"))
			evil := strings.NewReplacer(`"state":"done"`, `"state":"\u001b]0;st\u0007","reason":"\u001b]52;c;ZXZpbA==\u0007","job_id":"\u001b[2J"`).Replace(string(b))
			os.WriteFile(filepath.Join(dir, "sweep.jsonl"), []byte(evil), 0o644)
			r := c.run(opt{}, "sweep", "--dry-run", "--resume", dir)
			c.check(r.code == 0, "dry run: exit %d: %s", r.code, lastLines(r.out, 2))
			c.checkClean(r, "sweep --dry-run --resume")
			r = c.run(opt{}, "sweep", "--resume", dir)
			c.check(r.code == 0, "resume: exit %d: %s", r.code, lastLines(r.out, 2))
			c.checkClean(r, "sweep --resume")
			c.note("dry run and resume: exit %d, no raw escape", r.code)
		},
	})
	return cs
}

// startDetached starts a long training in dir with train --detach; stop
// ends it (ok is false, and a failure recorded, when it did not start).
func (c *cx) startDetached(dir string) (stop func(), ok bool) {
	os.MkdirAll(dir, 0o755)
	r := c.run(opt{}, "train", "--detach", "--run-dir", dir, "trainer.threads=1", "ppo.total_timesteps=100000000")
	if !c.check(r.code == 0, "train --detach: exit %d: %s", r.code, lastLines(r.out, 2)) {
		return func() {}, false
	}
	return func() { stopDetached(c, dir) }, true
}

// stopDetached ends the training that serves dir's control socket
// (SIGTERM to the pid in control.json) and waits for it to let go.
func stopDetached(c *cx, dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "control.json"))
	if err != nil {
		return
	}
	var ep struct{ PID int }
	if json.Unmarshal(b, &ep) != nil || ep.PID <= 0 {
		return
	}
	syscall.Kill(ep.PID, syscall.SIGTERM)
	if !c.waitFor(30e9, func() bool { return syscall.Kill(ep.PID, 0) != nil }) {
		syscall.Kill(ep.PID, syscall.SIGKILL)
	}
}
