package hostile

import (
	"encoding/json"
	"path/filepath"
	"strings"
)

func remoteCases() []hcase {
	type rc struct {
		server   string // "hostile" or "misbehaving"
		mode     string
		at       int
		want     string // in the output
		midRun   bool   // checkpoints must be kept
		okToExit bool   // a server that works: exit 0
	}
	var rs []rc
	for _, m := range []string{"silence-hello", "exit-at-hello", "wrong-magic", "http", "huge-header", "huge-payload", "header-not-json", "header-array",
		"stderr-flood", "stdout-flood", "discrete-16777216", "discrete-1000000", "discrete-0", "discrete-negative", "discrete-float", "discrete-1e300",
		"dim-1000000", "dim-1048577", "dim-0", "dim-string", "obs-discrete", "kind-unknown", "low-wrong-length", "action-box-huge",
		"hello-no-id", "hello-wrong-id", "hello-protocol-1", "hello-num-envs", "drip-hello"} {
		rs = append(rs, rc{server: "hostile", mode: m, at: 1})
	}
	for _, m := range []string{"inf-reward", "flag-bits", "short-payload", "long-payload", "wrong-id", "no-id", "error-no-message", "unknown-type", "exit", "silence", "drip"} {
		rs = append(rs, rc{server: "hostile", mode: m, at: 300, midRun: true})
	}
	for _, m := range []string{"crash", "hang", "garbage", "error", "nan", "twice"} {
		rs = append(rs, rc{server: "misbehaving", mode: m, at: 300, midRun: true})
	}
	rs = append(rs, rc{server: "misbehaving", mode: "startup-crash", at: 1}, rc{server: "misbehaving", mode: "slow-hello", at: 1},
		rc{server: "misbehaving", mode: "noisy", at: 1, okToExit: true})
	var cs []hcase
	for _, r := range rs {
		r := r
		expect := "exit 1 with a message naming the remote environment and the problem, no hang"
		if r.midRun {
			expect += ", checkpoints kept, no lost rows"
		}
		if r.okToExit {
			expect = "trains (exit 0)"
		}
		cs = append(cs, hcase{
			name:   "remote/" + r.server + " " + r.mode,
			expect: expect,
			fast:   r.mode == "discrete-16777216" || r.mode == "twice",
			rssKiB: 512 << 10,
			run: func(c *cx) {
				script := filepath.Join(repo, "internal/hostile/testdata/hostile_server.py")
				if r.server == "misbehaving" {
					script = filepath.Join(repo, "remote/testdata/misbehaving_server.py")
				}
				cmd, _ := json.Marshal([]string{"python3", script, "--mode", r.mode, "--at", itoa(r.at)})
				run := c.path("run")
				res := c.run(opt{}, "train", "--quiet", "--run-dir", run, "env.id=remote", "env.args.command="+string(cmd),
					"env.args.timeout_s=3", "env.args.handshake_timeout_s=5", "trainer.save_freq=1", "ppo.total_timesteps=2048", "trainer.threads=1")
				c.note("exit %d: %s", res.code, firstErr(res.out))
				if r.okToExit {
					c.expectExit(res, 0)
					return
				}
				c.expectExit(res, 1, "remote environment")
				if r.midRun {
					c.check(latestIter(run) >= 1, "no checkpoint kept")
					c.checkRecords(run, 0)
				}
				c.check(res.dur.Seconds() < 40, "took %.0fs", res.dur.Seconds())
				_ = strings.Contains
			},
		})
	}
	return cs
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}
