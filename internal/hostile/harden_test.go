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
	for _, f := range []func() []hcase{slurmInjectCases} {
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
