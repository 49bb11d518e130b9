package hostile

import (
	"fmt"
	"os"
	"strings"
)

func allCases() []hcase {
	var all []hcase
	for _, f := range []func() []hcase{cliCases, configFileCases, memoryCases, dataCases, checkpointCases, controlCases, remoteCases, workerCases, remoteTextCases, lmTrainCases, fsCases, signalCases, sshCases, hardenCases} {
		all = append(all, f()...)
	}
	return all
}

// refused runs `train` with args and expects exit 2, every one of wants
// in the output, and nothing written (no run directory, no runs/).
func refused(c *cx, wants []string, args ...string) {
	full := append([]string{"train", "--quiet", "--run-dir", c.path("run")}, args...)
	r := c.run(opt{}, full...)
	c.expectExit(r, 2, wants...)
	for _, d := range []string{"run", "runs"} {
		if _, err := os.Stat(c.path(d)); err == nil {
			c.fail("%s was created", d)
		}
	}
	c.note("exit %d: %s", r.code, firstErr(r.out))
}

func cliCases() []hcase {
	var cs []hcase
	type rk struct {
		key    string
		values []string
	}
	ranged := []rk{
		{"env.num_envs", []string{"0", "-1", "1048577", "99999999999999999999", "1e30", "1e9", "100000000000", "2.5", "abc", "true", "[1]", "{a=1}", "\"\"", "nan", "inf", "-inf", "0x7fffffffffffffff"}},
		{"ppo.num_steps", []string{"0", "-5", "1048577", "100000000", "1e30", "3.5", "xyz", "false", "[]", "\"\""}},
		{"ppo.update_epochs", []string{"0", "-1", "10001", "1000000000", "1e300", "1.5", "many", "[4]"}},
		{"ppo.learning_rate", []string{"0", "-1", "1.5", "1e308", "nan", "inf", "-inf", "\"fast\"", "[0.1]", "true"}},
		{"trainer.threads", []string{"-1", "1025", "100000", "1e12", "two", "1.5"}},
		{"agent.hidden", []string{"[0]", "[-1]", "[65537]", "[100000,100000]", "[64,0,64]", "[1e30]", "64", "\"64\"", "[\"a\"]", "[[64]]", "[]", "[64.5]"}},
		{"ppo.num_minibatches", []string{"0", "-4", "3", "1e9"}},
		{"ppo.total_timesteps", []string{"0", "-1", "1e400", "abc"}},
		{"ppo.gamma", []string{"-0.5", "2", "nan", "x"}},
		{"ppo.clip_coef", []string{"-1", "nan", "\"\""}},
		{"trainer.seed", []string{"abc", "1.5", "1e40"}},
		// A NUL cannot be an argument (execve takes C strings: Go's exec
		// refuses it with EINVAL before the program runs); config-file
		// cases deliver it inside a value instead.
		{"env.id", []string{"NoSuchEnv-v9", "\"\"", "42", "../../etc/passwd"}},
		{"agent.name", []string{"nosuchagent", "\"\"", "[1]"}},
		{"trainer.device", []string{"tpu", "cuda:-1", "\"\""}},
	}
	for _, k := range ranged {
		for _, v := range k.values {
			k, v := k, v
			cs = append(cs, hcase{
				name:   fmt.Sprintf("cli/value %s=%s", k.key, printable(v)),
				expect: "exit 2 naming " + k.key + ", nothing written",
				fast:   k.key == "ppo.update_epochs" && v == "1000000000",
				run:    func(c *cx) { refused(c, []string{k.key}, k.key+"="+v) },
			})
		}
	}
	badKeys := []struct{ arg, want string }{
		{"ppo.learnig_rate=0.1", "ppo.learnig_rate"},
		{"nosuchkey=1", "nosuchkey"},
		{"ppo=1", "ppo"},
		{"ppo.=1", "ppo."},
		{".=1", "."},
		{"=1", "="},
		{"a..b=1", "a..b"},
		{"env.num_envs", "env.num_envs"},
		{"ppo.learning_rate==0.1", "ppo.learning_rate"},
		{"env.args.nosuch=1", "nosuch"},
		{"\xff\xfe=1", "agenttrainer:"},
		{"env.id=\xff\xfe", "env.id"},
		{"trainer.name=\xc3\x28", "trainer.name"},
		{"env.num_envs=\"4", "env.num_envs"},
		{"env.num_envs=[1,", "env.num_envs"},
		{"agent.hidden=[64,64", "agent.hidden"},
		{strings.Repeat("k", 100000) + "=1", "unknown key"},
		{"trainer.name=" + strings.Repeat("n", 100000), "trainer.name"},
		{"ppo.learning_rate=" + strings.Repeat("9", 5000), "ppo.learning_rate"},
		{"", "agenttrainer:"},
	}
	for _, b := range badKeys {
		b := b
		cs = append(cs, hcase{
			name:   "cli/key " + printable(b.arg),
			expect: "exit 2 naming the key, nothing written",
			fast:   b.arg == "ppo.learnig_rate=0.1",
			run:    func(c *cx) { refused(c, []string{b.want}, b.arg) },
		})
	}
	// Unknown commands and flags: exit 2 with the usage.
	cmds := []string{"train", "eval", "export", "data", "bench", "attach", "ps", "list", "config", "serve"}
	for _, cmd := range cmds {
		cmd := cmd
		cs = append(cs, hcase{
			name:   "cli/flag " + cmd + " --no-such-flag",
			expect: "exit 2, the usage on stderr",
			run: func(c *cx) {
				r := c.run(opt{}, cmd, "--no-such-flag")
				c.expectExit(r, 2, "Usage")
				c.note("exit %d", r.code)
				if n := dirEntries(c.dir); len(n) > 0 {
					c.fail("wrote %v", n)
				}
			},
		})
	}
	for _, args := range [][]string{{"frob"}, {"\xff"}, {"TRAIN"}, {"--bogus"}, {"-"}, {"--"}, {"eval"}, {"eval", "a", "b"}, {"export", "nosuchrun", "--csv"}, {"eval", "nosuchrun"}, {"train", "--resume"}, {"train", "--resume", "nosuchdir"}, {"data", "frozenlake", "--n", "-5", "--out", "x.jsonl"}, {"data", "frozenlake", "--n", "99999999999999", "--out", "x.jsonl"}, {"data", "frozenlake", "--size", "100000", "--n", "1", "--out", "x.jsonl"}, {"eval", ".", "--episodes", "-1"}, {"eval", ".", "--episodes", "1e12"}, {"serve", "--ssh", "not-an-address"}, {"train", "--config"}, {"attach", "/nonexistent"}} {
		args := args
		cs = append(cs, hcase{
			name:   "cli/args " + printable(strings.Join(args, " ")),
			expect: "exit 1 or 2 with a message, no panic, nothing written under the working directory",
			fast:   args[0] == "frob",
			run: func(c *cx) {
				r := c.run(opt{limit: 30e9}, args...)
				c.check(r.code == 2 || r.code == 1, "exit %d, want 1 or 2: %s", r.code, lastLines(r.out, 2))
				c.note("exit %d: %s", r.code, firstErr(r.out))
				for _, n := range dirEntries(c.dir) {
					c.fail("wrote %s", n)
				}
			},
		})
	}
	return cs
}

// xorshiftBytes is n bytes of a fixed pseudo-random stream (binary
// garbage that is the same at every run).
func xorshiftBytes(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func printable(s string) string {
	if len(s) > 48 {
		s = s[:40] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return strings.ToValidUTF8(strings.ReplaceAll(strings.ReplaceAll(fmt.Sprintf("%q", s), "\\\"", "'"), "\"", ""), "?")
}

func configFileCases() []hcase {
	type cf struct {
		name string
		make func(c *cx) string
		want string
	}
	file := func(body string) func(c *cx) string {
		return func(c *cx) string { return c.write("cfg.toml", []byte(body)) }
	}
	rnd := func(n int) func(c *cx) string {
		return func(c *cx) string { return c.write("cfg.toml", xorshiftBytes(n)) }
	}
	fs := []cf{
		{"missing", func(c *cx) string { return c.path("nope.toml") }, "nope.toml"},
		{"directory", func(c *cx) string { os.Mkdir(c.path("d"), 0o755); return c.path("d") }, "directory"},
		{"binary 4 KiB", rnd(4096), "cfg.toml"},
		{"binary 1 byte", rnd(1), "cfg.toml"},
		{"garbage text", file("this is not toml at all\n!!!"), "cfg.toml"},
		{"unknown key", file("[ppo]\nlearnig_rate = 0.1\n"), "ppo.learnig_rate"},
		{"unknown table", file("[nosuch]\nx = 1\n"), "nosuch"},
		{"wrong type", file("[env]\nnum_envs = \"four\"\n"), "env.num_envs"},
		{"out of range", file("[env]\nnum_envs = 0\n"), "env.num_envs"},
		{"huge number", file("[ppo]\nupdate_epochs = 99999999999999999999999\n"), "cfg.toml"},
		{"epochs 1e9", file("[ppo]\nupdate_epochs = 1000000000\n"), "ppo.update_epochs"},
		{"lr 1e308", file("[ppo]\nlearning_rate = 1e308\n"), "ppo.learning_rate"},
		{"lr nan", file("[ppo]\nlearning_rate = nan\n"), "ppo.learning_rate"},
		{"hidden zero", file("[agent]\nhidden = [0]\n"), "agent.hidden"},
		{"threads", file("[trainer]\nthreads = 100000\n"), "trainer.threads"},
		{"non-UTF-8 string", file("[trainer]\nname = \"\xff\xfe\"\n"), "cfg.toml"},
		{"NUL bytes", file("[env]\x00\nnum_envs = 4\n"), "cfg.toml"},
		{"duplicate key", file("[env]\nnum_envs = 4\nnum_envs = 8\n"), "cfg.toml"},
		{"duplicate table", file("[env]\n[env]\n"), "cfg.toml"},
		{"deep nesting", file("x = " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n"), "cfg.toml"},
		{"huge 66 MiB of comments + bad key", func(c *cx) string {
			return c.write("cfg.toml", []byte(strings.Repeat("# padding padding padding padding padding padding padding padding\n", 1<<20)+"bad = 1\n"))
		}, "cfg.toml"},
		{"huge string value", file("[trainer]\nname = \"" + strings.Repeat("x", 8<<20) + "\"\n[env]\nnum_envs = 0\n"), "cfg.toml"},
		{"BOM then bad key", file("\xef\xbb\xbfnosuch = 1\n"), "cfg.toml"},
		// NULs inside values, which no command-line argument can carry.
		{"env.id with a NUL", file("[env]\nid = \"CartPole-v1\\u0000\"\n"), "env.id"},
		{"trainer.name with a NUL", file("[trainer]\nname = \"run\\u0000x\"\n"), "trainer.name"},
		{"env.args key with a NUL", file("[env.args]\n\"a\\u0000b\" = 1\n"), "env.args"},
		{"/dev/zero", func(c *cx) string { return "/dev/zero" }, "/dev/zero"},
		{"fifo", func(c *cx) string {
			exec := c.path("fifo")
			if err := mkfifo(exec); err != nil {
				c.fail("mkfifo: %v", err)
			}
			return exec
		}, "fifo"},
	}
	var cs []hcase
	for _, f := range fs {
		f := f
		cs = append(cs, hcase{
			name:   "config-file/" + f.name,
			expect: "exit 2 naming the file or key, nothing written, bounded memory",
			fast:   f.name == "binary 4 KiB",
			bound:  60e9,
			run: func(c *cx) {
				p := f.make(c)
				refused(c, []string{f.want}, "--config", p)
			},
		})
	}
	return cs
}

func memoryCases() []hcase {
	sets := [][]string{
		{"env.num_envs=1048576", "agent.hidden=[4096,4096]"},
		{"env.num_envs=1048576", "agent.hidden=[65536]"},
		{"env.num_envs=1048576", "ppo.num_steps=1048576"},
		{"agent.hidden=[65536,65536,65536]"},
		{"agent.hidden=[65536,65536]"},
		{"env.num_envs=1048576", "ppo.num_steps=1024", "ppo.num_minibatches=1"},
		{"ppo.num_steps=1048576", "env.num_envs=4096"},
		{"env.id=MinAtar/Breakout-v1", "env.num_envs=1048576", "ppo.num_steps=1024"},
		{"env.num_envs=65536", "ppo.num_steps=65536", "agent.hidden=[1024]"},
		{"agent.hidden=[1,65536,1,65536,1,65536,65536]"},
	}
	var cs []hcase
	for i, s := range sets {
		s := s
		cs = append(cs, hcase{
			name:   "memory/" + strings.Join(s, " "),
			expect: "exit 2 \"would need about\", nothing written, no allocation",
			fast:   i == 0,
			rssKiB: 256 << 10,
			run:    func(c *cx) { refused(c, []string{"would need about"}, s...) },
		})
	}
	return cs
}
