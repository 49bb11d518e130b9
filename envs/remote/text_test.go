package remote

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenttrainer/agenttrainer/envs"
	"github.com/agenttrainer/agenttrainer/envs/text"
)

// The remote text environment against the Python servers in ../../remote:
// the example (guess_server.py) and the misbehaving one.

func guessCommand(extra ...any) []any {
	return append([]any{"python3", filepath.Join("..", "..", "remote", "guess_server.py")}, extra...)
}

func misbehavingTextCommand(extra ...any) []any {
	return append([]any{"python3", filepath.Join("..", "..", "remote", "testdata", "misbehaving_text_server.py")}, extra...)
}

// textArgs are remote-text's env.args for a server command, with generous
// timeouts (the tests' servers answer; a busy machine must not fail them).
func textArgs(command []any, extra envs.Params) envs.Params {
	p := envs.Params{"command": command, "timeout_s": generousTimeout, "handshake_timeout_s": generousTimeout}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// openTestPool opens a TextPool for args, closed when the test ends.
func openTestPool(t *testing.T, args envs.Params) *TextPool {
	t.Helper()
	o, err := ParseTextArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	p, err := OpenTextPool(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

var directionRe = regexp.MustCompile(`^(Higher|Lower)\.$`)

// playGuess plays one GuessNumber episode by binary search and returns the
// number of guesses.
func playGuess(e text.Env, low, high int) (int, error) {
	obs, info, err := e.Reset(nil)
	if err != nil {
		return 0, err
	}
	if !strings.Contains(obs, fmt.Sprintf("from %d to %d", low, high)) || info["low"] != float64(low) || info["high"] != float64(high) {
		return 0, fmt.Errorf("reset said %q, info %v", obs, info)
	}
	for turn := 1; turn <= 20; turn++ {
		guess := (low + high) / 2
		obs, reward, done, info, err := e.Step(fmt.Sprintf("I think it is %d", guess))
		if err != nil {
			return 0, err
		}
		if info["guess"] != float64(guess) || info["guesses"] != float64(turn) {
			return 0, fmt.Errorf("turn %d: info %v", turn, info)
		}
		if done {
			if obs != "" || reward != 1 {
				return 0, fmt.Errorf("the episode ended with %q, reward %v", obs, reward)
			}
			return turn, nil
		}
		if reward != 0 || !directionRe.MatchString(obs) {
			return 0, fmt.Errorf("turn %d: %q, reward %v", turn, obs, reward)
		}
		if obs == "Higher." {
			low = guess + 1
		} else {
			high = guess - 1
		}
	}
	return 0, errors.New("no end after 20 guesses")
}

func TestRemoteTextGuessServer(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "playing the Python GuessNumber", func() {
		args := textArgs(guessCommand(), nil)
		e, err := text.Make(TextID, envs.Params{"secret": 37, "low": 1, "high": 100}, args)
		if err != nil {
			t.Fatal(err)
		}
		defer CloseTextPools()
		if l, ok := e.(text.TurnLimiter); !ok || l.MaxTurns() != 10 {
			t.Errorf("the environment's turn limit: %v (want the class's max_turns, 10)", e)
		}
		n, err := playGuess(e, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		if n > 7 {
			t.Errorf("binary search took %d guesses", n)
		}
		s, ok := e.(text.Succeeder)
		if !ok || !s.Succeeded() {
			t.Errorf("the episode's success: %T %v", e, ok)
		}
		if _, _, _, _, err := e.Step("50"); err == nil || !strings.Contains(err.Error(), "the episode is over") {
			t.Errorf("a step after done: %v", err)
		}
		// The same environment plays again; an answer without a number costs
		// a turn and says how to answer.
		if _, _, err := e.Reset(nil); err != nil {
			t.Fatal(err)
		}
		obs, r, done, info, err := e.Step("no idea")
		if err != nil || done || r != 0 || !strings.Contains(obs, "Answer with a whole number from 1 to 100") || info["valid"] != false {
			t.Errorf("a step without a number: %q %v %v %v %v", obs, r, done, info, err)
		}
		if s.Succeeded() {
			t.Error("an episode under way counts as succeeded")
		}

		// A task the environment refuses ends that episode only.
		bad, err := text.Make(TextID, envs.Params{"secret": 500}, args)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = bad.Reset(nil)
		if err == nil || !strings.Contains(err.Error(), "ValueError: the secret 500 is outside [1, 100]") || !strings.Contains(err.Error(), "server traceback") {
			t.Errorf("a bad task: %v", err)
		}
		if _, err := playGuess(e, 1, 100); err != nil {
			t.Errorf("after another episode's failure: %v", err)
		}
	})
}

// TestRemoteTextConcurrentWorkers plays 24 episodes at once on 3 workers:
// every one is won, the sessions spread over the workers, and none is left
// on the servers.
func TestRemoteTextConcurrentWorkers(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "24 episodes on 3 workers", func() {
		p := openTestPool(t, textArgs(guessCommand(), envs.Params{"workers": 3}))
		if p.Workers() != 3 || p.Name() != "GuessNumber" {
			t.Fatalf("%d workers serving %q", p.Workers(), p.Name())
		}
		const n = 24
		var wg sync.WaitGroup
		errs := make([]error, n)
		var peak sync.Map
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				e := p.NewEnv(envs.Params{"secret": 1 + i*4, "low": 1, "high": 100})
				defer closeEnv(e)
				if _, _, err := e.Reset(nil); err != nil {
					errs[i] = err
					return
				}
				peak.Store(i, fmt.Sprint(p.Sessions()))
				_, errs[i] = playGuess(e, 1, 100)
				if errs[i] == nil && !e.(text.Succeeder).Succeeded() {
					errs[i] = errors.New("not succeeded")
				}
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("episode %d: %v", i, err)
			}
		}
		spread := false
		peak.Range(func(_, v any) bool {
			f := strings.Fields(strings.Trim(v.(string), "[]"))
			busy := 0
			for _, x := range f {
				if k, _ := strconv.Atoi(x); k > 0 {
					busy++
				}
			}
			spread = spread || busy >= 2
			return true
		})
		if !spread {
			t.Error("the sessions never spread over two workers or more")
		}
		for w, k := range p.Sessions() {
			if k != 0 {
				t.Errorf("worker %d still holds %d sessions after every episode ended", w, k)
			}
		}
	})
}

// TestRemoteTextSessionsClosed checks that the sessions of episodes that
// did not end are given back: Close (and a dropped environment, collected)
// closes them on the server, whose limit would otherwise refuse more.
func TestRemoteTextSessionsClosed(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "closing sessions", func() {
		p := openTestPool(t, textArgs(guessCommand("--max-sessions", "2"), nil))
		task := envs.Params{"secret": 5}
		var open []text.Env
		for range 2 {
			e := p.NewEnv(task)
			if _, _, err := e.Reset(nil); err != nil {
				t.Fatal(err)
			}
			open = append(open, e)
		}
		third := p.NewEnv(task)
		if _, _, err := third.Reset(nil); err == nil || !strings.Contains(err.Error(), "holds 2 sessions, its limit") {
			t.Fatalf("a third session over the server's limit of 2: %v", err)
		}
		closeEnv(open[0])
		if _, _, err := third.Reset(nil); err != nil {
			t.Fatalf("after closing one: %v", err)
		}
		// A second Reset of the same environment replaces its session.
		if _, _, err := third.Reset(nil); err != nil {
			t.Fatalf("a second reset of one environment: %v", err)
		}
		if got := p.Sessions(); got[0] != 2 {
			t.Errorf("the server holds %v sessions, want 2", got)
		}
		if _, _, _, _, err := open[0].Step("3"); err == nil || !strings.Contains(err.Error(), "closed") {
			t.Errorf("a step of a closed environment: %v", err)
		}
		// The server closed the first session: a step it never saw again
		// would fail there, so check through a fresh one that the limit
		// counts one free place.
		closeEnv(open[1])
		e := p.NewEnv(task)
		if _, err := playGuess(e, 1, 100); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRemoteTextDroppedEnvironment: an environment dropped in
// mid-episode without Close gives its session back once it is collected.
func TestRemoteTextDroppedEnvironment(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "a dropped environment", func() {
		p := openTestPool(t, textArgs(guessCommand(), nil))
		func() {
			e := p.NewEnv(envs.Params{"secret": 5})
			if _, _, err := e.Reset(nil); err != nil {
				t.Fatal(err)
			}
		}()
		if got := p.Sessions()[0]; got != 1 {
			t.Fatalf("%d sessions after a reset", got)
		}
		// Cleanups run after a collection, on a goroutine of their own.
		deadline := time.Now().Add(time.Minute)
		for p.Sessions()[0] != 0 && time.Now().Before(deadline) {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		if got := p.Sessions()[0]; got != 0 {
			t.Fatalf("the dropped environment's session is still counted (%d)", got)
		}
		// The close rides on the next request, which the server answers.
		if _, err := playGuess(p.NewEnv(envs.Params{"secret": 9}), 1, 100); err != nil {
			t.Fatal(err)
		}
		c := p.workers[0].conn.text
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.closing) != 0 {
			t.Errorf("closes %v not sent", c.closing)
		}
	})
}

// TestRemoteTextMisbehaving runs the misbehaving text server's session
// failures: each ends its episode with a clear error, and the connection
// serves the next episode.
func TestRemoteTextMisbehaving(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "the misbehaving text server", func() {
		p := openTestPool(t, textArgs(misbehavingTextCommand(), envs.Params{"max_observation_bytes": 4096, "max_frame_bytes": 1 << 16}))
		for _, c := range []struct {
			action string
			want   []string // in the error; none: the step works
			check  func(obs string, info text.Info) error
		}{
			{"hello", nil, func(obs string, info text.Info) error {
				if obs != "you said: hello" || info["length"] != float64(5) {
					return fmt.Errorf("%q %v", obs, info)
				}
				return nil
			}},
			{"raise", []string{", text_step (request ", "the environment failed: ValueError: the verifier broke", "server traceback"}, nil},
			{"huge 5000", []string{"the observation is 5000 bytes, over the client's limit of 4096 (env.args.max_observation_bytes)"}, nil},
			{"raw-huge 5000", []string{"the observation is 5000 bytes, over the limit of 4096 (env.args.max_observation_bytes)"}, nil},
			{"raw-latin1", []string{"the observation is not UTF-8 text (byte 0xe9 at offset 3", "must encode observations as UTF-8"}, nil},
			{"info-not-dict", []string{"info must be a dict or None, got list"}, nil},
			{"raw-info-list", []string{`the reply's "info" is "[1,2]", want a JSON object`}, nil},
			{"raw-reward-str", []string{`"reward" is "\"1\"", want a finite number`}, nil},
			{"raw-no-done", []string{`"done" is absent, want true or false`}, nil},
			{"info-odd", nil, func(obs string, info text.Info) error {
				if fmt.Sprint(info) != "map[7:seven array:[1.5 2.5] nan:<nil> pair:[1 b] set:[3]]" {
					return fmt.Errorf("info %v", info)
				}
				return nil
			}},
			{"raw-stdout", nil, nil},
			{"caf\xe9 \xff", nil, func(obs string, _ text.Info) error {
				if obs != "you said: caf\uFFFD \uFFFD" {
					return fmt.Errorf("%q", obs)
				}
				return nil
			}},
		} {
			e := p.NewEnv(envs.Params{"case": c.action})
			obs, _, err := e.Reset(nil)
			if err != nil || !strings.HasPrefix(obs, `ready: {"case": "`) {
				t.Fatalf("%s: reset %q %v", c.action, obs, err)
			}
			obs, _, _, info, err := e.Step(c.action)
			switch {
			case c.want == nil && err != nil:
				t.Errorf("%s: %v", c.action, err)
			case c.want == nil && c.check != nil:
				if err := c.check(obs, info); err != nil {
					t.Errorf("%s: %v", c.action, err)
				}
			case c.want != nil:
				if err == nil {
					t.Errorf("%s: no error (%q)", c.action, obs)
					break
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: the error lacks %q:\n%v", c.action, w, err)
					}
				}
				if _, _, _, _, err := e.Step("again"); err == nil {
					t.Errorf("%s: a step after the session failed worked", c.action)
				}
			}
			closeEnv(e)
		}
		// Every failed session was closed on the server (those it did not
		// close itself with the next request): the last episode's reset
		// carried the closes, so none is left but a fresh one.
		e := p.NewEnv(envs.Params{})
		if _, _, err := e.Reset(nil); err != nil {
			t.Fatal(err)
		}
		if obs, r, done, _, err := e.Step("stop"); err != nil || !done || r != 1 || obs != "" || !e.(text.Succeeder).Succeeded() {
			t.Errorf("stop: %q %v %v %v", obs, r, done, err)
		}
		if got := p.Sessions(); got[0] != 0 {
			t.Errorf("the client counts %v sessions on the server, want 0", got)
		}
		for _, c := range []struct {
			fail, want string
		}{{"reset", "ValueError: reset cannot start this task"}, {"from_dict", "KeyError: 'the task has no question'"}} {
			e := p.NewEnv(envs.Params{"fail": c.fail})
			if _, _, err := e.Reset(nil); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("fail at %s: %v", c.fail, err)
			}
		}
	})
}

// TestRemoteTextWorkerFailures: a server that crashes, hangs or breaks the
// stream in mid-episode ends the episodes on it with an error naming what
// happened; without restart_workers the next episode on it fails too, with
// it a restarted worker serves it.
func TestRemoteTextWorkerFailures(t *testing.T) {
	requirePython(t)
	for _, c := range []struct {
		action string
		want   []string
		args   envs.Params
	}{
		{"crash", []string{"the server closed the connection", "exit status 3", "simulated crash"}, nil},
		{"hang", []string{"no progress waiting for the reply within 2s (env.args.timeout_s)"}, envs.Params{"timeout_s": hangTimeout.Seconds()}},
		{"raw-garbage", []string{"not a protocol frame", "something writes to its stdout"}, nil},
		{"raw-header", []string{"frame header is not a valid JSON object"}, nil},
		{"raw-info-deep", []string{"frame header is not a valid JSON object", "exceeded max depth"}, nil},
		{"raw-error", []string{"the server reported an error: RuntimeError: the server's own state is corrupt"}, nil},
		{"raw-wrong-id", []string{"carries request id 3, want 4", "version 4"}, nil},
		{"raw-huge 70000", []string{"frame announces a 70000-byte payload, over the limit of 65536"}, envs.Params{"max_frame_bytes": 1 << 16, "max_observation_bytes": 1 << 16}},
	} {
		t.Run(strings.Fields(c.action)[0], func(t *testing.T) {
			within(t, hangBound, c.action, func() {
				for _, restart := range []bool{false, true} {
					extra := envs.Params{"restart_workers": restart}
					for k, v := range c.args {
						extra[k] = v
					}
					var cmd []any
					if restart {
						cmd = misbehavingTextCommand("--once-file", filepath.Join(t.TempDir(), "once"))
					} else {
						cmd = misbehavingTextCommand()
					}
					args := textArgs(cmd, extra)
					for k, v := range c.args {
						args[k] = v
					}
					p := openTestPool(t, args)
					var notes []string
					p.SetLog(func(s string) { notes = append(notes, s) })
					victim, other := p.NewEnv(envs.Params{}), p.NewEnv(envs.Params{})
					for _, e := range []text.Env{victim, other} {
						if _, _, err := e.Reset(nil); err != nil {
							t.Fatal(err)
						}
					}
					_, _, _, _, err := victim.Step(c.action)
					if err == nil {
						t.Fatalf("restart %v: no error", restart)
					}
					for _, w := range c.want {
						if !strings.Contains(err.Error(), w) {
							t.Errorf("restart %v: the error lacks %q:\n%v", restart, w, err)
						}
					}
					if _, _, _, _, err := other.Step("hi"); err == nil || !strings.Contains(err.Error(), "lost with its worker") {
						t.Errorf("restart %v: the other episode on the worker: %v", restart, err)
					}
					next := p.NewEnv(envs.Params{})
					_, _, err = next.Reset(nil)
					if !restart {
						if err == nil || !strings.Contains(err.Error(), "env.args.restart_workers = true starts a failed worker again") {
							t.Errorf("without restarts, the next episode: %v", err)
						}
						continue
					}
					if err != nil {
						t.Fatalf("with restarts, the next episode: %v", err)
					}
					if obs, _, _, _, err := next.Step(c.action); err != nil || obs != "you said: "+c.action {
						t.Errorf("the restarted server: %q %v", obs, err)
					}
					if p.Restarts() != 1 || len(notes) != 1 || !strings.Contains(notes[0], "restarted it (restart 1 of at most 10") {
						t.Errorf("%d restarts, notes %q", p.Restarts(), notes)
					}
				}
			})
		})
	}
}

// TestRemoteTextRLLMStyle serves an environment written as rLLM writes
// them (a static from_dict, reset() without the task, a dict observation,
// None after the answer), not a TextEnv.
func TestRemoteTextRLLMStyle(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "an rLLM-style environment", func() {
		p := openTestPool(t, textArgs([]any{"python3", filepath.Join("..", "..", "remote", "testdata", "rllm_style_server.py")}, nil))
		if _, ok := p.NewEnv(nil).(text.Succeeder); ok || p.maxTurns != 0 {
			t.Errorf("an environment without succeeded() or max_turns: Succeeder %v, max_turns %d", ok, p.maxTurns)
		}
		for _, c := range []struct {
			answer string
			reward float64
		}{{"42", 1}, {"41", 0}} {
			e := p.NewEnv(envs.Params{"n": 21})
			obs, info, err := e.Reset(nil)
			if err != nil || obs != `{"question": "Double 21."}` || info["n"] != float64(21) {
				t.Fatalf("reset: %q %v %v", obs, info, err)
			}
			obs, r, done, info, err := e.Step(c.answer)
			if err != nil || obs != "" || r != c.reward || !done || info["right"] != (c.reward == 1) {
				t.Errorf("%s: %q %v %v %v %v", c.answer, obs, r, done, info, err)
			}
		}
	})
}

// TestRemoteTextWrongKind: a numeric client at a text server and a text
// client at a numeric server are refused with a message saying which
// env.id fits.
func TestRemoteTextWrongKind(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "wrong kinds", func() {
		_, err := NewRemoteVector(2, envs.Params{"command": guessCommand(), "handshake_timeout_s": generousTimeout})
		if err == nil || !strings.Contains(err.Error(), `this server serves a text environment (GuessNumber, protocol 4): use env.id = "remote-text"`) {
			t.Errorf("the numeric client at a text server: %v", err)
		}
		o, _ := ParseTextArgs(cartpoleServerArgs())
		_, err = OpenTextPool(o)
		if err == nil || !strings.Contains(err.Error(), `this server serves a numeric environment (observation vectors), not a text one: use env.id = "remote"`) {
			t.Errorf("the text client at a numeric server: %v", err)
		}
	})
}

// TestRemoteTextEnvServerAuth serves the example through agenttrainer
// env-server with a secret, and through the Python adapter's own TCP
// server: both authenticate and play.
func TestRemoteTextEnvServerAuth(t *testing.T) {
	requirePython(t)
	within(t, hangBound, "text over env-server and TCP", func() {
		dir := t.TempDir()
		secretFile := filepath.Join(dir, "secret")
		if err := os.WriteFile(secretFile, []byte(testSecret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		es, _ := startEnvServer(t, []byte(testSecret), "python3", filepath.Join("..", "..", "remote", "guess_server.py"))
		py, _ := startSecretPython(t, filepath.Join("..", "..", "remote", "guess_server.py"), "--secret-file", secretFile)
		for _, addr := range []string{es, py} {
			p := openTestPool(t, envs.Params{"address": addr, "secret_file": secretFile, "workers": 2, "handshake_timeout_s": generousTimeout})
			for i := range 3 {
				if _, err := playGuess(p.NewEnv(envs.Params{"secret": 10 + i}), 1, 100); err != nil {
					t.Errorf("at %s: %v", addr, err)
				}
			}
		}
		o, _ := ParseTextArgs(envs.Params{"address": es, "handshake_timeout_s": generousTimeout})
		if _, err := OpenTextPool(o); err == nil || !strings.Contains(err.Error(), "requires authentication") {
			t.Errorf("without the secret: %v", err)
		}
	})
}

// closeEnv closes a remote text environment (an io.Closer).
func closeEnv(e text.Env) { e.(interface{ Close() error }).Close() }
