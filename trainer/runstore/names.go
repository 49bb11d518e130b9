package runstore

import (
	"errors"
	"fmt"
	"strings"
)

// MaxDirName bounds a name the program gives a directory of its own under
// the runs directory (a sweep's): most file systems take 255 bytes.
const MaxDirName = 128

// CheckDirName checks that name can be one directory under the runs
// directory: a single path element of letters, digits, '.', '_' and '-'
// that does not start with a dot (so neither "." nor ".." nor a hidden
// name, which the program's temporary files use), at most MaxDirName
// bytes. Every name the program joins to the runs directory from a file or
// a command line passes here first.
func CheckDirName(name string) error {
	switch {
	case name == "":
		return errors.New("is empty")
	case len(name) > MaxDirName:
		return fmt.Errorf("is %d bytes long, over the limit of %d", len(name), MaxDirName)
	case strings.HasPrefix(name, "."):
		return fmt.Errorf("%q starts with a dot: it would name %s", name, dotted(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q may use only letters, digits, '.', '_' and '-' (it names one directory under the runs directory)", name)
		}
	}
	return nil
}

func dotted(name string) string {
	switch strings.Trim(name, ".") {
	case "":
		if name == "." {
			return "the runs directory itself"
		}
		if name == ".." {
			return "the runs directory's parent"
		}
		return "a hidden directory made only of dots"
	}
	return "a hidden directory"
}
