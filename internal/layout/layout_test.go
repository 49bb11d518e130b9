package layout

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/agenttrainer/agenttrainer"

// pkg is one package as `go list` sees it.
type pkg struct {
	path    string // relative to the module: "trainer/config"; "." for the root
	doc     string
	imports []string // direct imports; ours relative like path
	deps    []string // transitive dependencies, standard library included
}

// list runs `go list` over the module with the given build tags. The cuda
// files are cgo files, which `go list` leaves out when cgo is off (as it is
// by default on a machine without a C compiler): it lists them with cgo on,
// which needs no compiler since nothing is built.
func list(t *testing.T, tags string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", tags, "-f",
		"{{.ImportPath}}\t{{.Doc}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", "./...")
	cmd.Dir = "../.."
	if tags == "cuda" {
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			t.Fatalf("go list line %q", line)
		}
		pkgs = append(pkgs, pkg{path: rel(f[0]), doc: f[1], imports: ours(strings.Fields(f[2])), deps: strings.Fields(f[3])})
	}
	return pkgs
}

func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

func ours(imports []string) []string {
	var out []string
	for _, p := range imports {
		if p == module || strings.HasPrefix(p, module+"/") {
			out = append(out, rel(p))
		}
	}
	return out
}

// under reports whether path is dir or inside it.
func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// The import rules: each names the packages it binds, what they must not
// import, and why.
var rules = []struct {
	name   string
	from   func(string) bool
	banned func(string) bool
}{
	{"the trainer never imports the app",
		func(p string) bool { return under(p, "trainer") }, func(i string) bool { return under(i, "tui") }},
	{"agents never import the trainer",
		func(p string) bool { return under(p, "agents") }, func(i string) bool { return under(i, "trainer") }},
	{"environments never import the trainer",
		func(p string) bool { return under(p, "envs") }, func(i string) bool { return under(i, "trainer") }},
	{"environments and agents never import the app",
		func(p string) bool { return under(p, "envs") || under(p, "agents") }, func(i string) bool { return under(i, "tui") }},
	{"gpu imports nothing of ours but its own parts",
		func(p string) bool { return under(p, "gpu") }, func(i string) bool { return !under(i, "gpu") }},
	{"the env core never imports its worlds (remote, tasks, classic control, …)",
		func(p string) bool { return p == "envs" }, func(i string) bool { return strings.HasPrefix(i, "envs/") }},
	{"the plotting knows nothing of runs: callers hand it numbers",
		func(p string) bool { return p == "internal/plot" }, func(i string) bool { return true }},
	{"no package imports a command-line package but the command line",
		func(p string) bool { return p != "." && !under(p, "cli") }, func(i string) bool { return under(i, "cli") }},
}

func TestImportRules(t *testing.T) {
	for _, tags := range []string{"", "cuda"} {
		for _, p := range list(t, tags) {
			for _, r := range rules {
				if !r.from(p.path) {
					continue
				}
				for _, i := range p.imports {
					if r.banned(i) {
						t.Errorf("tags %q: %s imports %s, but %s", tags, p.path, i, r.name)
					}
				}
			}
		}
	}
}

// levels are the folders from the bottom up: a package imports only from
// its own level or those below it, so a reader following a config from
// cli/train down to the device never climbs back up. internal/ holds only
// leaf helpers that anyone may import.
var levels = []struct {
	name    string
	folders []string
}{
	{"leaf helpers", []string{"internal"}},
	{"devices", []string{"gpu"}},
	{"environments and agents", []string{"envs", "agents"}},
	{"the trainer", []string{"trainer"}},
	{"features over runs", []string{"runs"}},
	{"the app", []string{"tui"}},
	{"hosts of the app and its runs", []string{"host"}},
	{"the command line", []string{"cli"}},
	{"programs", []string{".", "examples", "scripts"}},
}

// level returns the index in levels of the package at path.
func level(t *testing.T, path string) int {
	for i, l := range levels {
		for _, f := range l.folders {
			if path == f || under(path, f) {
				return i
			}
		}
	}
	t.Fatalf("%s is in no level: add its folder to levels in internal/layout", path)
	return -1
}

func TestLevels(t *testing.T) {
	for _, tags := range []string{"", "cuda"} {
		for _, p := range list(t, tags) {
			lp := level(t, p.path)
			for _, i := range p.imports {
				if li := level(t, i); li > lp {
					t.Errorf("tags %q: %s (%s) imports %s (%s), a level above it", tags, p.path, levels[lp].name, i, levels[li].name)
				}
			}
		}
	}
}

// Agents need only the env core's spaces: linking the network or process
// packages would mean they picked up the remote protocol or a dataset loader.
func TestAgentsLinkNoNetworkOrProcesses(t *testing.T) {
	for _, p := range list(t, "") {
		if !under(p.path, "agents") {
			continue
		}
		for _, d := range p.deps {
			switch d {
			case "net", "os/exec", "encoding/csv":
				t.Errorf("%s depends on %s", p.path, d)
			}
		}
	}
}

// Every package says in its doc comment what its one job is.
func TestEveryPackageHasADocComment(t *testing.T) {
	for _, p := range list(t, "") {
		if strings.TrimSpace(p.doc) == "" {
			t.Errorf("%s has no package doc comment", p.path)
		}
	}
}
