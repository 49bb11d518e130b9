package runstore

import (
	"strings"
	"testing"
)

func TestCheckDirName(t *testing.T) {
	for _, c := range []struct {
		name, want string
	}{
		{"lr-sweep", ""},
		{"a.b_c-1", ""},
		{"v1.2", ""},
		{"", "empty"},
		{".", "runs directory itself"},
		{"..", "parent"},
		{"...", "only of dots"},
		{".hidden", "hidden directory"},
		{"a/b", "only letters"},
		{"../x", "dot"},
		{"a\\b", "only letters"},
		{"a\x00b", "only letters"},
		{"a\nb", "only letters"},
		{"a\x1b[31m", "only letters"},
		{"é", "only letters"},
		{strings.Repeat("n", MaxDirName+1), "over the limit"},
	} {
		err := CheckDirName(c.name)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want %q", c.name, err, c.want)
		case err != nil && strings.ContainsAny(err.Error(), "\n\x1b\x00"):
			t.Errorf("%q: the message carries a raw control character: %q", c.name, err)
		}
	}
}
