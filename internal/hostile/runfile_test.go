package hostile

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// fileKind is something put in a run file's place.
type fileKind struct {
	name string
	bad  bool // not a usable file: a reader must say so (or leave it out), never use it
	make func(c *cx, path string)
}

// fileKinds are the F12/F14/F15/F21-F23 attacks: what anyone who can write
// a run directory can put where the program reads a file.
var fileKinds = []fileKind{
	{"FIFO", true, func(c *cx, p string) { os.RemoveAll(p); mkfifo(p) }},
	{"FIFO a writer holds", true, func(c *cx, p string) {
		os.RemoveAll(p)
		mkfifo(p)
		// Both ends in this process (O_RDWR does not wait for a reader):
		// a reader that opens it finds a writer that writes nothing.
		if f, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
			go func() { time.Sleep(time.Until(c.deadline)); f.Close() }()
		}
	}},
	{"link to /dev/zero", true, func(c *cx, p string) { os.RemoveAll(p); os.Symlink("/dev/zero", p) }},
	{"link to /dev/urandom", true, func(c *cx, p string) { os.RemoveAll(p); os.Symlink("/dev/urandom", p) }},
	{"directory", true, func(c *cx, p string) { os.RemoveAll(p); os.MkdirAll(p, 0o755) }},
	{"sparse 4 GiB file", true, func(c *cx, p string) {
		os.RemoveAll(p)
		if f, err := os.Create(p); err == nil {
			f.Truncate(4 << 30)
			f.Close()
		}
	}},
	{"2 MiB line", true, func(c *cx, p string) { os.WriteFile(p, []byte(strings.Repeat("x", 2<<20)+"\n"), 0o644) }},
	{"binary garbage", true, func(c *cx, p string) { os.WriteFile(p, xorshiftBytes(64<<10), 0o644) }},
	{"torn last line", false, func(c *cx, p string) {
		b, _ := os.ReadFile(p)
		if len(b) > 10 {
			os.WriteFile(p, b[:len(b)-10], 0o644)
		}
	}},
	{"empty", false, func(c *cx, p string) { os.WriteFile(p, nil, 0o644) }},
}

// runFileCases replay each kind in place of each file a command reads, and
// expect the command to end within its bound, in bounded memory, with exit
// 0, 1 or 2, naming the file when it cannot use it.
func runFileCases() []hcase {
	type reader struct {
		cmd   string
		files []string
		real  bool // needs a trained run (checkpoints), not a fake one
		run   func(c *cx, dir string) res
	}
	readers := []reader{
		{"runs", []string{"meta.json", "metrics.jsonl", "edits.jsonl", "config.toml"}, false, func(c *cx, dir string) res {
			return c.run(opt{}, "runs", "--runs-dir", filepath.Dir(dir))
		}},
		{"runs tag", []string{"meta.json"}, false, func(c *cx, dir string) res {
			return c.run(opt{}, "runs", "tag", dir, "t1")
		}},
		{"plot", []string{"metrics.jsonl", "meta.json", "config.toml"}, false, func(c *cx, dir string) res {
			return c.run(opt{}, "plot", dir, "--out", c.path("p.svg"))
		}},
		{"export", []string{"metrics.jsonl"}, false, func(c *cx, dir string) res {
			return c.run(opt{}, "export", dir)
		}},
		{"ps", []string{"control.json"}, false, func(c *cx, dir string) res {
			return c.run(opt{}, "ps", "--runs-dir", filepath.Dir(dir))
		}},
		{"attach", []string{"control.json"}, false, func(c *cx, dir string) res {
			return c.run(opt{}, "attach", dir)
		}},
		{"eval", []string{"checkpoints/latest"}, true, func(c *cx, dir string) res {
			return c.run(opt{}, "eval", dir, "--episodes", "1")
		}},
		{"resume", []string{"checkpoints/latest", "metrics.jsonl", "edits.jsonl"}, true, func(c *cx, dir string) res {
			return c.run(opt{}, "train", "--quiet", "--resume", dir, fmt.Sprintf("ppo.total_timesteps=%d", baseSteps+1024))
		}},
	}
	var cs []hcase
	for _, rd := range readers {
		for _, file := range rd.files {
			for _, k := range fileKinds {
				rd, file, k := rd, file, k
				cs = append(cs, hcase{
					name:   fmt.Sprintf("runfile/%s: %s is a %s", rd.cmd, file, k.name),
					expect: "ends within its bound (no hang on a FIFO, no read without end), exit 0-2, bounded memory, the file named when it cannot be used",
					fast:   rd.cmd == "runs" && file == "meta.json" && k.name == "FIFO",
					bound:  60 * time.Second,
					rssKiB: 256 << 10,
					run: func(c *cx) {
						var dir string
						if rd.real {
							var ok bool
							if dir, ok = baseRun(c); !ok {
								return
							}
						} else {
							dir = c.path("runs", "20240102-030405-CartPole-v1-mlp")
							fakeRun(c, dir, "CartPole-v1", `{"name":"n","tags":["a"]}`)
							os.WriteFile(filepath.Join(dir, "edits.jsonl"), []byte(`{"iter":1,"step":512,"time_s":1,"key":"ppo.learning_rate","value":"0.001","old":"0.00025"}`+"\n"), 0o644)
							if file == "control.json" {
								os.WriteFile(filepath.Join(dir, "control.json"), []byte(`{"version":1,"socket":"`+c.path("nosock")+`","pid":1}`), 0o644)
							}
						}
						k.make(c, filepath.Join(dir, file))
						t0 := time.Now()
						r := rd.run(c, dir)
						c.check(r.code >= 0 && r.code <= 2, "exit %d: %s", r.code, lastLines(r.out, 2))
						base := filepath.Base(file)
						if k.bad && r.code != 0 && rd.cmd != "ps" {
							c.check(strings.Contains(r.out, base) || strings.Contains(r.out, "no live training") || strings.Contains(r.out, "checkpoint"),
								"the message does not name %s: %s", base, lastLines(r.out, 2))
						}
						if rd.cmd == "runs" {
							c.check(r.code == 0 && strings.Contains(r.stdout, "CartPole-v1-mlp"), "the run is not listed: %s", lastLines(r.out, 3))
							if k.bad {
								c.check(strings.Contains(r.out, base), "runs says nothing of the bad %s: %s", base, lastLines(r.out, 3))
							}
						}
						c.checkClean(r, rd.cmd)
						c.note("exit %d in %.1fs: %s", r.code, time.Since(t0).Seconds(), c.brief(r.out))
					},
				})
			}
		}
	}
	return cs
}

// runFileExtraCases are the rest of the run-file class: stale temporary
// files, concurrent tagging, pins, dead sockets and copied directories.
func runFileExtraCases() []hcase {
	return []hcase{
		{name: "runfile/40 concurrent runs tag", expect: "all 40 tags kept (a lock around read-modify-write), each exit 0", bound: 120 * time.Second, run: func(c *cx) {
			dir := c.path("runs", "r1")
			fakeRun(c, dir, "CartPole-v1", "")
			var ps []*proc
			for i := 0; i < 40; i++ {
				ps = append(ps, c.start(opt{}, "runs", "tag", dir, fmt.Sprintf("t%d", i)))
			}
			bad := 0
			for _, p := range ps {
				if r := p.wait(); r.code != 0 {
					bad++
				}
			}
			r := c.run(opt{}, "runs", "--runs-dir", c.path("runs"))
			kept := 0
			for i := 0; i < 40; i++ {
				if strings.Contains(r.stdout, fmt.Sprintf("t%d,", i)) || strings.Contains(r.stdout, fmt.Sprintf("t%d ", i)) {
					kept++
				}
			}
			c.check(bad == 0 && kept == 40, "%d of 40 tags kept, %d commands failed", kept, bad)
			c.note("%d of 40 tags kept", kept)
		}},
		{name: "runfile/stale .meta.json.tmp files", expect: "the next runs note removes them", run: func(c *cx) {
			dir := c.path("runs", "r1")
			fakeRun(c, dir, "CartPole-v1", "")
			for i := 0; i < 3; i++ {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf(".meta.json.tmp%d", 1000+i)), []byte("left by a SIGKILL"), 0o644)
			}
			r := c.run(opt{}, "runs", "note", dir, "hello")
			c.expectExit(r, 0)
			left := 0
			for _, n := range dirEntries(dir) {
				if strings.HasPrefix(n, ".meta.json.tmp") {
					left++
				}
			}
			c.check(left == 0, "%d temporary files left", left)
			c.note("exit %d, %d temporary files left", r.code, left)
		}},
		{name: "runfile/stale checkpoint temporary file", expect: "train --resume removes it and goes on", run: func(c *cx) {
			run, ok := baseRun(c)
			if !ok {
				return
			}
			tmp := filepath.Join(run, "checkpoints", ".step-99999.safetensors.tmp123456")
			os.WriteFile(tmp, make([]byte, 25<<20), 0o644)
			r := c.run(opt{}, "train", "--quiet", "--resume", run, fmt.Sprintf("ppo.total_timesteps=%d", baseSteps+1024))
			c.expectExit(r, 0)
			_, err := os.Stat(tmp)
			c.check(err != nil, "the 25 MB temporary file is still there")
			c.note("exit %d; temporary file removed: %v", r.code, err != nil)
		}},
		{name: "runfile/ps with 20 sockets that never answer", expect: "ps answers within a few seconds, not 5 s per socket", bound: 60 * time.Second, run: func(c *cx) {
			// A listener that accepts and never answers, named by 20 runs'
			// control.json.
			sock := c.path("s.sock")
			if err := listenSilent(c, sock); err != nil {
				c.fail("listen: %v", err)
				return
			}
			for i := 0; i < 20; i++ {
				dir := c.path("runs", fmt.Sprintf("r%02d", i))
				fakeRun(c, dir, "CartPole-v1", "")
				os.WriteFile(filepath.Join(dir, "control.json"), []byte(fmt.Sprintf(`{"version":1,"socket":%q,"pid":%d}`, sock, os.Getpid())), 0o644)
			}
			t0 := time.Now()
			r := c.run(opt{}, "ps", "--runs-dir", c.path("runs"))
			d := time.Since(t0)
			c.expectExit(r, 0, "no live training")
			c.check(d < 20*time.Second, "ps took %.1fs", d.Seconds())
			c.note("ps: exit %d in %.1fs", r.code, d.Seconds())
		}},
		{name: "runfile/copied run directory of a live training", expect: "ps lists the original only; attach and runs on the copy do not reach the original", bound: 90 * time.Second, run: func(c *cx) {
			runs := c.path("runs")
			orig := filepath.Join(runs, "orig")
			stop, ok := c.startDetached(orig)
			if !ok {
				return
			}
			defer stop()
			cp := filepath.Join(runs, "copy")
			copyDir(orig, cp)
			ps := c.run(opt{}, "ps", "--runs-dir", runs)
			c.check(strings.Contains(ps.out, orig) && !strings.Contains(ps.out, cp), "ps: %s", lastLines(ps.out, 3))
			a := c.run(opt{limit: 20 * time.Second}, "attach", cp)
			c.check(a.code == 2 && strings.Contains(a.out, "copied"), "attach to the copy: exit %d: %s", a.code, lastLines(a.out, 2))
			c.check(syscall.Kill(pidOf(c, orig), 0) == nil, "the original training is gone")
			c.note("ps lists %d live run(s); attach to the copy: exit %d: %s", strings.Count(ps.out, "running"), a.code, c.brief(a.out))
		}},
	}
}

// pinCases is the "also seen" bound on pinned checkpoints: a client
// repeating save over the control socket.
func pinCases() []hcase {
	return []hcase{{name: "runfile/400 control-socket saves", expect: "at most 32 checkpoints pinned; the saves past that refused with a message; the training goes on", bound: 120 * time.Second, run: func(c *cx) {
		run := c.path("run")
		stop, ok := c.startDetached(run)
		if !ok {
			return
		}
		defer stop()
		refusedN := 0
		for i := 0; i < 400; i++ {
			ans, err := controlRequest(c, run, `{"op":"save"}`)
			if err != nil {
				c.fail("save %d: %v", i, err)
				break
			}
			if strings.Contains(ans, "pinned already") {
				refusedN++
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Second) // the last save's checkpoint
		pinned := 0
		for _, n := range dirEntries(filepath.Join(run, "checkpoints")) {
			if strings.HasSuffix(n, ".pinned") {
				pinned++
			}
		}
		c.check(pinned <= 32, "%d checkpoints pinned", pinned)
		ans, _ := controlRequest(c, run, `{"op":"info"}`)
		c.check(strings.Contains(ans, `"ok":true`), "the training no longer answers: %s", ans)
		c.note("%d pinned, %d of 400 saves refused", pinned, refusedN)
	}}}
}

func pidOf(c *cx, dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "control.json"))
	var pid int
	if i := strings.Index(string(b), `"pid":`); i >= 0 {
		fmt.Sscanf(string(b)[i+6:], "%d", &pid)
	}
	return pid
}

// listenSilent serves a Unix socket at path that accepts connections and
// never answers, until the case's deadline.
func listenSilent(c *cx, path string) error {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	go func() {
		var held []net.Conn
		for {
			conn, err := ln.Accept()
			if err != nil {
				break
			}
			held = append(held, conn)
		}
		for _, h := range held {
			h.Close()
		}
	}()
	go func() { time.Sleep(time.Until(c.deadline)); ln.Close() }()
	return nil
}
