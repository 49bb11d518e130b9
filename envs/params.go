package envs

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agenttrainer/agenttrainer/internal/anynum"
	"github.com/agenttrainer/agenttrainer/internal/suggest"
)

// Int reads an integer argument (any Go integer, or a float without a
// fractional part, as JSON and CSV files give them), or def when absent.
func (p Params) Int(key string, def int64) (int64, error) { return intArg(p, key, def) }

// Float reads a number argument, or def when absent.
func (p Params) Float(key string, def float64) (float64, error) { return floatArg(p, key, def) }

// Bool reads a true/false argument (also 1/0 and their strings), or def.
func (p Params) Bool(key string, def bool) (bool, error) { return boolArg(p, key, def) }

// String reads a string argument, or def when absent.
func (p Params) String(key, def string) (string, error) { return stringArg(p, key, def) }

// DescribeArg writes a bad argument value for an error message.
func DescribeArg(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(v), 'g', -1, 32)
	case json.Number:
		return v.String()
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprint(v)
}

// intArg reads an integer argument: any Go integer, or a float with no
// fractional part (JSON and pandas write 4.0 for 4).
func intArg(args Params, key string, def int64) (int64, error) {
	v, ok := args[key]
	if !ok {
		return def, nil
	}
	if n, ok := anynum.Int(v); ok {
		return n, nil
	}
	return 0, fmt.Errorf("%s must be an integer, got %s", key, DescribeArg(v))
}

// floatArg reads a number argument.
func floatArg(args Params, key string, def float64) (float64, error) {
	v, ok := args[key]
	if !ok {
		return def, nil
	}
	if x, ok := anynum.Float(v); ok {
		return x, nil
	}
	return 0, fmt.Errorf("%s must be a number, got %s", key, DescribeArg(v))
}

// boolArg reads a true/false argument; 1 and 0 are accepted too (CSV files
// written by pandas and others).
func boolArg(args Params, key string, def bool) (bool, error) {
	v, ok := args[key]
	if !ok {
		return def, nil
	}
	if b, ok := v.(bool); ok {
		return b, nil
	}
	if n, ok := anynum.Int(v); ok && (n == 0 || n == 1) {
		return n == 1, nil
	}
	return false, fmt.Errorf("%s must be true or false (or 1 or 0), got %s", key, DescribeArg(v))
}

// stringArg reads a string argument.
func stringArg(args Params, key, def string) (string, error) {
	v, ok := args[key]
	if !ok {
		return def, nil
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("%s must be a string, got %s", key, DescribeArg(v))
}

// TaskBookkeeping are dataset columns that describe a task without changing
// it (rLLM writes them); every environment accepts and ignores them.
var TaskBookkeeping = []string{"uid", "index", "question"}

// CheckArgs refuses arguments that an environment does not read (allowed
// lists the ones it does; none for an environment without arguments), so a
// misspelt env.args key is an error with a did-you-mean instead of being
// silently ignored. envs.Make puts the environment's id before the message.
func (p Params) CheckArgs(allowed ...string) error {
	var unknown []string
	for k := range p {
		if !slices.Contains(allowed, k) && !slices.Contains(TaskBookkeeping, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	takes := "takes no arguments"
	if len(allowed) > 0 {
		takes = "takes " + strings.Join(allowed, ", ")
	}
	quoted := make([]string, len(unknown))
	for i, k := range unknown {
		quoted[i] = strconv.Quote(k)
	}
	msg := fmt.Sprintf("unknown argument %s (it %s)", quoted[0], takes)
	if len(unknown) > 1 {
		msg = fmt.Sprintf("unknown arguments %s (it %s)", strings.Join(quoted, ", "), takes)
	} else if len(unknown[0]) > 3 { // shorter names are near everything
		msg += suggest.DidYouMean(suggest.Names(unknown[0], allowed))
	}
	return &ArgsError{Err: errors.New(msg)}
}
