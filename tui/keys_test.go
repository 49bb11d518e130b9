package tui

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
)

// bindingsOf lists the key.Binding fields of a key map struct, those of
// embedded structs included, by field name.
func bindingsOf(km any) map[string]key.Binding {
	out := map[string]key.Binding{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := range v.NumField() {
			f, fv := v.Type().Field(i), v.Field(i)
			switch {
			case f.Type == reflect.TypeOf(key.Binding{}):
				out[f.Name] = fv.Interface().(key.Binding)
			case f.Anonymous && f.Type.Kind() == reflect.Struct:
				walk(fv)
			}
		}
	}
	if v := reflect.ValueOf(km); v.Kind() == reflect.Struct {
		walk(v)
	}
	if h, ok := km.(helpKeys); ok { // built on the spot: its help is its bindings
		for _, b := range h.short {
			out[b.Help().Desc] = b
		}
	}
	return out
}

// Every view of every registered screen: no key bound twice, none of the
// app's own keys bound (they would never arrive), and its full help shows
// every binding it has.
func TestKeyMaps(t *testing.T) {
	hs := newHarness(t, 120, 40)
	global := map[string]string{}
	for name, b := range bindingsOf(hs.m.keys) {
		for _, k := range b.Keys() {
			global[k] = name
		}
	}
	for _, id := range hs.m.order {
		maps := hs.m.screens[id].KeyMaps()
		if len(maps) == 0 {
			t.Errorf("screen %s declares no key map", id)
		}
		for _, km := range maps {
			where := string(id) + "/" + reflect.TypeOf(km).Name()
			bindings := bindingsOf(km)
			if len(bindings) == 0 {
				t.Errorf("%s: no bindings", where)
			}
			seen := map[string]string{}
			for name, b := range bindings {
				for _, k := range b.Keys() {
					if other, dup := seen[k]; dup {
						t.Errorf("%s binds %q twice: %s and %s", where, k, other, name)
					}
					seen[k] = name
					if g, ok := global[k]; ok && !isTextView(km) {
						t.Errorf("%s binds %q, the app's own key (%s)", where, k, g)
					}
				}
			}
			var shown []key.Binding
			for _, col := range km.FullHelp() {
				shown = append(shown, col...)
			}
			for name, b := range bindings {
				if !slices.ContainsFunc(shown, func(s key.Binding) bool { return slices.Equal(s.Keys(), b.Keys()) && s.Help().Key != "" }) {
					t.Errorf("%s: the help does not show %s (%s)", where, name, strings.Join(b.Keys(), "/"))
				}
				if b.Help().Key == "" || b.Help().Desc == "" {
					t.Errorf("%s: %s has no help text", where, name)
				}
			}
		}
	}
}

// isTextView reports whether a key map is a text field's or a question's,
// which take every key typed (the app's own among them).
func isTextView(km help.KeyMap) bool {
	switch km.(type) {
	case textKeys, confirmKeys:
		return true
	}
	return false
}

// Defect 17: ? shows every binding of the view on show and the app's own,
// scrolled when the terminal is short; esc closes it. The footer keeps q
// and ? at 80 columns and at 60.
func TestFullHelpScrolls(t *testing.T) {
	hs := newHarnessWith(t, 60, 20, func(_ *Options, f *fakeHost) { f.detachable = true })
	training(hs, 10)
	if v := hs.view(); !strings.Contains(v, "D detach") || !strings.Contains(v, "? help") || !strings.Contains(v, "q stop & quit") {
		t.Errorf("the footer loses the app's keys at 60×20:\n%s", v)
	}
	hs.press("?")
	v := hs.view()
	if !strings.Contains(v, "Keys: train") || !strings.Contains(v, "scroll") {
		t.Fatalf("no scrolling help at 60×20:\n%s", v)
	}
	seen := v
	for range 30 {
		hs.press("down")
		seen += hs.view()
	}
	for _, want := range []string{"p  pause", "x  stop run", "L     whole log", "screens", "q          quit", "D          detach", "?          help", "]  next run", "[  previous run"} {
		if !strings.Contains(seen, want) {
			t.Errorf("the help never shows %q:\n%s", want, seen)
		}
	}
	hs.press("esc")
	if strings.Contains(hs.view(), "Keys: train") {
		t.Error("esc does not close the help")
	}
	hs.w, hs.h = 80, 24
	hs.send(teaSize(80, 24))
	if v := hs.view(); !strings.Contains(v, "D detach") || !strings.Contains(v, "? help") {
		t.Errorf("the footer loses the app's keys at 80×24:\n%s", v)
	}
}
