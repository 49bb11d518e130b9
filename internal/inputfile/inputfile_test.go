package inputfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.toml")
	os.WriteFile(small, []byte("a = 1\n"), 0o644)
	big := filepath.Join(dir, "big.toml")
	os.WriteFile(big, make([]byte, 2048), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", link)
	tests := []struct {
		path, want string
	}{
		{small, ""},
		{big, "is 2048 bytes, more than the 1024 a config file may have"},
		{fifo, "is a named pipe; a config file must be a regular file"},
		{link, "is a device; a config file must be a regular file"},
		{dir, "is a directory"},
		{filepath.Join(dir, "missing"), "no such file"},
	}
	for _, tt := range tests {
		data, err := Read(tt.path, 1024, "config file")
		if tt.want == "" {
			if err != nil || string(data) != "a = 1\n" {
				t.Errorf("%s: %q, %v", tt.path, data, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.path, err, tt.want)
		}
	}
}
