package sweep

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agenttrainer/agenttrainer/trainer/config"
)

// The Slurm settings become lines of the job script (#SBATCH directives),
// which bash runs and sbatch parses: a newline in one would make the rest
// of it a command of the script. They are checked before anything is
// written, whether they come from the spec's [slurm] table or from flags.

var (
	partitionRE = regexp.MustCompile(`^[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*$`)
	// Slurm's time limits: minutes, minutes:seconds, hours:minutes:seconds,
	// days-hours, days-hours:minutes, days-hours:minutes:seconds.
	timeRE   = regexp.MustCompile(`^([0-9]{1,6}-[0-9]{1,4}(:[0-9]{1,2}){0,2}|[0-9]{1,9}(:[0-9]{1,2}){0,2})$`)
	optionRE = regexp.MustCompile(`^(--[A-Za-z][A-Za-z0-9-]*|-[A-Za-z])([= ].*)?$`)
)

// Options the sweep sets itself, or that would make sbatch run something
// other than the job script.
var reservedSbatch = map[string]string{
	"--wrap":  "would run its own command instead of the trials",
	"--array": "is set by the sweep (one task per trial)",
	"-a":      "(--array) is set by the sweep (one task per trial)",
}

const (
	maxSlurmField = 256
	maxSlurmCPUs  = 4096
	maxSlurmGPUs  = 1024
	maxSbatchOpts = 64
)

// checkSlurm checks every Slurm setting; name says how a field is written
// where it came from (slurm.partition in a spec, --partition on the command
// line).
func checkSlurm(s SlurmSpec, source string, name func(field string) string) error {
	fail := func(field, format string, a ...any) error {
		return &config.Error{Source: source, Key: name(field), Msg: fmt.Sprintf(format, a...)}
	}
	var errs []error
	if s.Partition != "" && (len(s.Partition) > maxSlurmField || !partitionRE.MatchString(s.Partition)) {
		errs = append(errs, fail("partition", "%q is not a partition name (letters, digits, _ . + -, several separated by commas)", s.Partition))
	}
	if s.Time != "" && !timeRE.MatchString(s.Time) && !strings.EqualFold(s.Time, "unlimited") && !strings.EqualFold(s.Time, "infinite") {
		errs = append(errs, fail("time", "%q is not a Slurm time limit (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)", s.Time))
	}
	if s.CPUs < 0 || s.CPUs > maxSlurmCPUs {
		errs = append(errs, fail("cpus", "must be between 0 and %d, got %d", maxSlurmCPUs, s.CPUs))
	}
	if s.GPUs < 0 || s.GPUs > maxSlurmGPUs {
		errs = append(errs, fail("gpus", "must be between 0 and %d, got %d", maxSlurmGPUs, s.GPUs))
	}
	if len(s.Extra) > maxSbatchOpts {
		errs = append(errs, fail("extra", "gives %d options; at most %d", len(s.Extra), maxSbatchOpts))
	}
	for _, e := range s.Extra {
		if err := checkSbatchOption(e); err != nil {
			errs = append(errs, fail("extra", "%v", err))
		}
	}
	return errors.Join(errs...)
}

// checkSbatchOption checks one more #SBATCH option: a single line of
// printable ASCII that is an option, without shell substitutions (sbatch
// refuses them in directives) and none of the options the sweep owns.
func checkSbatchOption(e string) error {
	if len(e) > maxSlurmField {
		return fmt.Errorf("the option %q… is %d bytes long, at most %d", e[:40], len(e), maxSlurmField)
	}
	for _, c := range []byte(e) {
		if c < 0x20 || c > 0x7e {
			return fmt.Errorf("the option %q holds a control or non-ASCII character; an #SBATCH option is one line of plain text", e)
		}
	}
	if strings.ContainsAny(e, "$`\\") {
		return fmt.Errorf("the option %q holds $, ` or \\: an #SBATCH line takes no shell substitutions", e)
	}
	m := optionRE.FindStringSubmatch(e)
	if m == nil {
		return fmt.Errorf("%q is not an sbatch option (give it as --name=value, e.g. --qos=short)", e)
	}
	if why, ok := reservedSbatch[m[1]]; ok {
		return fmt.Errorf("the option %s %s", m[1], why)
	}
	return nil
}

// specSlurmField names a [slurm] field of the spec.
func specSlurmField(field string) string { return "slurm." + field }

// flagSlurmField names the command-line flag that sets a field.
func flagSlurmField(field string) string {
	if field == "extra" {
		return "--sbatch"
	}
	return "--" + field
}

// CheckSlurmFlags checks the Slurm settings given as flags (--partition,
// --time, --cpus, --gpus, --sbatch).
func CheckSlurmFlags(s SlurmSpec) error { return checkSlurm(s, "command line", flagSlurmField) }

// checkScriptPath refuses a path that cannot be written into a job
// script's directive lines (the sweep directory, in #SBATCH --output).
func checkScriptPath(path, key string) error {
	for _, r := range path {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return &config.Error{Key: key, Msg: fmt.Sprintf("the sweep directory %q holds a control character; a Slurm job script cannot name it in an #SBATCH line", path)}
		}
	}
	return nil
}
