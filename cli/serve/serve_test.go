package serve

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"

	"github.com/agenttrainer/agenttrainer/cli/cmdutil"
)

// testKey makes an ed25519 key pair and returns the public key's
// authorized_keys line.
func testKey(t *testing.T, name string) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := gossh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(gossh.MarshalAuthorizedKey(k))) + " " + name + "@test"
}

// TestServeSetup: refusals before listening, and the host key kept
// between starts.
func TestServeSetup(t *testing.T) {
	dir := t.TempDir()
	good := testKey(t, "k")
	write := func(name, data string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	keys := write("authorized_keys", good+"\n", 0o600)
	host := filepath.Join(dir, "conf", "agenttrainer", "host")
	serve := func(args ...string) (int, string) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a server that gets as far as listening stops at once
		var out, errb bytes.Buffer
		o, err := Parse(append([]string{"--ssh", "127.0.0.1:0"}, args...))
		if err == nil {
			err = Run(ctx, o, &out, &errb)
		}
		code := cmdutil.ExitCode(err, &out, &errb)
		return code, out.String() + errb.String()
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"missing authorized_keys", []string{"--authorized-keys", filepath.Join(dir, "nope"), "--host-key", host}, "does not exist: serve lets in only the public keys listed there"},
		{"no valid key", []string{"--authorized-keys", write("empty", "# nobody\n\nnot a key\n", 0o600), "--host-key", host}, "holds no usable public key"},
		{"keys with options", []string{"--authorized-keys", write("opts", `from="10.0.0.1" `+good+"\n", 0o600), "--host-key", host}, "which serve does not enforce: skipped"},
		{"writable by others", []string{"--authorized-keys", write("loose", good+"\n", 0o666), "--host-key", host}, "may be written by other users"},
		{"readable host key", []string{"--authorized-keys", keys, "--host-key", write("loosekey", "x", 0o644)}, "may be read by other users"},
		{"bad address", []string{"--ssh", "2222", "--authorized-keys", keys, "--host-key", host}, "want HOST:PORT"},
		{"bad override", []string{"--authorized-keys", keys, "--host-key", host, "ppo.learning_rat=1"}, "ppo.learning_rate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out := serve(tt.args...)
			if code != cmdutil.ExitConfig || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, want %d and %q in:\n%s", code, cmdutil.ExitConfig, tt.want, out)
			}
			if strings.Contains(out, "serving") {
				t.Errorf("it served:\n%s", out)
			}
		})
	}
	if _, err := os.Stat(host); err == nil {
		t.Fatal("a host key was made before the authorized keys were checked")
	}

	code, out := serve("--authorized-keys", keys, "--host-key", host)
	if code != cmdutil.ExitOK || !strings.Contains(out, "made a new host key "+host) {
		t.Fatalf("first start: exit %d:\n%s", code, out)
	}
	for path, want := range map[string]os.FileMode{host: 0o600, filepath.Dir(host): 0o700} {
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, mode %v, want %v", path, err, st.Mode().Perm(), want)
		}
	}
	first, _ := os.ReadFile(host)
	fp := regexp.MustCompile(`host key (SHA256:\S+)`).FindStringSubmatch(out)
	code, out = serve("--authorized-keys", keys, "--host-key", host)
	second, _ := os.ReadFile(host)
	if code != cmdutil.ExitOK || strings.Contains(out, "made a new host key") || !bytes.Equal(first, second) || fp == nil || !strings.Contains(out, fp[1]) {
		t.Errorf("second start did not keep the host key: exit %d:\n%s", code, out)
	}
	// An existing directory of the user's is left as it is.
	shared := filepath.Join(dir, "shared")
	os.Mkdir(shared, 0o755)
	if code, out := serve("--authorized-keys", keys, "--host-key", filepath.Join(shared, "key")); code != cmdutil.ExitOK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if st, _ := os.Stat(shared); st.Mode().Perm() != 0o755 {
		t.Errorf("the host key's directory became %v", st.Mode().Perm())
	}
}
