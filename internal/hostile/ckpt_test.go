package hostile

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// corruption damages a checkpoint file (its path and bytes) in place.
type corruption struct {
	name string
	raw  func(b []byte) []byte // on the bytes
	st   func(s *st)           // on the parsed file
	fs   func(path string) error
	// evalUses: the damage is to what only a resume needs, so eval uses
	// this checkpoint (and resume still skips it).
	evalUses bool
}

func checkpointCorruptions() []corruption {
	var cs []corruption
	hlen := func(b []byte) int { return int(binary.LittleEndian.Uint64(b)) }
	for _, off := range []string{"0", "1", "4", "7", "8", "9", "16", "64", "header-1", "header", "header+1", "header+100", "half", "end-1", "end-4", "end-100"} {
		off := off
		cs = append(cs, corruption{name: "truncated at " + off, raw: func(b []byte) []byte {
			h := hlen(b) + 8
			n := map[string]int{"header-1": h - 1, "header": h, "header+1": h + 1, "header+100": h + 100, "half": len(b) / 2, "end-1": len(b) - 1, "end-4": len(b) - 4, "end-100": len(b) - 100}[off]
			if v, err := strconv.Atoi(off); err == nil {
				n = v
			}
			return b[:n]
		}})
	}
	for _, v := range []uint64{0, 1, 2, 1 << 63, math.MaxUint64, 100 << 20} {
		v := v
		cs = append(cs, corruption{name: fmt.Sprintf("header length %d", v), raw: func(b []byte) []byte {
			binary.LittleEndian.PutUint64(b, v)
			return b
		}})
	}
	cs = append(cs,
		corruption{name: "header length +1", raw: func(b []byte) []byte { binary.LittleEndian.PutUint64(b, uint64(hlen(b)+1)); return b }},
		corruption{name: "header length -1", raw: func(b []byte) []byte { binary.LittleEndian.PutUint64(b, uint64(hlen(b)-1)); return b }},
		corruption{name: "header random bytes", raw: func(b []byte) []byte {
			x := uint32(7)
			for i := 8; i < 8+hlen(b); i++ {
				x = x*1664525 + 1013904223
				b[i] = byte(x >> 24)
			}
			return b
		}},
		corruption{name: "header bit flips", raw: func(b []byte) []byte {
			for i := 8; i < 8+hlen(b); i += 97 {
				b[i] ^= 0x20
			}
			return b
		}},
		corruption{name: "data random bytes", raw: func(b []byte) []byte {
			for i := 8 + hlen(b); i < len(b); i += 13 {
				b[i] = 0xff
			}
			return b
		}},
	)
	for _, h := range []string{"null", "[]", "{}", `"x"`, "          ", `{"__metadata__":1}`, "{\"a\":\xff}"} {
		h := h
		cs = append(cs, corruption{name: "header " + printable(h), raw: func(b []byte) []byte {
			out := make([]byte, 8)
			binary.LittleEndian.PutUint64(out, uint64(len(h)))
			return append(append(out, h...), b[8+hlen(b):]...)
		}})
	}
	w := "actor.0.weight"
	tensorEdit := func(name string, f func(t map[string]any)) func(s *st) {
		return func(s *st) { f(s.tensor(name)) }
	}
	shapes := []string{`[-1,4]`, `[-1,-4]`, `[2305843009213693953,2]`, `[4611686018427387904,4611686018427387904]`, `[4,64]`, `[256]`, `[64,4,1]`, `[0,4]`, `[]`, `"x"`, `[64.5,4]`, `[1e30,4]`, `null`}
	for _, sh := range shapes {
		sh := sh
		cs = append(cs, corruption{name: "shape " + sh, st: tensorEdit(w, func(t map[string]any) {
			var v any
			d := json.NewDecoder(strings.NewReader(sh))
			d.UseNumber()
			d.Decode(&v)
			t["shape"] = v
		})})
	}
	for _, offs := range []string{`[8,0]`, `[0,1000000000000000000]`, `[-8,0]`, `[0,100000000]`, `[0,4]`, `[0,1024]`, `"x"`, `[1,1025]`, `[18446744073709551615,0]`} {
		offs := offs
		cs = append(cs, corruption{name: "data_offsets " + offs, st: tensorEdit(w, func(t map[string]any) {
			var v any
			d := json.NewDecoder(strings.NewReader(offs))
			d.UseNumber()
			d.Decode(&v)
			t["data_offsets"] = v
		})})
	}
	for _, dt := range []string{"F64", "I32", "F16", "BOGUS", ""} {
		dt := dt
		cs = append(cs, corruption{name: "dtype " + printable(dt), st: tensorEdit(w, func(t map[string]any) { t["dtype"] = dt })})
	}
	cs = append(cs,
		corruption{name: "tensor missing actor.0.weight", st: func(s *st) { delete(s.hdr, w) }},
		corruption{name: "tensor missing exp_avg_sq.critic.0.bias", st: func(s *st) { delete(s.hdr, "optimizer.exp_avg_sq.critic.0.bias") }},
		corruption{name: "tensor extra", st: func(s *st) {
			s.hdr["evil.weight"] = map[string]any{"dtype": "F32", "shape": []any{1}, "data_offsets": []any{0, 4}}
		}},
		corruption{name: "tensor entry is a string", st: func(s *st) { s.hdr[w] = "x" }},
	)
	vals := []struct {
		name string
		v    float32
	}{{"NaN", float32(math.NaN())}, {"+Inf", float32(math.Inf(1))}, {"-Inf", float32(math.Inf(-1))}, {"1e30", 1e30}, {"-3e38", -3e38}}
	for _, v := range vals {
		v := v
		for _, tn := range []string{"actor.0.weight", "critic.4.bias", "optimizer.exp_avg.actor.2.weight"} {
			tn := tn
			cs = append(cs, corruption{name: fmt.Sprintf("value %s in %s", v.name, tn), st: func(s *st) { s.setF32(tn, 3, v.v) }})
		}
	}
	for _, v := range []float32{-1, -1e-30, float32(math.NaN()), float32(math.Inf(1))} {
		v := v
		cs = append(cs, corruption{name: fmt.Sprintf("adam exp_avg_sq %g", v), st: func(s *st) { s.setF32("optimizer.exp_avg_sq.actor.0.weight", 0, v) }})
	}
	meta := func(key, val string, del bool) corruption {
		name := "meta " + key + "=" + printable(val)
		if del {
			name = "meta " + key + " missing"
		}
		// A checkpoint without a loop state (the key absent or empty)
		// still holds valid weights and normalizers, which are all that
		// eval reads (trainer.loadNewestValid with needState false): eval
		// uses it, resume skips it. A state that is there but malformed
		// ("{", "null", counters that disagree with the header) marks a
		// damaged file, and eval skips it too.
		evalUses := key == "state" && (del || val == "")
		return corruption{name: name, evalUses: evalUses, st: func(s *st) {
			if del {
				delete(s.meta, key)
			} else {
				s.meta[key] = val
			}
		}}
	}
	cs = append(cs,
		meta("state", "", false), meta("state", "{", false), meta("state", "null", false), meta("state", "[]", false),
		meta("state", `{"iter":-1}`, false), meta("state", "", true),
		corruption{name: "meta state iter -5", st: func(s *st) { s.meta["state"] = strings.Replace(s.meta["state"], `"iter":`, `"iter":-5,"x":`, 1) }},
		corruption{name: "meta state step 1e18", st: func(s *st) {
			s.meta["state"] = strings.Replace(s.meta["state"], `"step":`, `"step":1000000000000000000,"x":`, 1)
		}},
		corruption{name: "meta state rng garbage", st: func(s *st) {
			var m map[string]any
			if json.Unmarshal([]byte(s.meta["state"]), &m) == nil {
				for k := range m {
					if strings.Contains(strings.ToLower(k), "rng") || strings.Contains(strings.ToLower(k), "env") {
						m[k] = "garbage"
					}
				}
				b, _ := json.Marshal(m)
				s.meta["state"] = string(b)
			}
		}},
		meta("format", "agenttrainer/v999", false), meta("format", "", false), meta("format", "", true), meta("format", "safetensors-pytorch", false),
		meta("config", "garbage = [", false), meta("config", "", true), meta("config", "[env]\nnum_envs = 0\n", false),
		meta("step", "-1", false), meta("step", "x", false), meta("step", "99999999999999999999", false),
		meta("iter", "-3", false), meta("adam_step", "-5", false), meta("adam_step", "1e400", false),
		meta("env", "Acrobot-v1", false), meta("agent", "random", false), meta("agent", "", false),
		corruption{name: "metadata missing", st: func(s *st) { delete(s.hdr, "__metadata__") }},
		corruption{name: "empty file", raw: func(b []byte) []byte { return nil }},
		corruption{name: "replaced by a directory", fs: func(p string) error { os.Remove(p); return os.Mkdir(p, 0o755) }},
		corruption{name: "symlink to /dev/zero", fs: func(p string) error { os.Remove(p); return os.Symlink("/dev/zero", p) }},
		corruption{name: "symlink to /dev/urandom", fs: func(p string) error { os.Remove(p); return os.Symlink("/dev/urandom", p) }},
		corruption{name: "dangling symlink", fs: func(p string) error { os.Remove(p); return os.Symlink("/nonexistent/x", p) }},
	)
	if os.Geteuid() != 0 { // root reads a file of mode 000
		cs = append(cs, corruption{name: "unreadable (mode 000)", fs: func(p string) error { return os.Chmod(p, 0) }})
	}
	return cs
}

// latestCorruptions damage checkpoints/latest instead.
var latestBodies = []struct{ name, body string }{
	{"garbage", "\xff\xfe garbage"},
	{"path traversal", "../../../../../etc/passwd"},
	{"absolute path", "/etc/passwd"},
	{"missing file", "step-999999.safetensors"},
	{"empty", ""},
	{"directory name", "."},
	{"huge", strings.Repeat("x", 1<<20)},
}

func checkpointCases() []hcase {
	var cs []hcase
	for _, k := range checkpointCorruptions() {
		k := k
		for _, cmd := range []string{"eval", "resume"} {
			cmd := cmd
			expect := "falls back to the older checkpoint with a warning naming the newest (exit 0); metrics continue"
			if cmd == "eval" && k.evalUses {
				expect = "uses the newest checkpoint without a warning (exit 0): eval needs only its weights and normalizers"
			}
			cs = append(cs, hcase{
				name:   fmt.Sprintf("checkpoint/%s: %s", cmd, k.name),
				expect: expect,
				fast:   k.name == "shape [-1,4]" || k.name == "value NaN in actor.0.weight",
				run: func(c *cx) {
					run, ok := baseRun(c)
					if !ok {
						return
					}
					newest := base.ckpt[len(base.ckpt)-1]
					p := filepath.Join(run, "checkpoints", newest)
					if !corrupt(c, p, k) {
						return
					}
					var r res
					if cmd == "eval" {
						r = c.run(opt{}, "eval", run, "--episodes", "1")
					} else {
						r = c.run(opt{}, "train", "--quiet", "--resume", run, fmt.Sprintf("ppo.total_timesteps=%d", baseSteps+1024))
					}
					older := base.ckpt[len(base.ckpt)-2]
					if cmd == "eval" && k.evalUses {
						c.expectExit(r, 0, newest)
						c.check(!strings.Contains(r.out, "skipped"), "skipped a checkpoint eval can use: %s", lastLines(r.out, 2))
						c.note("exit %d: %s", r.code, lastLines(r.out, 1))
						return
					}
					c.expectExit(r, 0, "skipped checkpoint "+newest)
					if cmd == "eval" {
						c.check(strings.Contains(r.out, older), "eval did not use %s: %s", older, lastLines(r.out, 2))
					} else {
						c.checkRecords(run, baseSteps/512+2)
					}
					c.note("exit %d: %s", r.code, warning(r.out))
				},
			})
		}
	}
	for _, l := range latestBodies {
		l := l
		for _, cmd := range []string{"eval", "resume"} {
			cmd := cmd
			cs = append(cs, hcase{
				name:   fmt.Sprintf("checkpoint/%s: latest pointer %s", cmd, l.name),
				expect: "exit 0 using a valid checkpoint (the pointer is only a hint) or a clear error; no panic",
				run: func(c *cx) {
					run, ok := baseRun(c)
					if !ok {
						return
					}
					os.WriteFile(filepath.Join(run, "checkpoints", "latest"), []byte(l.body), 0o644)
					var r res
					if cmd == "eval" {
						r = c.run(opt{}, "eval", run, "--episodes", "1")
					} else {
						r = c.run(opt{}, "train", "--quiet", "--resume", run, fmt.Sprintf("ppo.total_timesteps=%d", baseSteps+1024))
					}
					c.check(r.code == 0 || r.code == 1, "exit %d: %s", r.code, lastLines(r.out, 2))
					c.check(!strings.Contains(r.out, "root:"), "read /etc/passwd")
					if cmd == "resume" && r.code == 0 {
						c.checkRecords(run, baseSteps/512+2)
					}
					c.note("exit %d: %s", r.code, warning(r.out))
				},
			})
		}
	}
	for _, cmd := range []string{"eval", "resume"} {
		cmd := cmd
		for _, how := range []string{"all truncated", "all NaN", "all deleted"} {
			how := how
			cs = append(cs, hcase{
				name:   fmt.Sprintf("checkpoint/%s: %s", cmd, how),
				expect: "exit 1 or 2 with a clear error saying no checkpoint is valid; no panic; metrics.jsonl kept",
				fast:   cmd == "resume" && how == "all truncated",
				run: func(c *cx) {
					run, ok := baseRun(c)
					if !ok {
						return
					}
					for _, n := range base.ckpt {
						p := filepath.Join(run, "checkpoints", n)
						switch how {
						case "all truncated":
							corrupt(c, p, corruption{raw: func(b []byte) []byte { return b[:100] }})
						case "all NaN":
							corrupt(c, p, corruption{st: func(s *st) { s.setF32("actor.0.weight", 0, float32(math.NaN())) }})
						default:
							os.Remove(p)
						}
					}
					var r res
					if cmd == "eval" {
						r = c.run(opt{}, "eval", run, "--episodes", "1")
					} else {
						r = c.run(opt{}, "train", "--quiet", "--resume", run, fmt.Sprintf("ppo.total_timesteps=%d", baseSteps+1024))
					}
					c.check(r.code == 1 || r.code == 2, "exit %d: %s", r.code, lastLines(r.out, 2))
					c.check(strings.Contains(r.out, "checkpoint"), "no word about checkpoints: %s", lastLines(r.out, 2))
					if iters, _ := metricsRows(run); len(iters) != baseSteps/512 {
						c.fail("metrics.jsonl has %d rows, had %d", len(iters), baseSteps/512)
					}
					c.note("exit %d: %s", r.code, firstErr(r.out))
				},
			})
		}
	}
	return cs
}

func warning(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "warning") || strings.HasPrefix(l, "agenttrainer:") {
			if len(l) > 170 {
				l = l[:170] + "…"
			}
			return l
		}
	}
	return lastLines(out, 1)
}

func corrupt(c *cx, p string, k corruption) bool {
	if k.fs != nil {
		if err := k.fs(p); err != nil {
			c.fail("corrupt: %v", err)
			return false
		}
		return true
	}
	b, err := os.ReadFile(p)
	if err != nil {
		c.fail("read: %v", err)
		return false
	}
	if k.raw != nil {
		b = k.raw(b)
	} else {
		s, err := parseST(b)
		if err != nil {
			c.fail("parse: %v", err)
			return false
		}
		k.st(s)
		b = s.bytes()
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		c.fail("write: %v", err)
		return false
	}
	return true
}
