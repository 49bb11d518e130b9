package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The second round of hardening (issue 31): sweeps, Slurm job scripts,
// run-directory files, plot, `runs`, `ps`, `attach` and the SSH server's
// window sizes. Each group's cases are named by the group (slurm-inject/,
// sweep-name/, …) so that `-hostile.only GROUP/` runs one.
func hardenCases() []hcase {
	var all []hcase
	for _, f := range []func() []hcase{slurmInjectCases, sweepNameCases} {
		all = append(all, f()...)
	}
	return all
}

// sweepSpec is a small valid sweep spec (one trial of 2,048 steps) with
// extra appended.
func sweepSpec(extra string) string {
	return "budget = 2048\n[params]\n\"ppo.learning_rate\" = [1e-3]\n" + extra
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
	c.note("exit %d: %s", r.code, firstErr(r.out))
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
			c.note("exit %d: %s", r.code, firstErr(r.out))
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
					c.note("exit %d: %s", r.code, firstErr(r.out))
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
					c.note("exit %d: %s", r.code, firstErr(r.out))
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
				c.note("exit %d: %s", r.code, firstErr(r.out))
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
