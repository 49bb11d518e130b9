package hostile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// live is a training running in the background for a case to attack.
type live struct {
	p   *proc
	run string
	c   *cx
}

func startLive(c *cx, extra ...string) *live {
	run := c.path("run")
	args := append([]string{"train", "--quiet", "--run-dir", run, "env.id=CartPole-v1", "trainer.threads=1", "ppo.total_timesteps=1000000000", "trainer.save_freq=5"}, extra...)
	l := &live{p: c.start(opt{}, args...), run: run, c: c}
	ok := c.waitFor(40*time.Second, func() bool {
		if l.p.exited() {
			return true
		}
		iters, _ := metricsRows(run)
		_, err := os.Stat(filepath.Join(run, "control.json"))
		return len(iters) > 0 && err == nil
	})
	if !ok || l.p.exited() {
		c.fail("the training did not start: %s", lastLines(l.p.out.String(), 3))
		l.p.signal(syscall.SIGKILL)
		return nil
	}
	return l
}

func (l *live) dial() (net.Conn, error) {
	b, err := os.ReadFile(filepath.Join(l.run, "control.json"))
	if err != nil {
		return nil, err
	}
	var ep struct{ Socket string }
	if err := json.Unmarshal(b, &ep); err != nil {
		return nil, err
	}
	return net.DialTimeout("unix", ep.Socket, 5*time.Second)
}

// request sends one line and reads one line back. A refusal for too many
// connections is asked again: connections a case has just closed hold
// their slots until the server has read their end, and a query in that
// moment is refused though the training is fine.
func (l *live) request(line string) (string, error) {
	for {
		s, err := l.request1(line)
		if !strings.Contains(s, "too many connections") || time.Now().After(l.c.deadline) {
			return s, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (l *live) request1(line string) (string, error) {
	conn, err := l.dial()
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := conn.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	s, err := r.ReadString('\n')
	return strings.TrimSpace(s), err
}

// step is how many iterations the training has recorded, or -1 when
// its socket does not answer.
func (l *live) step() int64 {
	if s, err := l.request(`{"op":"info"}`); err != nil || !strings.Contains(s, `"ok":true`) {
		return -1
	}
	iters, _ := metricsRows(l.run)
	return int64(len(iters))
}

// stillTrains checks that the run answers and its step advances, then
// stops it over the socket and expects a clean end with no lost rows.
func (l *live) stillTrains() {
	c := l.c
	s0 := l.step()
	advanced := c.waitFor(20*time.Second, func() bool { s := l.step(); return s > s0 && s0 >= 0 })
	c.check(advanced, "the training stopped answering or advancing (step %d)", s0)
	l.stop()
}

func (l *live) stop() {
	c := l.c
	if resp, err := l.request(`{"op":"stop"}`); err != nil || !strings.Contains(resp, `"ok":true`) {
		c.fail("stop: %v %s", err, resp)
		l.p.signal(syscall.SIGTERM)
	}
	r := l.p.wait()
	c.check(r.code == 0 || r.code == 130, "exit %d after stop: %s", r.code, lastLines(r.out, 2))
	_, rows := metricsRows(l.run)
	sps := 0.0
	if len(rows) > 0 && rows[len(rows)-1] != nil {
		sps, _ = rows[len(rows)-1]["sps"].(float64)
	}
	c.checkRecords(l.run, 0)
	c.note("stopped: exit %d, %d rows, %.0f steps/s", r.code, len(rows), sps)
}

func controlCases() []hcase {
	type attack struct {
		name, expect string
		do           func(c *cx, l *live)
	}
	reply := func(line, want string) func(c *cx, l *live) {
		return func(c *cx, l *live) {
			s, err := l.request(line)
			if want == "" {
				c.note("answer %s %v", printable(s), err)
				return
			}
			c.check(strings.Contains(s, want), "answer %q (err %v), want %q", s, err, want)
			c.note("answer %s", printable(s))
		}
	}
	raw := func(data []byte) func(c *cx, l *live) {
		return func(c *cx, l *live) {
			conn, err := l.dial()
			if err != nil {
				c.fail("dial: %v", err)
				return
			}
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			conn.Write(data)
			buf := make([]byte, 512)
			n, _ := conn.Read(buf)
			conn.Close()
			c.note("answer %s", printable(string(buf[:n])))
		}
	}
	var as []attack
	for _, line := range []string{"garbage", "\x00\x01\x02", "\xff\xfe", "{", "[]", "null", "42", `{"op":1}`, `{"op":null}`, `{"op":"subscribe","buffer":-1}`, `{"op":"nosuch"}`, `{"op":""}`, `{}`, `{"op":"edit"}`, `{"op":"edit","key":"","value":""}`} {
		as = append(as, attack{name: "line " + printable(line), expect: "an error answer (or the line ignored), the training goes on", do: reply(line, "")})
	}
	for _, e := range [][2]string{
		{"ppo.update_epochs", "1000000000"}, {"ppo.update_epochs", "0"}, {"ppo.learning_rate", "1e308"}, {"ppo.learning_rate", "nan"},
		{"ppo.learning_rate", "-1"}, {"ppo.learning_rate", "\"x\""}, {"env.num_envs", "1000000"}, {"agent.hidden", "[100000]"},
		{"nosuch.key", "1"}, {"ppo.total_timesteps", "0"}, {"ppo.total_timesteps", "1e400"}, {"trainer.threads", "100000"},
		{"ppo.ent_coef", "inf"}, {"ppo.learning_rate", strings.Repeat("9", 60000)},
	} {
		e := e
		line, _ := json.Marshal(map[string]string{"op": "edit", "key": e[0], "value": e[1]})
		as = append(as, attack{name: "edit " + e[0] + "=" + printable(e[1]), expect: "refused with a message naming the key, the training goes on",
			do: reply(string(line), `"error"`)})
	}
	as = append(as,
		attack{name: "line of 70 KiB", expect: "the connection is dropped, the training goes on", do: raw([]byte(`{"op":"` + strings.Repeat("a", 70<<10) + "\"}\n"))},
		attack{name: "16 MiB without a newline", expect: "the connection is dropped at 64 KiB, the training goes on", do: raw([]byte(strings.Repeat("x", 16<<20)))},
		attack{name: "40 connections at once", expect: "the 33rd and later are refused with \"too many connections\", the training goes on", do: func(c *cx, l *live) {
			var conns []net.Conn
			refused := 0
			for i := 0; i < 40; i++ {
				conn, err := l.dial()
				if err != nil {
					c.fail("dial %d: %v", i, err)
					break
				}
				conns = append(conns, conn)
			}
			time.Sleep(500 * time.Millisecond)
			for _, conn := range conns[32:] {
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				b := make([]byte, 512)
				n, _ := conn.Read(b)
				if strings.Contains(string(b[:n]), "too many connections") {
					refused++
				}
			}
			for _, conn := range conns {
				conn.Close()
			}
			c.check(refused == len(conns)-32, "%d of %d extra connections refused", refused, len(conns)-32)
			c.note("%d refused", refused)
		}},
		attack{name: "30 subscribers that never read", expect: "RSS bounded, the training goes on", do: func(c *cx, l *live) {
			var conns []net.Conn
			for i := 0; i < 30; i++ {
				conn, err := l.dial()
				if err != nil {
					break
				}
				conn.Write([]byte(`{"op":"subscribe","buffer":1000000000}` + "\n"))
				conns = append(conns, conn)
			}
			time.Sleep(3 * time.Second)
			defer func() {
				for _, conn := range conns {
					conn.Close()
				}
			}()
			c.note("%d subscribers", len(conns))
		}},
		attack{name: "slow writer (a byte per 50 ms)", expect: "the training goes on", do: func(c *cx, l *live) {
			conn, err := l.dial()
			if err != nil {
				c.fail("dial: %v", err)
				return
			}
			defer conn.Close()
			for _, b := range []byte(`{"op":"info"`) {
				conn.Write([]byte{b})
				time.Sleep(50 * time.Millisecond)
			}
		}},
		attack{name: "connect and close 200 times", expect: "the training goes on", do: func(c *cx, l *live) {
			for i := 0; i < 200; i++ {
				if conn, err := l.dial(); err == nil {
					conn.Close()
				}
			}
		}},
		attack{name: "pause then garbage then resume", expect: "the training goes on", do: func(c *cx, l *live) {
			l.request(`{"op":"pause"}`)
			l.request("garbage")
			l.request(`{"op":"resume"}`)
		}},
		attack{name: "save 20 times", expect: "checkpoints written, the training goes on", do: func(c *cx, l *live) {
			for i := 0; i < 20; i++ {
				l.request(`{"op":"save"}`)
			}
		}},
		attack{name: "resume of the live run", expect: "train --resume refused naming the PID holding the run (exit 1 or 2)", do: func(c *cx, l *live) {
			r := c.run(opt{}, "train", "--quiet", "--resume", l.run)
			c.check(r.code == 1 || r.code == 2, "exit %d: %s", r.code, lastLines(r.out, 2))
			c.check(strings.Contains(r.out, fmt.Sprint(l.p.pid)), "no PID in %s", lastLines(r.out, 2))
			c.note("second trainer: exit %d: %s", r.code, firstErr(r.out))
		}},
	)
	var cs []hcase
	for _, a := range as {
		a := a
		cs = append(cs, hcase{
			name:   "control/" + a.name,
			expect: a.expect + "; stops cleanly on stop, no lost rows",
			fast:   a.name == "edit ppo.update_epochs=1000000000",
			rssKiB: 512 << 10,
			run: func(c *cx) {
				l := startLive(c)
				if l == nil {
					return
				}
				a.do(c, l)
				l.stillTrains()
			},
		})
	}
	// Stoppable at every depth: a huge epoch count, then SIGINT/SIGTERM/stop.
	for _, how := range []string{"SIGINT", "SIGTERM", "stop"} {
		how := how
		cs = append(cs, hcase{
			name:   "control/update_epochs=10000 num_envs=4096 then " + how,
			expect: "ends within 20 s of the " + how + " (exit 130 or 0), no lost rows",
			run: func(c *cx) {
				p := c.start(opt{}, "train", "--quiet", "--run-dir", c.path("run"), "ppo.update_epochs=10000", "env.num_envs=4096", "trainer.threads=1")
				time.Sleep(3 * time.Second)
				t0 := time.Now()
				switch how {
				case "SIGINT":
					p.signal(syscall.SIGINT)
				case "SIGTERM":
					p.signal(syscall.SIGTERM)
				default:
					l := &live{p: p, run: c.path("run"), c: c}
					c.waitFor(20*time.Second, func() bool { _, err := os.Stat(filepath.Join(l.run, "control.json")); return err == nil })
					l.request(`{"op":"stop"}`)
				}
				done := c.waitFor(20*time.Second, p.exited)
				c.check(done, "still running 20 s after %s", how)
				if !done {
					p.signal(syscall.SIGKILL)
				}
				r := p.wait()
				c.check(r.code == 130 || r.code == 0, "exit %d: %s", r.code, lastLines(r.out, 2))
				c.checkRecords(c.path("run"), 0)
				c.note("exit %d %.1fs after %s", r.code, time.Since(t0).Seconds(), how)
			},
		})
	}
	return cs
}
