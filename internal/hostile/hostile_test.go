package hostile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	full      = flag.Bool("hostile.full", false, "run every case (scripts/hostile.sh); without it a fast subset runs")
	tableFile = flag.String("hostile.table", "", "write the table (case → expected → observed) to this file")
	only      = flag.String("hostile.only", "", "run only the cases whose name contains this")
)

// Bounds every case is held to unless it says otherwise.
const (
	defaultBound  = 60 * time.Second
	defaultRSSKiB = 1 << 20 // 1 GiB
)

var (
	bin  string // the agenttrainer binary, built once
	repo string // the module root
)

func TestMain(m *testing.M) {
	if os.Getenv(launcherEnv) != "" {
		os.Exit(launcher(os.Args[1:]))
	}
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "hostile-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	repo, _ = filepath.Abs("../..")
	bin = filepath.Join(dir, "agenttrainer")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "hostile: go build:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// hcase is one attack with its expected outcome.
type hcase struct {
	name   string
	expect string
	fast   bool          // part of the subset `go test ./...` runs
	bound  time.Duration // wall time of the whole case; 0: defaultBound
	rssKiB int64         // peak RSS of any process it runs; 0: defaultRSSKiB
	skip   func() string // a reason to skip, or ""
	run    func(c *cx)
}

// row is one line of the table.
type row struct {
	name, expect, observed string
	ok, skipped            bool
	panics, hangs          int
	rssKiB, rssBound       int64
	lost                   int
	dur                    time.Duration
}

// cx is a running case: its scratch directory and what it observed.
type cx struct {
	t        *testing.T
	dir      string
	deadline time.Time
	mu       sync.Mutex
	notes    []string
	fails    []string
	panics   int
	hangs    int
	lost     int
	rssKiB   int64
	rssBound int64
}

func (c *cx) note(format string, a ...any) {
	c.mu.Lock()
	c.notes = append(c.notes, fmt.Sprintf(format, a...))
	c.mu.Unlock()
}

func (c *cx) fail(format string, a ...any) {
	c.mu.Lock()
	c.fails = append(c.fails, fmt.Sprintf(format, a...))
	c.mu.Unlock()
}

// check records a failure unless ok.
func (c *cx) check(ok bool, format string, a ...any) bool {
	if !ok {
		c.fail(format, a...)
	}
	return ok
}

// path names a file in the case's directory.
func (c *cx) path(elem ...string) string { return filepath.Join(append([]string{c.dir}, elem...)...) }

func (c *cx) write(name string, data []byte) string {
	p := c.path(name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		c.fail("write %s: %v", name, err)
	}
	return p
}

// proc is a process a case started.
type proc struct {
	c      *cx
	cmd    *exec.Cmd
	pid    int // the process itself (cmd runs the launcher when it is the binary)
	out    *syncBuf
	stdout *syncBuf
	done   chan struct{}
	res    res
}

// Peak RSS is measured through a launcher. Linux's ru_maxrss of a child
// starts from the high-water mark of the memory it was forked from: a
// process that this test binary (hundreds of MiB after many cases) starts
// reports at least the test binary's peak, whatever it used itself. So the
// binary under test is started by a fresh copy of the test binary, small,
// that runs it, waits for it and reports its pid, exit status and rusage
// on a pipe.
const launcherEnv = "HOSTILE_LAUNCHER"

// launcher runs args (the launcher's side): it writes "pid N" when the
// process started, then "status W maxrss K" when it ended, to fd 3.
func launcher(args []string) int {
	report := os.NewFile(3, "report")
	syscall.CloseOnExec(3) // the process under test must not hold the pipe
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, launcherEnv+"=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(report, "error %v\n", err)
		return 1
	}
	fmt.Fprintf(report, "pid %d\n", cmd.Process.Pid)
	cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	var maxrss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxrss = ru.Maxrss
	}
	fmt.Fprintf(report, "status %d maxrss %d\n", uint32(ws), maxrss)
	return 0
}

// launched is what the launcher reported.
type launched struct {
	pid    int
	err    string
	ended  bool
	status syscall.WaitStatus
	maxrss int64
}

// readReport reads the launcher's lines; the pid comes on started once the
// process runs (or the launcher failed).
func readReport(r *os.File, started chan<- launched) launched {
	var l launched
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		var ws uint32
		switch {
		case strings.HasPrefix(line, "error "):
			l.err = strings.TrimPrefix(line, "error ")
			started <- l
		case strings.HasPrefix(line, "pid "):
			l.pid, _ = strconv.Atoi(strings.TrimPrefix(line, "pid "))
			started <- l
		default:
			if n, _ := fmt.Sscanf(line, "status %d maxrss %d", &ws, &l.maxrss); n == 2 {
				l.ended, l.status = true, syscall.WaitStatus(ws)
			}
		}
	}
	close(started)
	return l
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() < 4<<20 { // keep 4 MiB of output at most
		s.b.Write(p)
	}
	return len(p), nil
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// res is how a process ended.
type res struct {
	code   int // exit status; -1 when killed by a signal
	out    string
	stdout string
	hung   bool
	dur    time.Duration
	rssKiB int64
}

type opt struct {
	dir   string   // working directory; default: the case's
	env   []string // added to the environment
	stdin []byte
	limit time.Duration // bound on this process; default: what is left of the case
}

// start runs the binary with args.
func (c *cx) start(o opt, args ...string) *proc {
	return c.startCmd(o, bin, args...)
}

func (c *cx) startCmd(o opt, name string, args ...string) *proc {
	cmd := exec.Command(name, args...)
	var report *os.File // the launcher's pipe, when name is the binary
	if name == bin {
		self, err := os.Executable()
		if err != nil {
			c.fail("the test binary: %v", err)
			return failedStart()
		}
		r, w, err := os.Pipe()
		if err != nil {
			c.fail("pipe: %v", err)
			return failedStart()
		}
		cmd = exec.Command(self, append([]string{name}, args...)...)
		cmd.ExtraFiles = []*os.File{w}
		report = r
	}
	cmd.Dir = o.dir
	if cmd.Dir == "" {
		cmd.Dir = c.dir
	}
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.Env = append(cmd.Env, o.env...)
	if report != nil {
		cmd.Env = append(cmd.Env, launcherEnv+"=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &proc{c: c, cmd: cmd, out: &syncBuf{}, stdout: &syncBuf{}, done: make(chan struct{})}
	cmd.Stdout = multiWriter{p.stdout, p.out}
	cmd.Stderr = p.out
	if o.stdin != nil {
		cmd.Stdin = bytes.NewReader(o.stdin)
	}
	limit := o.limit
	if left := time.Until(c.deadline); limit == 0 || limit > left {
		limit = left
	}
	t0 := time.Now()
	err := cmd.Start()
	if report != nil {
		cmd.ExtraFiles[0].Close() // the launcher holds its own copy
	}
	if err != nil {
		if report != nil {
			report.Close()
		}
		c.fail("start %s: %v", name, err)
		p.res = res{code: -2}
		close(p.done)
		return p
	}
	p.pid = cmd.Process.Pid
	var ended chan launched
	if report != nil {
		started := make(chan launched, 1)
		ended = make(chan launched, 1)
		go func() { ended <- readReport(report, started); report.Close() }()
		// The launcher says the pid at once; when it says nothing (it
		// died), started closes.
		if l, ok := <-started; ok && l.err == "" {
			p.pid = l.pid
		} else if ok {
			c.fail("start %s: %s", name, l.err)
		}
	}
	go func() {
		timer := time.AfterFunc(limit, func() {
			p.res.hung = true
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the launcher's group holds the process
		})
		cmd.Wait()
		timer.Stop()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // children left behind (remote servers)
		p.res.dur = time.Since(t0)
		p.res.code = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			p.res.rssKiB = ru.Maxrss
		}
		if ended != nil {
			if l := <-ended; l.ended {
				p.res.code, p.res.rssKiB = l.status.ExitStatus(), l.maxrss
				if l.status.Signaled() {
					p.res.code = -1
				}
			} else {
				p.res.code = -1 // the launcher was killed with the process (its bound)
			}
		}
		p.res.out = p.out.String()
		p.res.stdout = p.stdout.String()
		c.account(name, p.res)
		close(p.done)
	}()
	return p
}

type multiWriter []interface{ Write([]byte) (int, error) }

func (m multiWriter) Write(p []byte) (int, error) {
	for _, w := range m {
		w.Write(p)
	}
	return len(p), nil
}

// account records panics, hangs and peak RSS of a finished process.
func (c *cx) account(name string, r res) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.Contains(r.out, "panic:") || strings.Contains(r.out, "fatal error:") || strings.Contains(r.out, "goroutine 1 [") {
		c.panics++
		c.fails = append(c.fails, "stack dump in output: "+excerpt(r.out, "panic:", "fatal error:"))
	}
	if r.hung {
		c.hangs++
		c.fails = append(c.fails, fmt.Sprintf("%s ran past its bound (%.0fs)", filepath.Base(name), r.dur.Seconds()))
	}
	if name == bin && r.rssKiB > c.rssKiB {
		c.rssKiB = r.rssKiB
	}
}

func excerpt(s string, marks ...string) string {
	for _, m := range marks {
		if i := strings.Index(s, m); i >= 0 {
			e := min(len(s), i+160)
			return strings.ReplaceAll(s[i:e], "\n", " | ")
		}
	}
	return ""
}

// wait waits for the process to end (it is killed at its bound).
func (p *proc) wait() res {
	<-p.done
	return p.res
}

func (p *proc) signal(s syscall.Signal) {
	if p.pid > 0 && !p.exited() {
		syscall.Kill(p.pid, s)
	}
}

// failedStart is a process that could not be started.
func failedStart() *proc {
	p := &proc{out: &syncBuf{}, stdout: &syncBuf{}, done: make(chan struct{}), res: res{code: -2}}
	close(p.done)
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// run runs the binary to its end.
func (c *cx) run(o opt, args ...string) res { return c.start(o, args...).wait() }

// expectExit checks the exit code and that the output holds each of wants.
func (c *cx) expectExit(r res, code int, wants ...string) bool {
	ok := c.check(r.code == code, "exit %d, want %d: %s", r.code, code, lastLines(r.out, 3))
	for _, w := range wants {
		ok = c.check(strings.Contains(r.out, w), "output lacks %q: %s", w, lastLines(r.out, 3)) && ok
	}
	return ok
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, " | ")
	if len(out) > 400 {
		out = out[:400] + "…"
	}
	return out
}

// firstErr is the first line of output that starts with "agenttrainer:".
func firstErr(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "agenttrainer:") {
			if len(l) > 160 {
				l = l[:160] + "…"
			}
			return l
		}
	}
	return lastLines(s, 1)
}

// waitFor polls cond until it holds or the time is up.
func (c *cx) waitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	if end.After(c.deadline) {
		end = c.deadline
	}
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}

// metricsRows reads the iterations of a run's metrics.jsonl.
func metricsRows(runDir string) ([]int, []map[string]any) {
	f, err := os.Open(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	var iters []int
	var rows []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			iters = append(iters, -1)
			rows = append(rows, nil)
			continue
		}
		it, _ := m["iter"].(float64)
		iters = append(iters, int(it))
		rows = append(rows, m)
	}
	return iters, rows
}

// latestIter is the iteration of a run's newest checkpoint (0: none).
func latestIter(runDir string) int {
	best := 0
	ents, _ := os.ReadDir(filepath.Join(runDir, "checkpoints"))
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "step-") || !strings.HasSuffix(name, ".safetensors") {
			continue
		}
		st, err := readST(filepath.Join(runDir, "checkpoints", name))
		if err != nil {
			continue
		}
		if it, err := strconv.Atoi(st.meta["iter"]); err == nil && it > best {
			best = it
		}
	}
	return best
}

// checkRecords checks that metrics.jsonl holds iterations 1…n in order
// with n at least the newest checkpoint's iteration, counting lost rows.
func (c *cx) checkRecords(runDir string, wantAtLeast int) int {
	iters, _ := metricsRows(runDir)
	ck := latestIter(runDir)
	if wantAtLeast < ck {
		wantAtLeast = ck
	}
	for i, it := range iters {
		if it != i+1 {
			c.fail("metrics.jsonl row %d is iteration %d", i+1, it)
			c.mu.Lock()
			c.lost++
			c.mu.Unlock()
			return len(iters)
		}
	}
	if len(iters) < wantAtLeast {
		c.mu.Lock()
		c.lost += wantAtLeast - len(iters)
		c.mu.Unlock()
		c.fail("metrics.jsonl has %d rows, the newest checkpoint is iteration %d", len(iters), wantAtLeast)
	}
	return len(iters)
}

// dirEntries lists a directory's names.
func dirEntries(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

var (
	tableMu sync.Mutex
	table   []row
)

// TestHostile runs every case (or the fast subset) and writes the table.
func TestHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("the hostile-input suite runs real trainings; skipped with -short")
	}
	cases := allCases()
	names := map[string]bool{}
	for _, hc := range cases {
		if names[hc.name] {
			t.Fatalf("two cases named %q", hc.name)
		}
		names[hc.name] = true
	}
	t0 := time.Now()
	t.Run("case", func(t *testing.T) {
		for _, hc := range cases {
			if !*full && !hc.fast {
				continue
			}
			if *only != "" && !strings.Contains(hc.name, *only) {
				continue
			}
			t.Run(hc.name, func(t *testing.T) {
				t.Parallel()
				runCase(t, hc)
			})
		}
	})
	report(t, time.Since(t0))
}

func runCase(t *testing.T, hc hcase) {
	bound := hc.bound
	if bound == 0 {
		bound = defaultBound
	}
	rb := hc.rssKiB
	if rb == 0 {
		rb = defaultRSSKiB
	}
	dir := t.TempDir()
	// A unix socket path must stay short; t.TempDir may be long.
	c := &cx{t: t, dir: dir, deadline: time.Now().Add(bound), rssBound: rb}
	r := row{name: hc.name, expect: hc.expect, rssBound: rb}
	if hc.skip != nil {
		if why := hc.skip(); why != "" {
			r.skipped, r.ok, r.observed = true, true, "skipped: "+why
			addRow(r)
			t.Skip(why)
		}
	}
	t0 := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				c.fail("the case itself panicked: %v", p)
			}
		}()
		hc.run(c)
	}()
	select {
	case <-done:
	case <-time.After(bound + 30*time.Second):
		c.fail("the case did not finish within its bound")
		c.mu.Lock()
		c.hangs++
		c.mu.Unlock()
	}
	r.dur = time.Since(t0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rssKiB > rb {
		c.fails = append(c.fails, fmt.Sprintf("peak RSS %d MiB over the bound of %d MiB", c.rssKiB>>10, rb>>10))
	}
	r.panics, r.hangs, r.lost, r.rssKiB = c.panics, c.hangs, c.lost, c.rssKiB
	r.ok = len(c.fails) == 0
	obs := c.notes
	if !r.ok {
		obs = append([]string{"FAIL: " + strings.Join(c.fails, "; ")}, obs...)
	}
	r.observed = strings.Join(obs, "; ")
	addRow(r)
	if !r.ok {
		t.Errorf("%s\n  expected: %s\n  observed: %s", hc.name, hc.expect, r.observed)
	}
}

// addRow records a finished case; it is also appended to the table file
// at once, so that a run cut short (go test's -timeout) keeps its rows.
func addRow(r row) {
	tableMu.Lock()
	defer tableMu.Unlock()
	table = append(table, r)
	if *tableFile == "" {
		return
	}
	if f, err := os.OpenFile(*tableFile+".partial", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprint(f, formatRow(r))
		f.Close()
	}
}

func formatRow(r row) string {
	status := "ok"
	switch {
	case r.skipped:
		status = "skip"
	case !r.ok:
		status = "FAIL"
	}
	return fmt.Sprintf("%-4s %-58s %6.1fs %5d MiB\n     expected: %s\n     observed: %s\n", status, r.name, r.dur.Seconds(), r.rssKiB>>10, r.expect, r.observed)
}

func report(t *testing.T, wall time.Duration) {
	tableMu.Lock()
	defer tableMu.Unlock()
	sort.Slice(table, func(i, j int) bool { return table[i].name < table[j].name })
	var b strings.Builder
	var pass, fail, skip, panics, hangs, lost, overRSS int
	var maxRSS int64
	maxName := ""
	for _, r := range table {
		switch {
		case r.skipped:
			skip++
		case r.ok:
			pass++
		default:
			fail++
		}
		panics += r.panics
		hangs += r.hangs
		lost += r.lost
		if r.rssKiB > r.rssBound {
			overRSS++
		}
		if r.rssKiB > maxRSS {
			maxRSS, maxName = r.rssKiB, r.name
		}
		b.WriteString(formatRow(r))
	}
	fmt.Fprintf(&b, "\nTOTAL %d cases: %d ok, %d failed, %d skipped; panics %d, hangs %d, peak RSS over bound %d (largest %d MiB: %s), lost records %d; wall %.0fs\n",
		len(table), pass, fail, skip, panics, hangs, overRSS, maxRSS>>10, maxName, lost, wall.Seconds())
	if *tableFile != "" {
		os.WriteFile(*tableFile, []byte(b.String()), 0o644)
		os.Remove(*tableFile + ".partial")
	}
	t.Logf("TOTAL %d cases: %d ok, %d failed, %d skipped; panics %d, hangs %d, peak RSS over bound %d, lost records %d",
		len(table), pass, fail, skip, panics, hangs, overRSS, lost)
}

// ctxTimeout is a context bounded by the case's deadline.
func (c *cx) ctx() (context.Context, context.CancelFunc) {
	return context.WithDeadline(context.Background(), c.deadline)
}
