package inputfile

import (
	"errors"
	"fmt"
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

func TestOpenChecksWhatItOpened(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	if _, _, err := Open(fifo, "meta file"); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("fifo: %v", err)
	}
	var nr *NotRegularError
	if _, err := Read(dir, 10, "meta file"); !errors.As(err, &nr) || !strings.Contains(err.Error(), "a directory") {
		t.Fatalf("directory: %v", err)
	}
	if data, err := ReadOptional(filepath.Join(dir, "missing"), 10, "meta file"); data != nil || err != nil {
		t.Fatalf("missing: %q %v", data, err)
	}
	var tb *TooBigError
	huge := filepath.Join(dir, "huge")
	f, _ := os.Create(huge)
	f.Truncate(1 << 40) // sparse: a terabyte that takes no space
	f.Close()
	if _, err := Read(huge, 1<<20, "meta file"); !errors.As(err, &tb) {
		t.Fatalf("huge: %v", err)
	}
}

func TestLines(t *testing.T) {
	type line struct {
		n        int
		text     string
		complete bool
	}
	long := strings.Repeat("x", 200<<10)
	tests := []struct {
		name, in string
		max      int
		want     []line
		err      string
	}{
		{"plain", "a\nbb\n", 10, []line{{1, "a", true}, {2, "bb", true}}, ""},
		{"torn last", "a\nbb", 10, []line{{1, "a", true}, {2, "bb", false}}, ""},
		{"empty lines", "\n\na\n", 10, []line{{1, "", true}, {2, "", true}, {3, "a", true}}, ""},
		{"empty", "", 10, nil, ""},
		{"at the bound", "abc\n", 3, []line{{1, "abc", true}}, ""},
		{"over the bound", "ok\nabcd\n", 3, []line{{1, "ok", true}}, "a.jsonl:2: a line longer than 3 bytes"},
		{"long line kept", long + "\nz\n", 300 << 10, []line{{1, long, true}, {2, "z", true}}, ""},
		{"long line refused", "a\n" + long + long, 300 << 10, []line{{1, "a", true}}, "a.jsonl:2: a line longer than 307200"},
		{"no newline at all", long, 1 << 20, []line{{1, long, false}}, ""},
	}
	for _, tt := range tests {
		var got []line
		err := Lines(strings.NewReader(tt.in), "a.jsonl", tt.max, func(n int, l []byte, complete bool) error {
			got = append(got, line{n, string(l), complete})
			return nil
		})
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: %d lines, want %d", tt.name, len(got), len(tt.want))
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: line %d = %d %.20q %v, want %d %.20q %v", tt.name, i, got[i].n, got[i].text, got[i].complete, tt.want[i].n, tt.want[i].text, tt.want[i].complete)
			}
		}
	}
}

func TestLinesSkippingLong(t *testing.T) {
	long := strings.Repeat("y", 300<<10)
	in := "a\n" + long + "\nb\n" + long
	var got []string
	var skipped []int
	err := LinesSkippingLong(strings.NewReader(in), "f", 1000, func(n int, l []byte, complete bool) error {
		got = append(got, fmt.Sprintf("%d:%s:%v", n, l, complete))
		return nil
	}, func(n int) error { skipped = append(skipped, n); return nil })
	if err != nil || strings.Join(got, " ") != "1:a:true 3:b:true" || fmt.Sprint(skipped) != "[2 4]" {
		t.Fatalf("%v: lines %v, skipped %v", err, got, skipped)
	}
}
