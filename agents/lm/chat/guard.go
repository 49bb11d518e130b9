package chat

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// A chat template is code that comes with a model directory, and the Jinja
// engine has no bounds of its own: a loop over a growing list, a string
// doubled in a loop, or a macro that calls itself (which overflows Go's
// stack, a fatal error no recover catches) would hang or end the process.
// Compile therefore instruments the template's source before the engine
// parses it: a call to a guard is added after every for and set tag and
// every expression, and around every macro's body. The guard counts steps
// and the depth of macro calls and watches the clock and the heap, and
// stops the rendering with an error past any bound. The added tags print
// nothing and keep the whitespace rules (trim_blocks, lstrip_blocks, the
// "-" markers) as they were, so a rendering is unchanged.
//
// What the guard cannot see is a single operation that is huge by itself
// ('x' * 10**12, a filter's width of a trillion): the engine allocates it
// in one step.

// Bounds of one rendering. Real templates take a few steps per message
// and macro calls a few levels deep, in milliseconds.
const (
	maxSteps      = 1 << 20
	maxMacroDepth = 200
	maxRenderTime = 10 * time.Second
	// maxHeapGrowth bounds how much the live heap may grow while a
	// template renders: four times the bound on its output.
	maxHeapGrowth = 4 * maxOutput
)

// The names the guard's calls use; a template using them itself is refused.
const (
	guardStep  = "__at_guard_step"
	guardEnter = "__at_guard_enter"
	guardLeave = "__at_guard_leave"
	guardSink  = "__at_guard_sink"
)

// instrument returns source with the guard's calls added.
func instrument(source string) (string, error) {
	if strings.Contains(source, "__at_guard_") {
		return "", errors.New("chat template uses the name prefix __at_guard_, which is reserved")
	}
	var b strings.Builder
	b.Grow(len(source) + len(source)/4)
	inRaw := false
	for i := 0; i < len(source); {
		j := strings.IndexByte(source[i:], '{')
		if j < 0 || i+j+1 >= len(source) {
			b.WriteString(source[i:])
			break
		}
		j += i
		kind := source[j+1]
		if kind != '{' && kind != '%' && kind != '#' {
			b.WriteString(source[i : j+1])
			i = j + 1
			continue
		}
		b.WriteString(source[i:j])
		t, ok := scanTag(source, j)
		if !ok { // unterminated: the engine reports it
			b.WriteString(source[j:])
			break
		}
		i = t.end
		word := t.keyword()
		switch {
		case inRaw:
			b.WriteString(source[t.start:t.end])
			inRaw = !(kind == '%' && word == "endraw")
		case kind == '%' && word == "raw":
			b.WriteString(source[t.start:t.end])
			inRaw = true
		case kind == '%' && (word == "for" || word == "set" || word == "endset" || word == "macro"):
			// The tag without its right "-", then the guard's tag with it:
			// what the "-" or trim_blocks removed after the tag they now
			// remove after the guard's.
			call := guardStep
			if word == "macro" {
				call = guardEnter
			}
			b.WriteString(t.withoutRightTrim())
			fmt.Fprintf(&b, "{%% set %s = %s() %s%%}", guardSink, call, t.rightMark())
		case kind == '%' && word == "endmacro":
			// The guard's tag takes the left "-" (and lstrip_blocks' place).
			fmt.Fprintf(&b, "{%s set %s = %s() %%}", "%"+t.leftMark(), guardSink, guardLeave)
			b.WriteString(t.withoutLeftTrim())
		case kind == '{':
			// An expression tag: the guard's expression (it prints
			// nothing) takes its right "-".
			b.WriteString(t.withoutRightTrim())
			fmt.Fprintf(&b, "{{ %s() %s}}", guardStep, t.rightMark())
		default:
			b.WriteString(source[t.start:t.end])
		}
	}
	return b.String(), nil
}

// tag is one {{ }}, {% %} or {# #} of a template's source.
type tag struct {
	src                 string
	start, end          int // the whole tag
	open, close         int // its content
	trimLeft, trimRight bool
	opener, closer      string
}

// scanTag reads the tag starting at i as the engine's scanner does: an
// optional "-" after the opener, quoted strings skipped (except in
// comments), an optional "-" before the closer.
func scanTag(s string, i int) (tag, bool) {
	t := tag{src: s, start: i, opener: s[i : i+2]}
	kind := s[i+1]
	t.closer = map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[kind]
	k := i + 2
	if k < len(s) && s[k] == '-' {
		t.trimLeft = true
		k++
	}
	t.open = k
	for k < len(s) {
		c := s[k]
		if kind != '#' && (c == '\'' || c == '"') {
			k++
			for k < len(s) && s[k] != c {
				if s[k] == '\\' && k+1 < len(s) {
					k++
				}
				k++
			}
			if k < len(s) {
				k++
			}
			continue
		}
		if c == '-' && k+2 < len(s) && s[k+1] == t.closer[0] && s[k+2] == t.closer[1] {
			t.trimRight, t.close, t.end = true, k, k+3
			return t, true
		}
		if k+1 < len(s) && c == t.closer[0] && s[k+1] == t.closer[1] {
			t.close, t.end = k, k+2
			return t, true
		}
		k++
	}
	return t, false
}

// keyword is a statement's first word.
func (t tag) keyword() string {
	f := strings.Fields(t.src[t.open:t.close])
	if len(f) == 0 {
		return ""
	}
	w := f[0]
	if k := strings.IndexAny(w, "(=|"); k > 0 {
		w = w[:k]
	}
	return w
}

func (t tag) leftMark() string {
	if t.trimLeft {
		return "-"
	}
	return ""
}

func (t tag) rightMark() string {
	if t.trimRight {
		return "-"
	}
	return ""
}

// withoutRightTrim is the tag as written, less its right "-".
func (t tag) withoutRightTrim() string {
	return t.src[t.start:t.close] + t.closer
}

// withoutLeftTrim is the tag as written, less its left "-".
func (t tag) withoutLeftTrim() string {
	return t.opener + t.src[t.open:t.end]
}

// guard is one rendering's bounds.
type guard struct {
	steps, depth int
	deadline     time.Time
	// heapStart is the heap when the rendering began; past heapCheck, a
	// collection tells whether the growth is live or garbage.
	heapStart, heapCheck uint64
	sample               []metrics.Sample
}

const heapMetric = "/memory/classes/heap/objects:bytes"

func newGuard() *guard {
	g := &guard{deadline: time.Now().Add(maxRenderTime), sample: []metrics.Sample{{Name: heapMetric}}}
	g.heapStart = g.heap()
	g.heapCheck = g.heapStart + maxHeapGrowth
	return g
}

// heapOver reports whether the live heap grew past the bound. The heap
// read counts garbage too (a process holding a model's weights may let
// gigabytes of it pile up between collections), so a reading past the
// bound is checked again after a collection; the next check comes once
// half the bound has been allocated again.
func (g *guard) heapOver() bool {
	if g.heap() <= g.heapCheck {
		return false
	}
	runtime.GC()
	live := g.heap()
	if live > g.heapStart+maxHeapGrowth {
		return true
	}
	g.heapCheck = max(g.heapStart+maxHeapGrowth, live+maxHeapGrowth/2)
	return false
}

func (g *guard) heap() uint64 {
	metrics.Read(g.sample)
	if g.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return g.sample[0].Value.Uint64()
}

// step is one guarded step of the template: a loop's iteration, a set,
// an expression, a macro's entry or exit.
func (g *guard) step() error {
	g.steps++
	switch {
	case g.steps > maxSteps:
		return fmt.Errorf("ran more than %d steps (a loop without end?)", maxSteps)
	case time.Now().After(g.deadline):
		return fmt.Errorf("ran longer than %v (a loop without end?)", maxRenderTime)
	case g.heapOver():
		return fmt.Errorf("took more than %d MiB of memory while rendering (a string or list that keeps growing?)", maxHeapGrowth>>20)
	}
	return nil
}

// bind adds the guard's functions to a rendering's variables.
func (g *guard) bind(data map[string]jinja.Value) {
	empty := func(err error) (jinja.Value, error) {
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(""), nil
	}
	data[guardStep] = jinja.NewCallable(guardStep, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		return empty(g.step())
	})
	data[guardEnter] = jinja.NewCallable(guardEnter, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		g.depth++
		if g.depth > maxMacroDepth {
			return empty(fmt.Errorf("macros called each other more than %d deep (a macro that calls itself without end?)", maxMacroDepth))
		}
		return empty(g.step())
	})
	data[guardLeave] = jinja.NewCallable(guardLeave, func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
		g.depth--
		return empty(g.step())
	})
}
